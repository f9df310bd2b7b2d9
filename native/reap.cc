// process_mrelease on a killed pod's tasks (reap.h).
#include "reap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "clock.h"
#include "fd.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif

namespace evictd {

ReapCounters g_reap_counters;

namespace {

// The pids in one cgroup's cgroup.procs, appended to `pids` up to the bound.
void ReadProcs(const std::string& dir, std::vector<int>* pids) {
  Fd fd(open((dir + "/cgroup.procs").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return;
  char buffer[8192];
  std::string carry;
  for (;;) {
    ssize_t n = read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    carry.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = carry.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (pids->size() >= kMaxReapTasks) return;
      int pid = atoi(carry.c_str() + start);
      if (pid > 0) pids->push_back(pid);
    }
    carry.erase(0, start);
  }
}

// `dir` and the cgroups below it, breadth first, up to kMaxReapDirs.
std::vector<std::string> CgroupTree(const std::string& dir) {
  std::vector<std::string> dirs{dir};
  for (size_t i = 0; i < dirs.size() && dirs.size() < kMaxReapDirs; i++) {
    DIR* d = opendir(dirs[i].c_str());
    if (d == nullptr) continue;
    while (struct dirent* e = readdir(d)) {
      if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
      if (dirs.size() >= kMaxReapDirs) break;
      dirs.push_back(dirs[i] + "/" + e->d_name);
    }
    closedir(d);
  }
  return dirs;
}

}  // namespace

ReapResult ReapCgroup(const std::string& dir) {
  ReapResult r;
  uint64_t start = MonotonicNs();
  std::vector<int> pids;
  for (const std::string& d : CgroupTree(dir)) {
    ReadProcs(d, &pids);
    if (pids.size() >= kMaxReapTasks) break;
  }
  r.tasks = static_cast<uint32_t>(pids.size());
  for (int pid : pids) {
    Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) {
      if (errno != ESRCH && r.error == 0) r.error = errno;
      if (errno == ENOSYS) break;
      continue;
    }
    if (syscall(SYS_process_mrelease, pidfd.get(), 0) == 0) {
      r.reaped++;
    } else if (errno != ESRCH && r.error == 0) {
      r.error = errno;
      if (errno == ENOSYS) break;  // before Linux 5.15: the tasks exit as they would anyway
    }
  }
  r.ns = MonotonicNs() - start;
  g_reap_counters.pods.fetch_add(1, std::memory_order_relaxed);
  g_reap_counters.tasks.fetch_add(r.tasks, std::memory_order_relaxed);
  g_reap_counters.reaped.fetch_add(r.reaped, std::memory_order_relaxed);
  if (r.error != 0) g_reap_counters.failed.fetch_add(1, std::memory_order_relaxed);
  return r;
}

}  // namespace evictd
