// One kernel notification source (an fd) polled with a uv_poll_t on the environment's own
// loop, and the JS object that controls it. Everything here runs on that loop's thread.
#pragma once

#include <napi.h>
#include <uv.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "addon_data.h"
#include "fd.h"

namespace evictd {

class Watcher;

// How an fd signals and how an event is consumed.
enum class SourceKind {
  // An eventfd registered through cgroup.event_control (memcg v1 threshold, pressure level,
  // OOM): readable when signalled; reading the 8-byte counter consumes (and counts) signals.
  kEventfd,
  // A PSI trigger fd: POLLPRI when it fires, re-armed when poll consumes the event. A removed
  // cgroup destroys the trigger and the fd reports POLLERR.
  kPsi,
  // A kernfs file (cgroup.events, memory.events): POLLPRI when its contents change, re-armed by
  // reading it. kernfs wakes no poller when the cgroup is removed, so the poll fd is an epoll
  // set holding the file (EPOLLPRI) and an inotify watch on the parent cgroup for the IN_DELETE
  // of this one. (Not IN_DELETE_SELF on the cgroup itself: our open files pin its dentry, and
  // the kernel sends DELETE_SELF only when the last dentry reference goes.)
  kKernfs,
};

// The kernel side of a watcher: its fds and its uv_poll_t. Allocated apart from the JS object
// because libuv closes handles asynchronously: the Source must outlive a Watcher finalized by
// the GC or by environment teardown until its close callback has run.
struct Source {
  uv_poll_t poll;
  AddonData* data = nullptr;
  Watcher* owner = nullptr;  // null once the JS object is gone
  SourceKind kind = SourceKind::kPsi;
  Fd poll_fd;
  Fd inotify_fd;             // kKernfs only: watches the parent directory
  std::string inotify_path;  // the cgroup directory
  std::string inotify_name;  // its name in the parent
  // Read at every event: its contents go to JS (usage, counters), and a read that fails with
  // ENODEV is how a removed cgroup shows (kernfs deactivates the files on rmdir).
  Fd probe_fd;
  std::string poll_path;
  std::string probe_path;
  // Registration through cgroup.event_control, done off the loop (see off_loop.h): until it
  // completes the source is `arming` and does not poll; close requests wait for it.
  bool arming = false;
  Fd control_fd;
  Fd target_fd;
  std::string control_path;
  std::string arm_line;
  int arm_error = 0;
  // kEventfd: the standing order placed on this line (eventfd_orders.h), 0 when none.
  uint64_t order_id = 0;
  bool want_poll = false;  // start() called (and not stop())
  bool polling = false;    // uv_poll_start in force
  bool closing = false;    // close requested; uv_close issued once not arming
};

class Watcher : public Napi::ObjectWrap<Watcher> {
 public:
  static Napi::Function DefineClass(Napi::Env env);

  // Wraps fds that are already armed in a new JS Watcher (not yet polling) and takes ownership
  // of them: on failure they are closed and a JS exception is thrown.
  static Napi::Object Create(Napi::Env env, AddonData* data, SourceKind kind, Fd poll_fd, const std::string& poll_path,
                             Fd probe_fd, const std::string& probe_path, Napi::Function callback, Fd inotify_fd = Fd(),
                             const std::string& inotify_path = "");

  explicit Watcher(const Napi::CallbackInfo& info);
  ~Watcher() override;

  // Idempotent; the source is freed (fds closed) in OnClosed, on a later loop turn.
  static void BeginClose(Source* source);

  // Writes `line` to `control_fd` off the loop, then closes it; the watcher polls (if started)
  // once the registration is in force and calls `on_armed`, or fails with the write's errno.
  static void Arm(Source* source, Fd control_fd, const std::string& control_path, const std::string& line,
                  Napi::Function on_armed, Fd target_fd);

  Source* source() const { return source_; }

 private:
  static void OnPoll(uv_poll_t* handle, int status, int events);
  static void OnClosed(uv_handle_t* handle);
  static void Finish(Source* source);
  static void ArmDone(Source* source);
  static int UpdatePolling(Source* source);

  void DispatchEvent(uint64_t count, uint64_t monotonic_ns, const char* text, size_t text_len);
  void DispatchError(int err, const char* syscall, const std::string& path);
  void CallJs(Napi::FunctionReference& fn, std::initializer_list<napi_value> args);
  void Closed(bool tearing_down);

  Napi::Value Start(const Napi::CallbackInfo& info);
  Napi::Value Stop(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value JsRef(const Napi::CallbackInfo& info);
  Napi::Value JsUnref(const Napi::CallbackInfo& info);
  Napi::Value HasRef(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value IsClosed(const Napi::CallbackInfo& info);
  Napi::Value SetOrder(const Napi::CallbackInfo& info);

  Source* source_ = nullptr;  // null once closed
  bool closed_ = false;
  Napi::FunctionReference callback_;
  Napi::FunctionReference on_armed_;
  std::vector<Napi::FunctionReference> close_callbacks_;
  std::unique_ptr<Napi::AsyncContext> async_context_;
};

}  // namespace evictd
