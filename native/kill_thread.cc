// setKillThreadPriority, reapCgroup, reapCounts (kill_thread.h).
#include "kill_thread.h"

#include <memory>
#include <string>

#include "errors.h"
#include "off_loop.h"
#include "reap.h"
#include "thread_sched.h"

namespace evictd {

namespace {

// setKillThreadPriority(priority): SCHED_FIFO at `priority` (1-99) for the threads that kill
// (the standing orders' threads: those running and those started later), 0 for normal
// scheduling. Checked on a thread of its own first: throws the errno (EPERM without
// CAP_SYS_NICE, EINVAL out of range) and changes nothing. No other thread's class changes.
Napi::Value SetKillThreadPriority(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "priority must be a number");
  int priority = info[0].As<Napi::Number>().Int32Value();
  if (priority > 0) {
    int err = TryRealtime(priority);
    if (err != 0) throw SystemError(env, err, "sched_setscheduler", "");
  } else if (priority < 0) {
    throw SystemError(env, EINVAL, "sched_setscheduler", "");
  }
  g_kill_thread_priority.store(priority, std::memory_order_relaxed);
  return env.Undefined();
}

// setReapAfterKill(enabled): whether the kill threads reap after their kills (reap.h).
Napi::Value SetReapAfterKill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBoolean()) throw Napi::TypeError::New(env, "enabled must be a boolean");
  g_reap_after_kill.store(info[0].As<Napi::Boolean>().Value(), std::memory_order_relaxed);
  return env.Undefined();
}

// reapCgroup(dir): after a kill from JS (cgroup.kill written by a pass), process_mrelease on the
// pod's tasks on the threadpool. Resolves { tasks, reaped, errno, ns }.
Napi::Value JsReapCgroup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "dir must be a string");
  std::string dir = info[0].As<Napi::String>().Utf8Value();
  auto deferred = std::make_shared<Napi::Promise::Deferred>(env);
  auto result = std::make_shared<ReapResult>();
  RunOffLoop(
      env, [dir, result] { *result = ReapCgroup(dir); },
      [env, deferred, result] {
        Napi::HandleScope scope(env);
        Napi::Object o = Napi::Object::New(env);
        o.Set("tasks", static_cast<double>(result->tasks));
        o.Set("reaped", static_cast<double>(result->reaped));
        o.Set("errno", result->error);
        o.Set("ns", static_cast<double>(result->ns));
        deferred->Resolve(o);
      });
  return deferred->Promise();
}

// reapCounts(): the reaps of this process so far: pods, tasks found, tasks reaped, pods where a
// reap failed (other than a task already gone).
Napi::Value ReapCounts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("pods", static_cast<double>(g_reap_counters.pods.load(std::memory_order_relaxed)));
  o.Set("tasks", static_cast<double>(g_reap_counters.tasks.load(std::memory_order_relaxed)));
  o.Set("reaped", static_cast<double>(g_reap_counters.reaped.load(std::memory_order_relaxed)));
  o.Set("failed", static_cast<double>(g_reap_counters.failed.load(std::memory_order_relaxed)));
  return o;
}

}  // namespace

void InitKillThread(Napi::Env env, Napi::Object exports) {
  exports.Set("setKillThreadPriority", Napi::Function::New(env, SetKillThreadPriority, "setKillThreadPriority"));
  exports.Set("setReapAfterKill", Napi::Function::New(env, SetReapAfterKill, "setReapAfterKill"));
  exports.Set("reapCgroup", Napi::Function::New(env, JsReapCgroup, "reapCgroup"));
  exports.Set("reapCounts", Napi::Function::New(env, ReapCounts, "reapCounts"));
}

}  // namespace evictd
