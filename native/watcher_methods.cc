// The methods JavaScript calls on a watcher (start, stop, close, ref, unref, read); they run on
// the JS thread of the environment that made it. The uv_poll machinery is in watcher.cc.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "addon_data.h"
#include "clock.h"
#include "errors.h"
#include "eventfd_orders.h"
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

// setOrder(killPath, ttlMs, lineBytes, onFired, workingSetLineBytes) places this memcg v1
// threshold line's standing order (eventfd_orders.h): the first upward crossing within ttlMs,
// seen as the line's usage file at or past lineBytes, is confirmed on the kubelet's working set
// read fresh from the line's cgroup (at or past workingSetLineBytes), and then "1" is written to
// killPath (a pod's cgroup.kill); then onFired(text, killPath) runs here. setOrder(null)
// withdraws it. Returns false when the line is not an armed threshold; throws when killPath or
// the cgroup's files cannot be opened or the thread cannot start.
Napi::Value Watcher::SetOrder(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (source_ == nullptr || source_->closing) throw Napi::Error::New(env, "watcher is closed");
  AddonData* data = source_->data;
  if (source_->order_id != 0 && data->eventfd_orders != nullptr) data->eventfd_orders->Withdraw(source_->order_id);
  source_->order_id = 0;
  if (info.Length() >= 1 && info[0].IsNull()) return Napi::Boolean::New(env, true);
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsFunction() ||
      !info[4].IsNumber()) {
    throw Napi::TypeError::New(env,
                               "setOrder(killPath, ttlMs, lineBytes, onFired, workingSetLineBytes) or setOrder(null)");
  }
  // Only a threshold in force: its usage file says which way a wake-up went.
  if (source_->kind != SourceKind::kEventfd || source_->arming || !source_->probe_fd.valid())
    return Napi::Boolean::New(env, false);
  std::string path = info[0].As<Napi::String>().Utf8Value();
  double ttl_ms = info[1].As<Napi::Number>().DoubleValue();
  double line = info[2].As<Napi::Number>().DoubleValue();
  if (!(ttl_ms > 0 && ttl_ms <= 60000)) throw Napi::RangeError::New(env, "setOrder: ttlMs must be in (0, 60000]");
  double ws_line = info[4].As<Napi::Number>().DoubleValue();
  if (!(line > 0 && line < 9007199254740992.0))
    throw Napi::RangeError::New(env, "setOrder: lineBytes must be a positive number of bytes");
  if (!(ws_line > 0 && ws_line < 9007199254740992.0)) {
    throw Napi::RangeError::New(env, "setOrder: workingSetLineBytes must be a positive number of bytes");
  }
  // Optional: the order's name in the use log (use_log.h), letters, digits and . _ : / - only.
  std::string tag = info.Length() >= 6 && info[5].IsString() ? info[5].As<Napi::String>().Utf8Value() : "";
  if (!UseLog::ValidTag(tag))
    throw Napi::RangeError::New(env, "setOrder: tag must be up to 160 of A-Z a-z 0-9 . _ : / -");
  // Optional: the pod's directory in the memory hierarchy, whose statistics a refused kill reads
  // so the line's can fold (fold_nudge.h).
  std::string pod_memory_dir = info.Length() >= 7 && info[6].IsString() ? info[6].As<Napi::String>().Utf8Value() : "";
  // The line's cgroup: the directory of its usage file.
  std::string memory_dir = source_->probe_path.substr(0, source_->probe_path.rfind('/'));
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError(env, errno, "open", path);
  if (data->eventfd_orders == nullptr) {
    int err = 0;
    data->eventfd_orders = EventfdOrders::Start(data, &err);
    if (data->eventfd_orders == nullptr) {
      ::close(fd);
      throw SystemError(env, err, "epoll", path);
    }
  }
  EventfdOrders::Order order{source_->poll_fd.get(),
                             source_->probe_fd.get(),
                             static_cast<uint64_t>(line),
                             fd,
                             path,
                             MonotonicNs() + static_cast<uint64_t>(ttl_ms * 1e6),
                             memory_dir,
                             static_cast<uint64_t>(ws_line),
                             tag,
                             pod_memory_dir};
  uint64_t id = data->eventfd_orders->Place(order, info[3].As<Napi::Function>());
  if (id == 0) throw SystemError(env, errno, "setOrder", memory_dir);
  source_->order_id = id;
  return Napi::Boolean::New(env, true);
}

Napi::Value Watcher::IsClosed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), closed_ || source_ == nullptr || source_->closing);
}

}  // namespace evictd
