// Real-time scheduling for the threads that kill (the standing orders' threads), and only them.
// `evictd run --realtime-priority N` asks for it so that a kill thread woken by a crossing
// preempts the workload it polices. Node's main thread keeps normal scheduling: after a kill it
// must not compete at real-time priority with the dying pod's exit on a small node, and the JS
// pass is not the path that kills at the line.
//
// The priority is one value for the process, set at start (a Linux scheduling class belongs to
// one thread, so each kill thread applies it to itself: when it starts, and after a wake-up that
// finds it changed). SCHED_RESET_ON_FORK keeps anything the thread would start out of the class.
#pragma once

#include <errno.h>
#include <sched.h>

#include <atomic>
#include <thread>

namespace evictd {

// 0: normal scheduling. Process-wide on purpose: every environment's kill threads share the CPU.
inline std::atomic<int> g_kill_thread_priority{0};

// One kill thread's view: what it applied last.
class KillThreadSched {
 public:
  // On the kill thread, at start and after each wake-up: applies a changed priority (best
  // effort: a refusal leaves the thread as it is; SetKillThreadPriority checked it already).
  void Sync() {
    int want = g_kill_thread_priority.load(std::memory_order_relaxed);
    if (want == applied_) return;
    applied_ = want;
    sched_param param = {};
    param.sched_priority = want;
    (void)sched_setscheduler(0, want > 0 ? (SCHED_FIFO | SCHED_RESET_ON_FORK) : SCHED_OTHER, &param);
  }

 private:
  int applied_ = 0;
};

// Normal scheduling for this thread while in scope, its real-time class back after. A kill
// thread reaps the killed pod's memory (reap.h) under it: the reap frees hundreds of MiB on
// the calling thread's CPU, and at real-time priority it kept that CPU from every normal task
// for as long (in the lab the protected pod's probe stalled 60-130 ms right at evictd's kills,
// against 20-70 ms at the peers'). The kill itself is done by then; the reap only hurries memory.
class NormalPriorityScope {
 public:
  NormalPriorityScope() {
    sched_param param = {};
    if (sched_getparam(0, &param) != 0 || (sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) != SCHED_FIFO) return;
    priority_ = param.sched_priority;
    sched_param normal = {};
    if (sched_setscheduler(0, SCHED_OTHER, &normal) != 0) priority_ = 0;
  }
  ~NormalPriorityScope() {
    if (priority_ == 0) return;
    sched_param param = {};
    param.sched_priority = priority_;
    (void)sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param);
  }
  NormalPriorityScope(const NormalPriorityScope&) = delete;
  NormalPriorityScope& operator=(const NormalPriorityScope&) = delete;

 private:
  int priority_ = 0;
};

// Whether the kernel grants SCHED_FIFO at `priority` to a thread of this process: tried on a
// thread of its own, so that no thread that stays keeps it. 0 or the errno (EPERM without
// CAP_SYS_NICE or without a real-time budget in a v1 cpu cgroup, EINVAL out of range).
inline int TryRealtime(int priority) {
  int result = 0;
  std::thread probe([&] {
    sched_param param = {};
    param.sched_priority = priority;
    result = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0 ? 0 : errno;
  });
  probe.join();
  return result;
}

}  // namespace evictd
