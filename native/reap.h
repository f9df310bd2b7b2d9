// After a pod is killed through its cgroup.kill: process_mrelease (Linux 5.15) on each of its
// tasks, so that their memory comes back as the kill lands rather than when each dying task has
// unmapped its own pages (on a small node that exit competes for the CPU with everything else,
// and a task blocked in the kernel exits late). The kernel reaps only a task whose death is
// already certain (SIGKILL sent: cgroup.kill did it), so the call can never hurt a live one.
//
// A pod controls how many tasks and cgroups it has: the walk is bounded (kMaxReapTasks,
// kMaxReapDirs); what lies past the bound exits on its own, as without the reap.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace evictd {

struct ReapResult {
  uint32_t tasks = 0;   // tasks found in the pod's cgroups
  uint32_t reaped = 0;  // process_mrelease returned 0
  int error = 0;        // the first errno other than ESRCH (gone already), or 0
  uint64_t ns = 0;      // how long the walk and the reaps took
};

constexpr uint32_t kMaxReapTasks = 4096;
constexpr uint32_t kMaxReapDirs = 256;

// `dir`: the pod's cgroup2 directory. Blocking (the unmapping is done by the calling thread).
ReapResult ReapCgroup(const std::string& dir);

// Whether kills are followed by a reap (`evictd run --reap-killed`, on by default): one switch for
// the process, read by each kill thread after its kill and by reapCgroup.
inline std::atomic<bool> g_reap_after_kill{true};

// Totals over the process's life, for the metrics (reapCounts()).
struct ReapCounters {
  std::atomic<uint64_t> pods{0};
  std::atomic<uint64_t> tasks{0};
  std::atomic<uint64_t> reaped{0};
  std::atomic<uint64_t> failed{0};
};
extern ReapCounters g_reap_counters;

}  // namespace evictd
