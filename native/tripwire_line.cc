// The tripwire line's JS object: its methods run on the JS thread of the environment that made
// it; Crossed, RunLater and Fail run on that thread's loop, from the tripwire's handles.
#ifdef EVICTD_TRIPWIRE
#include "tripwire_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>

#include "clock.h"
#include "errors.h"
#include "js_call.h"
#include "order_engine.h"
#include "order_use.h"

namespace evictd {

namespace {

constexpr uint64_t kPageSize = 4096;
// The longest text: five counters of at most 20 digits each, with their names.
constexpr size_t kTextSize = 256;

// An event's text, in the "name value" lines of the other watchers' files (JS parses it only
// when asked). Formatted on the stack: nothing is allocated on the way to JS, where every cold
// cache line counts (measured under emulation).
size_t Format(const tripwire_event& e, char (&text)[kTextSize]) {
  int len =
      snprintf(text, sizeof text, "usage_bytes %llu\nline_bytes %llu\nfired_ns %llu\ncharge_began_ns %llu\nabove %d\n",
               static_cast<unsigned long long>(e.usage_pages * kPageSize),
               static_cast<unsigned long long>(e.line_pages * kPageSize), static_cast<unsigned long long>(e.ktime_ns),
               static_cast<unsigned long long>(e.began_ns), e.direction == TRIPWIRE_UP ? 1 : 0);
  return static_cast<size_t>(std::clamp(len, 0, static_cast<int>(sizeof text) - 1));
}

}  // namespace

Napi::Function TripwireLine::DefineClass(Napi::Env env) {
  return ObjectWrap<TripwireLine>::DefineClass(env, "TripwireLine",
                                               {
                                                   InstanceMethod("start", &TripwireLine::Start),
                                                   InstanceMethod("stop", &TripwireLine::Stop),
                                                   InstanceMethod("close", &TripwireLine::Close),
                                                   InstanceMethod("ref", &TripwireLine::JsRef),
                                                   InstanceMethod("unref", &TripwireLine::JsUnref),
                                                   InstanceMethod("hasRef", &TripwireLine::HasRef),
                                                   InstanceMethod("read", &TripwireLine::Read),
                                                   InstanceMethod("rearm", &TripwireLine::Rearm),
                                                   InstanceMethod("setOrder", &TripwireLine::SetOrder),
                                                   InstanceAccessor("closed", &TripwireLine::IsClosed, nullptr),
                                               });
}

TripwireLine::TripwireLine(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TripwireLine>(info) {}

TripwireLine::~TripwireLine() {
  // Finalized by the GC (only once ended: an open line holds a strong reference to itself) or
  // by environment teardown, which may finalize objects before the tripwire's teardown ran.
  if (tripwire_ != nullptr) tripwire_->Forget(this);
}

void TripwireLine::Prepare(const std::string& dir, Napi::Function callback) {
  dir_ = dir;
  callback_ = Napi::Persistent(callback);
  async_context_ = std::make_unique<Napi::AsyncContext>(Env(), "evictd:KernelWatcher", Value());
}

void TripwireLine::Attach(TripwireLineHost* tripwire, int slot) {
  tripwire_ = tripwire;
  slot_ = slot;
  closed_ = false;
  // An open line is a kernel resource like a socket: it stays alive until closed, whether or
  // not JS still holds it, so its callback can still run.
  Ref();
}

void TripwireLine::Crossed(const tripwire_event& e, uint64_t now_ns) {
  last_ = e;
  crossed_ = true;
  if (!started_) {
    // Held, as an eventfd holds signals while nobody polls it: start() delivers the count.
    held_++;
    return;
  }
  char text[kTextSize];
  Dispatch(1, now_ns, text, Format(e, text));
}

void TripwireLine::RunLater() {
  queued_ = false;
  if (closing_) {
    Finish(/*run_js=*/true);
    return;
  }
  if (!started_ || held_ == 0) return;  // stopped again meanwhile
  uint64_t count = held_;
  held_ = 0;
  char text[kTextSize];
  Dispatch(count, MonotonicNs(), text, Format(last_, text));
}

void TripwireLine::Dispatch(uint64_t count, uint64_t monotonic_ns, const char* text, size_t text_len) {
  Napi::Env env = Env();
  if (callback_.IsEmpty() || !CanRunJs(env)) return;  // a terminating worker: nobody left to tell
  Napi::HandleScope scope(env);
  napi_value args[] = {
      env.Null(),
      Napi::Number::New(env, static_cast<double>(count)),
      Napi::BigInt::New(env, monotonic_ns),
      Napi::String::New(env, text, text_len),
  };
  CallJs(env, *async_context_, Value(), callback_.Value(), 4, args);
}

void TripwireLine::Fail(int err, const char* syscall) {
  if (!open()) return;
  BeginClose();
  Napi::Env env = Env();
  if (!CanRunJs(env)) return;  // SystemError sets properties: that would abort while terminating
  Napi::HandleScope scope(env);
  napi_value args[] = {SystemError(env, err, syscall, dir_).Value()};
  CallJs(env, *async_context_, Value(), callback_.Value(), 1, args);
}

void TripwireLine::EndNow() {
  if (!closed_) Finish(/*run_js=*/false);
}

void TripwireLine::UpdateHold() {
  bool holds = tripwire_ != nullptr && started_ && refed_ && !closing_;
  if (holds == holds_) return;
  holds_ = holds;
  tripwire_->Hold(holds);
}

void TripwireLine::BeginClose() {
  if (closing_ || tripwire_ == nullptr) return;
  closing_ = true;
  UpdateHold();
  // The line stops firing now; its close callbacks run on the next turn, as a handle's would.
  tripwire_->Release(this);
  tripwire_->Later(this);
}

void TripwireLine::Finish(bool run_js) {
  closing_ = true;
  closed_ = true;
  tripwire_ = nullptr;
  slot_ = -1;
  holds_ = false;
  held_ = 0;
  std::vector<Napi::FunctionReference> callbacks = std::move(close_callbacks_);
  close_callbacks_.clear();
  if (run_js) {
    Napi::HandleScope scope(Env());
    for (auto& cb : callbacks) CallJs(Env(), *async_context_, Value(), cb.Value(), 0, nullptr);
  }
  callback_.Reset();
  order_callback_.Reset();
  order_generation_ = 0;
  // Ended: the GC may now collect the JS object.
  Unref();
}

Napi::Value TripwireLine::Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open()) throw Napi::Error::New(env, "watcher is closed");
  started_ = true;
  UpdateHold();
  if (held_ > 0) tripwire_->Later(this);
  return env.Undefined();
}

Napi::Value TripwireLine::Stop(const Napi::CallbackInfo& info) {
  if (open()) {
    started_ = false;
    UpdateHold();
  }
  return info.Env().Undefined();
}

Napi::Value TripwireLine::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Function cb = info.Length() > 0 && info[0].IsFunction() ? info[0].As<Napi::Function>() : Napi::Function();
  if (closed_) {
    if (!cb.IsEmpty() && async_context_ != nullptr) cb.MakeCallback(Value(), {}, *async_context_);
    if (!cb.IsEmpty() && async_context_ == nullptr) cb.Call(Value(), {});
    return env.Undefined();
  }
  if (!cb.IsEmpty()) close_callbacks_.push_back(Napi::Persistent(cb));
  BeginClose();
  return env.Undefined();
}

Napi::Value TripwireLine::JsRef(const Napi::CallbackInfo& info) {
  refed_ = true;
  UpdateHold();
  return info.Env().Undefined();
}

Napi::Value TripwireLine::JsUnref(const Napi::CallbackInfo& info) {
  refed_ = false;
  UpdateHold();
  return info.Env().Undefined();
}

Napi::Value TripwireLine::HasRef(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), open() && refed_);
}

// The last crossing's text ("" before the first).
Napi::Value TripwireLine::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open()) throw Napi::Error::New(env, "watcher is closed");
  if (!crossed_) return Napi::String::New(env, "");
  char text[kTextSize];
  return Napi::String::New(env, text, Format(last_, text));
}

// rearm(lineBytes, usageBytes): usageBytes -1 when the side is unknown.
Napi::Value TripwireLine::Rearm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    throw Napi::TypeError::New(env, "rearm(lineBytes, usageBytes)");
  }
  if (!open() || slot_ < 0) throw Napi::Error::New(env, "tripwire watcher is closed");
  tripwire_->Rearm(slot_, info[0].As<Napi::Number>().DoubleValue(), info[1].As<Napi::Number>().DoubleValue());
  return env.Undefined();
}

// setOrder(killPath, ttlMs, onFired, memoryDir, workingSetLineBytes) places the line's standing
// order: the first crossing within ttlMs, confirmed on the working set of memoryDir (the line's
// memory cgroup) read fresh at or past workingSetLineBytes (fresh_signal.h), writes "1" to
// killPath (a pod's cgroup.kill, opened now) from the order thread, then onFired(text, killPath)
// runs here (the latest onFired given, for every use). setOrder(null) withdraws it. Returns false
// when this load has no order thread; throws when killPath or the cgroup's files cannot be opened.
Napi::Value TripwireLine::SetOrder(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open() || slot_ < 0) throw Napi::Error::New(env, "tripwire watcher is closed");
  if (info.Length() >= 1 && info[0].IsNull()) {
    tripwire_->SetOrder(slot_, -1, "", 0, "", 0, "", nullptr);
    order_generation_ = 0;
    // The callback stays: a use written just before the withdrawal is still delivered.
    return Napi::Boolean::New(env, true);
  }
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsFunction() || !info[3].IsString() ||
      !info[4].IsNumber()) {
    throw Napi::TypeError::New(env,
                               "setOrder(killPath, ttlMs, onFired, memoryDir, workingSetLineBytes) or setOrder(null)");
  }
  std::string path = info[0].As<Napi::String>().Utf8Value();
  double ttl_ms = info[1].As<Napi::Number>().DoubleValue();
  if (!(ttl_ms > 0 && ttl_ms <= 60000)) throw Napi::RangeError::New(env, "setOrder: ttlMs must be in (0, 60000]");
  std::string memory_dir = info[3].As<Napi::String>().Utf8Value();
  double ws_line = info[4].As<Napi::Number>().DoubleValue();
  if (!(ws_line > 0 && ws_line < 9007199254740992.0)) {
    throw Napi::RangeError::New(env, "setOrder: workingSetLineBytes must be a positive number of bytes");
  }
  // Optional: the order's name in the use log (use_log.h).
  std::string tag = info.Length() >= 6 && info[5].IsString() ? info[5].As<Napi::String>().Utf8Value() : "";
  if (!UseLog::ValidTag(tag))
    throw Napi::RangeError::New(env, "setOrder: tag must be up to 160 of A-Z a-z 0-9 . _ : / -");
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError(env, errno, "open", path);
  int err = 0;
  int64_t generation =
      tripwire_->SetOrder(slot_, fd, path, ttl_ms, memory_dir, static_cast<uint64_t>(ws_line), tag, &err);
  if (generation == -2) throw SystemError(env, err, "open", memory_dir + "/memory.stat");
  if (generation < 0) {
    ::close(fd);
    return Napi::Boolean::New(env, false);
  }
  order_generation_ = static_cast<uint32_t>(generation);
  order_callback_ = Napi::Persistent(info[2].As<Napi::Function>());
  return Napi::Boolean::New(env, true);
}

// Every use reaches JS, even of an order replaced or withdrawn since: its kill is written, and
// the agent must stop and report that pod. The kill path names which order it was.
void TripwireLine::OrderFired(const OrderOutcome& outcome) {
  if (order_callback_.IsEmpty()) return;
  if (outcome.generation == order_generation_) order_generation_ = 0;
  Napi::Env env = Env();
  if (!CanRunJs(env)) return;
  char text[kOrderUseTextSize];
  size_t len = FormatOrderUse(outcome.use, text);
  Napi::HandleScope scope(env);
  napi_value args[] = {Napi::String::New(env, text, len), Napi::String::New(env, outcome.path)};
  CallJs(env, *async_context_, Value(), order_callback_.Value(), 2, args);
}

Napi::Value TripwireLine::IsClosed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), closed_ || closing_);
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
