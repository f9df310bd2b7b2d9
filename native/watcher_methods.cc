// The methods JavaScript calls on a watcher (start, stop, close, ref, unref, read); they run on
// the JS thread of the environment that made it. The uv_poll machinery is in watcher.cc.
#include <errno.h>
#include <unistd.h>

#include "errors.h"
#include "watcher.h"

namespace evictd {

// Large enough for memory.events, memory.oom_control, a pressure file or a usage counter.
constexpr size_t kReadBufferSize = 4096;

Napi::Value Watcher::Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (source_ == nullptr || source_->closing) throw Napi::Error::New(env, "watcher is closed");
  source_->want_poll = true;
  int err = UpdatePolling(source_);
  if (err != 0) throw SystemError(env, err, "uv_poll_start", source_->poll_path);
  return env.Undefined();
}

Napi::Value Watcher::Stop(const Napi::CallbackInfo& info) {
  // Signals that arrive while stopped stay pending in the fd and are delivered on start().
  if (source_ != nullptr && !source_->closing) {
    source_->want_poll = false;
    UpdatePolling(source_);
  }
  return info.Env().Undefined();
}

Napi::Value Watcher::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Function cb = info.Length() > 0 && info[0].IsFunction() ? info[0].As<Napi::Function>() : Napi::Function();
  if (closed_) {
    if (!cb.IsEmpty()) cb.MakeCallback(Value(), {}, *async_context_);
    return env.Undefined();
  }
  if (!cb.IsEmpty()) close_callbacks_.push_back(Napi::Persistent(cb));
  if (source_ != nullptr) BeginClose(source_);
  return env.Undefined();
}

Napi::Value Watcher::JsRef(const Napi::CallbackInfo& info) {
  if (source_ != nullptr && !source_->closing) uv_ref(reinterpret_cast<uv_handle_t*>(&source_->poll));
  return info.Env().Undefined();
}

Napi::Value Watcher::JsUnref(const Napi::CallbackInfo& info) {
  if (source_ != nullptr && !source_->closing) uv_unref(reinterpret_cast<uv_handle_t*>(&source_->poll));
  return info.Env().Undefined();
}

Napi::Value Watcher::HasRef(const Napi::CallbackInfo& info) {
  bool has = source_ != nullptr && !source_->closing && uv_has_ref(reinterpret_cast<uv_handle_t*>(&source_->poll));
  return Napi::Boolean::New(info.Env(), has);
}

Napi::Value Watcher::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (source_ == nullptr || source_->closing) throw Napi::Error::New(env, "watcher is closed");
  if (!source_->probe_fd.valid()) return env.Undefined();
  char buffer[kReadBufferSize];
  ssize_t len = PreadRetry(source_->probe_fd.get(), buffer, sizeof buffer - 1, 0);
  if (len < 0) throw SystemError(env, errno, "read", source_->probe_path);
  return Napi::String::New(env, buffer, static_cast<size_t>(len));
}

Napi::Value Watcher::IsClosed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), closed_ || source_ == nullptr || source_->closing);
}

}  // namespace evictd
