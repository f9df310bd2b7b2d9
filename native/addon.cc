// evictd's kernel-notification addon: mechanism only. Each open* function arms one kernel
// notification and returns a Watcher that reports "fired (count, CLOCK_MONOTONIC ns, file
// contents read at the event)" or "failed (error)" to its callback. It never decides anything.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "addon_data.h"
#include "clock.h"
#include "code_pages.h"
#include "errors.h"
#include "eventfd_orders.h"
#include "fd.h"
#include "kill_thread.h"
#include "sd_notify.h"
#include "tripwire.h"
#include "watcher.h"

namespace evictd {

namespace {

AddonData* Data(Napi::Env env) { return env.GetInstanceData<AddonData>(); }

std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsString()) {
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a string");
  }
  return info[i].As<Napi::String>().Utf8Value();
}

Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsFunction()) {
    throw Napi::TypeError::New(info.Env(), "callback must be a function");
  }
  return info[i].As<Napi::Function>();
}

Fd OpenOrThrow(Napi::Env env, const std::string& path, int flags) {
  Fd fd(open(path.c_str(), flags | O_CLOEXEC));
  if (!fd.valid()) throw SystemError(env, errno, "open", path);
  return fd;
}

void WriteOrThrow(Napi::Env env, int fd, const std::string& text, const std::string& path) {
  ssize_t n = WriteRetry(fd, text.data(), text.size());
  if (n < 0) throw SystemError(env, errno, "write", path);
  if (static_cast<size_t>(n) != text.size()) throw SystemError(env, EIO, "write", path);
}

// openMemcgEvent(controlPath, targetPath, args, probePath, callback, onArmed?)
// cgroup v1 memcg notification: an eventfd registered by writing
// "<eventfd> <fd of target> [args]" to cgroup.event_control. Targets: memory.usage_in_bytes or
// memory.memsw.usage_in_bytes with a byte threshold (fires on up and down crossings),
// memory.pressure_level with "low|medium|critical[,default|hierarchy|local]", and
// memory.oom_control with no args. See Documentation/admin-guide/cgroup-v1/memory.rst.
// The files are opened here (missing ones throw at once); the registration write runs off the
// loop, because a threshold registration waits for an RCU grace period, and `onArmed` runs
// once it is in force (a failed write reaches `callback` as an error instead).
Napi::Value OpenMemcgEvent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string control_path = StringArg(info, 0, "controlPath");
  std::string target_path = StringArg(info, 1, "targetPath");
  std::string args = StringArg(info, 2, "args");
  std::string probe_path = StringArg(info, 3, "probePath");
  Napi::Function callback = FunctionArg(info, 4);
  Napi::Function on_armed = info.Length() > 5 && info[5].IsFunction() ? info[5].As<Napi::Function>() : Napi::Function();

  Fd event_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (event_fd.get() < 0) throw SystemError(env, errno, "eventfd", control_path);
  Fd target_fd = OpenOrThrow(env, target_path, O_RDONLY);
  Fd control_fd = OpenOrThrow(env, control_path, O_WRONLY);
  Fd probe_fd = OpenOrThrow(env, probe_path, O_RDONLY);
  std::string line = std::to_string(event_fd.get()) + " " + std::to_string(target_fd.get());
  if (!args.empty()) line += " " + args;
  // The kernel resolves both fds during the write and keeps its own references: the target fd
  // can go once the write is done (the control fd is closed by the arming work). The
  // registration lives until the eventfd is closed, or the cgroup is removed (which signals the
  // eventfd once).
  Napi::Object watcher = Watcher::Create(env, Data(env), SourceKind::kEventfd, std::move(event_fd), control_path,
                                         std::move(probe_fd), probe_path, callback);
  Watcher::Arm(Watcher::Unwrap(watcher)->source(), std::move(control_fd), control_path, line, on_armed,
               std::move(target_fd));
  return watcher;
}

// openPsiTrigger(path, trigger, callback)
// A PSI trigger "some|full <stall us> <window us>" written to a pressure file (a cgroup2
// memory.pressure, or /proc/pressure/memory); POLLPRI when the stall in a window passes the
// threshold. The caller applies the unprivileged-window rule; the kernel's EINVAL is reported
// as is. See Documentation/accounting/psi.rst.
Napi::Value OpenPsiTrigger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = StringArg(info, 0, "path");
  std::string trigger = StringArg(info, 1, "trigger");
  Napi::Function callback = FunctionArg(info, 2);
  Fd fd = OpenOrThrow(env, path, O_RDWR | O_NONBLOCK);
  // The kernel parses the trigger with sscanf and wants the terminating NUL (psi.rst example).
  std::string with_nul = trigger;
  with_nul.push_back('\0');
  // Polling a pressure fd without a trigger reports POLLERR forever: only poll after this
  // write has succeeded.
  WriteOrThrow(env, fd.get(), with_nul, path);
  // The same fd doubles as the probe: reading it gives the averages and totals at the event,
  // and fails with ENODEV once the cgroup is removed.
  Fd probe_fd(fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!probe_fd.valid()) throw SystemError(env, errno, "dup", path);
  return Watcher::Create(env, Data(env), SourceKind::kPsi, std::move(fd), path, std::move(probe_fd), path, callback);
}

// openKernfsFile(path, callback)
// cgroup2 cgroup.events or memory.events: kernfs signals POLLPRI (with POLLERR) when the file's
// contents change. Each read re-arms it, and the contents read at the event carry the counters.
// kernfs does not wake pollers when the cgroup is removed, so an inotify watch on the parent
// directory (IN_DELETE of this cgroup, from the rmdir) joins the file in one epoll set, and
// libuv polls that set.
Napi::Value OpenKernfsFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = StringArg(info, 0, "path");
  Napi::Function callback = FunctionArg(info, 1);
  std::string dir = path.substr(0, path.find_last_of('/'));
  std::string parent = dir.substr(0, dir.find_last_of('/'));
  if (dir.empty() || parent.empty()) throw SystemError(env, EINVAL, "open", path);
  Fd file_fd = OpenOrThrow(env, path, O_RDONLY | O_NONBLOCK);
  char buffer[256];
  if (PreadRetry(file_fd.get(), buffer, sizeof buffer, 0) < 0) throw SystemError(env, errno, "read", path);
  Fd inotify_fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (inotify_fd.get() < 0) throw SystemError(env, errno, "inotify_init1", dir);
  if (inotify_add_watch(inotify_fd.get(), parent.c_str(), IN_DELETE | IN_DELETE_SELF | IN_ONLYDIR) < 0) {
    throw SystemError(env, errno, "inotify_add_watch", parent);
  }
  Fd epoll_fd(epoll_create1(EPOLL_CLOEXEC));
  if (epoll_fd.get() < 0) throw SystemError(env, errno, "epoll_create1", path);
  struct epoll_event ev = {};
  ev.events = EPOLLPRI;
  ev.data.fd = file_fd.get();
  if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, file_fd.get(), &ev) < 0)
    throw SystemError(env, errno, "epoll_ctl", path);
  ev.events = EPOLLIN;
  ev.data.fd = inotify_fd.get();
  if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, inotify_fd.get(), &ev) < 0)
    throw SystemError(env, errno, "epoll_ctl", dir);
  // Removed between the open and the watch: the rmdir event is gone, but the read fails now.
  if (PreadRetry(file_fd.get(), buffer, sizeof buffer, 0) < 0) throw SystemError(env, errno, "read", path);
  return Watcher::Create(env, Data(env), SourceKind::kKernfs, std::move(epoll_fd), path, std::move(file_fd), path,
                         callback, std::move(inotify_fd), dir);
}

// monotonicNs(): CLOCK_MONOTONIC now, the clock of event timestamps.
Napi::Value JsMonotonicNs(const Napi::CallbackInfo& info) { return Napi::BigInt::New(info.Env(), MonotonicNs()); }

// liveSources(): sources not yet fully closed in this environment (for leak tests).
Napi::Value LiveSources(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Data(info.Env())->sources.size()));
}

// setRealtimePriority(priority): puts the calling thread in SCHED_FIFO at `priority`, or back to
// SCHED_OTHER for 0. `evictd run` does not use it (its main thread keeps normal scheduling; the
// kill threads get the real-time class: setKillThreadPriority); `bench notify` does, to time a
// notification to a listener on a real-time thread. SCHED_RESET_ON_FORK keeps children out of
// the class; Linux applies it per thread, so libuv's pool threads keep their normal policy.
Napi::Value SetRealtimePriority(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "priority must be a number");
  int priority = info[0].As<Napi::Number>().Int32Value();
  struct sched_param param;
  memset(&param, 0, sizeof(param));
  param.sched_priority = priority;
  int policy = priority > 0 ? (SCHED_FIFO | SCHED_RESET_ON_FORK) : SCHED_OTHER;
  if (sched_setscheduler(0, policy, &param) != 0) throw SystemError(env, errno, "sched_setscheduler", "");
  return env.Undefined();
}

// flushOrderUses(): delivers, now, the standing orders' uses their threads have written but the
// loop has not yet been told of (their async handles run on a later turn). A pass calls it before
// it decides, so that a pod an order killed an instant ago is confirmed, not evicted a second time.
Napi::Value FlushOrderUses(const Napi::CallbackInfo& info) {
  AddonData* data = Data(info.Env());
  if (data->eventfd_orders != nullptr) data->eventfd_orders->Flush();
  if (data->tripwire != nullptr) data->tripwire->FlushOrders();
  return info.Env().Undefined();
}

// setOrderUseLog(path | null): the file every order thread appends a use to before its kill
// (use_log.h); null closes it. Throws a system error when the file cannot be opened.
Napi::Value SetOrderUseLog(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData* data = Data(env);
  if (info.Length() >= 1 && info[0].IsNull()) {
    data->use_log.Close();
    return env.Undefined();
  }
  if (info.Length() < 1 || !info[0].IsString())
    throw Napi::TypeError::New(env, "setOrderUseLog(path) or setOrderUseLog(null)");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int err = data->use_log.Open(path);
  if (err != 0) throw SystemError(env, err, "open", path);
  return env.Undefined();
}

// eventfdOrderStats(): the memcg v1 standing orders' counts in this environment: used (a kill
// written) and refused (a usage line crossed while the working set, read fresh, was below the
// kubelet's line). The tripwire's are in tripwireStatus().
Napi::Value EventfdOrderStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData* data = Data(env);
  Napi::Object stats = Napi::Object::New(env);
  EventfdOrders* orders = data->eventfd_orders;
  stats.Set("used", static_cast<double>(orders != nullptr ? orders->used() : 0));
  stats.Set("refused", static_cast<double>(orders != nullptr ? orders->refused() : 0));
  return stats;
}

void FinalizeData(Napi::Env /*env*/, AddonData* data) {
  data->instance_finalized = true;
  data->watcher_constructor.Reset();
  if (data->tripwire != nullptr) data->tripwire->Finalize();
  // Finalized without teardown having run the hook (not expected): unregister it.
  if (!data->tearing_down && data->cleanup_hook != nullptr) {
    napi_remove_async_cleanup_hook(data->cleanup_hook);
    data->cleanup_hook = nullptr;
  }
  // Sources (or the tripwire's program) still closing delete the data from their close callback.
  data->MaybeDone();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  data->env = env;
  data->watcher_constructor = Napi::Persistent(Watcher::DefineClass(env));
  env.SetInstanceData<AddonData, FinalizeData>(data);
  napi_status status = napi_add_async_cleanup_hook(env, &AddonData::OnEnvCleanup, data, &data->cleanup_hook);
  if (status != napi_ok) throw Napi::Error::New(env, "napi_add_async_cleanup_hook failed");
  exports.Set("openMemcgEvent", Napi::Function::New(env, OpenMemcgEvent, "openMemcgEvent"));
  exports.Set("openPsiTrigger", Napi::Function::New(env, OpenPsiTrigger, "openPsiTrigger"));
  exports.Set("openKernfsFile", Napi::Function::New(env, OpenKernfsFile, "openKernfsFile"));
  exports.Set("monotonicNs", Napi::Function::New(env, JsMonotonicNs, "monotonicNs"));
  exports.Set("liveSources", Napi::Function::New(env, LiveSources, "liveSources"));
  exports.Set("setRealtimePriority", Napi::Function::New(env, SetRealtimePriority, "setRealtimePriority"));
  exports.Set("lockMappedFiles", Napi::Function::New(env, LockMappedFiles, "lockMappedFiles"));
  exports.Set("shedFilePages", Napi::Function::New(env, ShedFilePages, "shedFilePages"));
  exports.Set("flushOrderUses", Napi::Function::New(env, FlushOrderUses, "flushOrderUses"));
  exports.Set("eventfdOrderStats", Napi::Function::New(env, EventfdOrderStats, "eventfdOrderStats"));
  exports.Set("setOrderUseLog", Napi::Function::New(env, SetOrderUseLog, "setOrderUseLog"));
  exports.Set("sdNotify", Napi::Function::New(env, SdNotify, "sdNotify"));
  InitKillThread(env, exports);
  Tripwire::Init(env, exports, data);
  return exports;
}

}  // namespace

}  // namespace evictd

// NODE_API_MODULE pastes the name into an identifier: it needs an unqualified function.
static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return evictd::Init(env, exports); }

NODE_API_MODULE(evictd_kernel, InitModule)
