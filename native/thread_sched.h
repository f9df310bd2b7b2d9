// The loop thread's scheduling, for the threads the addon starts to act for it (the standing
// orders' threads). `evictd run --realtime-priority` puts the loop thread in SCHED_FIFO with
// SCHED_RESET_ON_FORK, so that runc and other children run normally; but the reset applies to
// every new task, threads included: a thread started from the loop would run SCHED_OTHER. Read on
// the loop thread, applied by the new thread to itself.
#pragma once

#include <sched.h>

namespace evictd {

struct ThreadSched {
  int policy = SCHED_OTHER;
  sched_param param = {};
};

// On the loop thread.
inline ThreadSched LoopSched() {
  ThreadSched s;
  int policy = sched_getscheduler(0);
  if (policy >= 0) s.policy = policy & ~SCHED_RESET_ON_FORK;
  if (sched_getparam(0, &s.param) != 0) s.param = {};
  return s;
}

// On the new thread: the loop's real-time class, if it has one (best effort: a failure leaves the
// thread as it is).
inline void ApplySched(const ThreadSched& s) {
  if (s.policy != SCHED_FIFO && s.policy != SCHED_RR) return;
  if (sched_setscheduler(0, s.policy | SCHED_RESET_ON_FORK, &s.param) != 0) {
    // Without CAP_SYS_NICE the loop thread could not have had it either.
  }
}

}  // namespace evictd
