#include "watcher.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include <array>

#include "clock.h"
#include "errors.h"
#include "eventfd_orders.h"
#include "js_call.h"
#include "off_loop.h"

namespace evictd {

namespace {

// Large enough for memory.events, memory.oom_control, a pressure file or a usage counter.
constexpr size_t kProbeBufferSize = 4096;

}  // namespace

Napi::Function Watcher::DefineClass(Napi::Env env) {
  return ObjectWrap<Watcher>::DefineClass(env, "Watcher",
                                          {
                                              InstanceMethod("start", &Watcher::Start),
                                              InstanceMethod("stop", &Watcher::Stop),
                                              InstanceMethod("close", &Watcher::Close),
                                              InstanceMethod("ref", &Watcher::JsRef),
                                              InstanceMethod("unref", &Watcher::JsUnref),
                                              InstanceMethod("hasRef", &Watcher::HasRef),
                                              InstanceMethod("read", &Watcher::Read),
                                              InstanceMethod("setOrder", &Watcher::SetOrder),
                                              InstanceAccessor("closed", &Watcher::IsClosed, nullptr),
                                          });
}

Watcher::Watcher(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Watcher>(info) {}

Watcher::~Watcher() {
  // Finalized by the GC (only possible once closed: an open watcher holds a strong reference
  // to itself) or by environment teardown, when the source may still be open or closing.
  if (source_ != nullptr) {
    source_->owner = nullptr;
    BeginClose(source_);
    source_ = nullptr;
  }
  on_armed_.Reset();
}

Napi::Object Watcher::Create(Napi::Env env, AddonData* data, SourceKind kind, Fd poll_fd, const std::string& poll_path,
                             Fd probe_fd, const std::string& probe_path, Napi::Function callback, Fd inotify_fd,
                             const std::string& inotify_path) {
  auto* source = new Source();
  source->inotify_fd = std::move(inotify_fd);
  source->inotify_path = inotify_path;
  source->inotify_name = inotify_path.substr(inotify_path.find_last_of('/') + 1);
  source->data = data;
  source->kind = kind;
  source->poll_fd = std::move(poll_fd);
  source->poll_path = poll_path;
  source->probe_fd = std::move(probe_fd);
  source->probe_path = probe_path;
  uv_loop_t* loop = nullptr;
  napi_status status = napi_get_uv_event_loop(env, &loop);
  int err = status == napi_ok ? uv_poll_init(loop, &source->poll, source->poll_fd.get()) : UV_EINVAL;
  if (err != 0) {
    delete source;  // its Fds close
    throw SystemError(env, err, "uv_poll_init", poll_path);
  }
  source->poll.data = source;

  Napi::Object obj = data->watcher_constructor.New({});
  Watcher* watcher = Watcher::Unwrap(obj);
  watcher->source_ = source;
  source->owner = watcher;
  watcher->callback_ = Napi::Persistent(callback);
  watcher->async_context_ = std::make_unique<Napi::AsyncContext>(env, "evictd:KernelWatcher", obj);
  data->sources.insert(source);
  // An open watcher is a kernel resource like a socket: it stays alive until closed, whether
  // or not JS still holds it, so its callback can still run.
  watcher->Napi::ObjectWrap<Watcher>::Ref();
  return obj;
}

void Watcher::BeginClose(Source* source) {
  if (source->closing) return;
  source->closing = true;
  // Its fds go: an order on them goes first (a use already written is still delivered).
  if (source->order_id != 0 && source->data->eventfd_orders != nullptr)
    source->data->eventfd_orders->Withdraw(source->order_id);
  source->order_id = 0;
  if (source->polling) uv_poll_stop(&source->poll);
  source->polling = false;
  // A registration still being written owns control_fd on a threadpool thread: ArmDone issues
  // the uv_close when it comes back.
  if (source->arming) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&source->poll), &Watcher::OnClosed);
}

void Watcher::OnClosed(uv_handle_t* handle) {
  auto* source = static_cast<Source*>(handle->data);
  if (source->data->tearing_down) {
    // A worker (or the process) is going away: block here rather than queue more work.
    source->poll_fd.reset();
    source->probe_fd.reset();
    source->inotify_fd.reset();
    Finish(source);
    return;
  }
  // std::function wants a copyable callable: the move-only Fds travel behind a shared_ptr.
  auto fds = std::make_shared<std::array<Fd, 3>>();
  (*fds)[0] = std::move(source->poll_fd);
  (*fds)[1] = std::move(source->probe_fd);
  (*fds)[2] = std::move(source->inotify_fd);
  // close() of a PSI trigger or an inotify fd waits for a grace period: not on the JS thread.
  RunOffLoop(
      source->data->env,
      [fds]() {
        for (Fd& fd : *fds) fd.reset();
      },
      [source]() { Finish(source); });
}

void Watcher::Finish(Source* source) {
  Watcher* owner = source->owner;
  AddonData* data = source->data;
  data->sources.erase(source);
  delete source;
  if (owner != nullptr) {
    owner->source_ = nullptr;
    owner->Closed(data->tearing_down);
  }
  data->MaybeDone();
}

void Watcher::Arm(Source* source, Fd control_fd, const std::string& control_path, const std::string& line,
                  Napi::Function on_armed, Fd target_fd) {
  source->arming = true;
  source->control_fd = std::move(control_fd);
  source->target_fd = std::move(target_fd);
  source->control_path = control_path;
  source->arm_line = line;
  if (source->owner != nullptr && !on_armed.IsEmpty()) source->owner->on_armed_ = Napi::Persistent(on_armed);
  RunOffLoop(
      source->data->env,
      [source]() {
        // Only this thread touches the source until ArmDone: the loop thread sees `arming`.
        ssize_t n = WriteRetry(source->control_fd.get(), source->arm_line.data(), source->arm_line.size());
        if (n < 0)
          source->arm_error = errno;
        else if (static_cast<size_t>(n) != source->arm_line.size())
          source->arm_error = EIO;
        source->control_fd.reset();
        source->target_fd.reset();
      },
      [source]() { ArmDone(source); });
}

void Watcher::ArmDone(Source* source) {
  source->arming = false;
  if (source->closing) {
    uv_close(reinterpret_cast<uv_handle_t*>(&source->poll), &Watcher::OnClosed);
    return;
  }
  Watcher* owner = source->owner;
  if (source->arm_error != 0) {
    int err = source->arm_error;
    std::string path = source->control_path;
    BeginClose(source);
    if (owner != nullptr) owner->DispatchError(err, "write", path);
    return;
  }
  int err = UpdatePolling(source);
  if (err != 0) {
    std::string path = source->poll_path;
    BeginClose(source);
    if (owner != nullptr) owner->DispatchError(err, "uv_poll_start", path);
    return;
  }
  if (owner != nullptr && !owner->on_armed_.IsEmpty()) {
    Napi::FunctionReference on_armed = std::move(owner->on_armed_);
    Napi::HandleScope scope(owner->Env());
    owner->CallJs(on_armed, {});
  }
}

// Brings uv_poll in line with start()/stop(); a no-op while arming or closing.
int Watcher::UpdatePolling(Source* source) {
  if (source->arming || source->closing || source->want_poll == source->polling) return 0;
  if (!source->want_poll) {
    uv_poll_stop(&source->poll);
    source->polling = false;
    return 0;
  }
  int flags = source->kind == SourceKind::kPsi ? UV_PRIORITIZED : UV_READABLE;
  int err = uv_poll_start(&source->poll, flags, &Watcher::OnPoll);
  if (err == 0) source->polling = true;
  return err;
}

void Watcher::Closed(bool tearing_down) {
  closed_ = true;
  std::vector<Napi::FunctionReference> callbacks = std::move(close_callbacks_);
  close_callbacks_.clear();
  if (!tearing_down) {
    Napi::HandleScope scope(Env());
    for (auto& cb : callbacks) CallJs(cb, {});
  }
  callback_.Reset();
  // Closed: the GC may now collect the JS object.
  Napi::ObjectWrap<Watcher>::Unref();
}

void Watcher::CallJs(Napi::FunctionReference& fn, std::initializer_list<napi_value> args) {
  if (fn.IsEmpty()) return;
  evictd::CallJs(Env(), *async_context_, Value(), fn.Value(), args.size(), args.begin());
}

void Watcher::OnPoll(uv_poll_t* handle, int status, int /*events*/) {
  // Timestamp first: the latency we report is from the kernel's wakeup to this point.
  uint64_t now = MonotonicNs();
  auto* source = static_cast<Source*>(handle->data);
  Watcher* owner = source->owner;
  if (owner == nullptr || source->closing) return;

  if (status < 0) {
    // libuv reports POLLERR without POLLPRI as an error and has already stopped the handle.
    std::string path = source->poll_path;
    BeginClose(source);
    owner->DispatchError(status, "poll", path);
    return;
  }

  uint64_t count = 1;
  if (source->kind == SourceKind::kKernfs) {
    struct epoll_event ready[2];
    int n = EpollWaitRetry(source->poll_fd.get(), ready, 2, 0);
    if (n <= 0) return;  // nothing ready: a spurious wakeup
    bool changed = false;
    for (int i = 0; i < n; i++) {
      if (ready[i].data.fd != source->inotify_fd.get()) {
        changed = true;
        continue;
      }
      alignas(struct inotify_event) char events[1024];
      ssize_t len = ReadRetry(source->inotify_fd.get(), events, sizeof events);
      for (ssize_t off = 0; len > 0 && off < len;) {
        auto* ev = reinterpret_cast<struct inotify_event*>(events + off);
        bool ours = (ev->mask & IN_DELETE) && ev->len > 0 && source->inotify_name == ev->name;
        if (ours || (ev->mask & (IN_DELETE_SELF | IN_IGNORED))) {
          std::string path = source->inotify_path;
          BeginClose(source);
          owner->DispatchError(ENODEV, "inotify", path);
          return;
        }
        off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      }
    }
    if (!changed) return;
  }
  if (source->kind == SourceKind::kEventfd) {
    ssize_t n = ReadRetry(source->poll_fd.get(), &count, sizeof count);
    if (n < 0) {
      if (errno == EAGAIN) return;  // already consumed: spurious wakeup
      int err = errno;
      std::string path = source->poll_path;
      BeginClose(source);
      owner->DispatchError(err, "read", path);
      return;
    }
  }

  char buffer[kProbeBufferSize];
  ssize_t len = 0;
  if (source->probe_fd.valid()) {
    // For kernfs files this read also re-arms the notification; without it poll would report
    // the same change forever (a busy loop).
    len = PreadRetry(source->probe_fd.get(), buffer, sizeof buffer - 1, 0);
    if (len < 0) {
      // ENODEV: the cgroup was removed. The eventfd of a memcg event is signalled once on
      // removal too, so this read is what tells a removal from a real crossing.
      int err = errno;
      std::string path = source->probe_path;
      BeginClose(source);
      owner->DispatchError(err, "read", path);
      return;
    }
  }
  owner->DispatchEvent(count, now, buffer, static_cast<size_t>(len));
}

void Watcher::DispatchEvent(uint64_t count, uint64_t monotonic_ns, const char* text, size_t text_len) {
  Napi::Env env = Env();
  if (!CanRunJs(env)) return;  // a terminating worker: nobody left to tell
  Napi::HandleScope scope(env);
  CallJs(callback_,
         {
             env.Null(),
             Napi::Number::New(env, static_cast<double>(count)),
             Napi::BigInt::New(env, static_cast<uint64_t>(monotonic_ns)),
             source_ != nullptr && source_->probe_fd.valid() ? Napi::String::New(env, text, text_len).As<Napi::Value>()
                                                             : env.Undefined(),
         });
}

void Watcher::DispatchError(int err, const char* syscall, const std::string& path) {
  Napi::Env env = Env();
  if (!CanRunJs(env)) return;  // SystemError sets properties: that would abort while terminating
  Napi::HandleScope scope(env);
  Napi::Error error = SystemError(env, err, syscall, path);
  CallJs(callback_, {error.Value()});
}

}  // namespace evictd
