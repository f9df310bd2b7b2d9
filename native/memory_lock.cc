// mlock2(MLOCK_ONFAULT) on every file-backed mapping of this process: the node binary, the
// shared libraries, this addon and libbpf. Near the end of memory the kernel reclaims file pages
// first, and the agent's code is file pages: an agent idle for a while finds its text evicted
// exactly when it must act, and each major fault then waits on a disk that reclaim keeps busy.
// MLOCK_ONFAULT keeps what is resident and every page touched later, without reading in code
// never run. Not mlockall: V8 gives heap pages back with madvise, which fails on locked memory
// and aborts the process (seen at the first heap teardown); anonymous memory is not reclaimed
// without swap anyway.
#include "memory_lock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <atomic>

namespace evictd {

namespace {

std::atomic<bool> lock_wanted{false};

}  // namespace

int LockFileMappings(double* bytes) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return errno;
  char* line = nullptr;
  size_t cap = 0;
  double locked = 0;
  int err = 0;
  while (getline(&line, &cap, maps) > 0) {
    unsigned long start = 0, end = 0;
    int path_at = -1;
    // start-end perms offset dev inode path
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &path_at) < 2 || path_at < 0) continue;
    const char* path = line + path_at;
    if (path[0] != '/' || strstr(path, " (deleted)") != nullptr) continue;
    if (mlock2(reinterpret_cast<void*>(start), end - start, MLOCK_ONFAULT) != 0) {
      err = errno;
      break;
    }
    locked += static_cast<double>(end - start);
  }
  free(line);
  fclose(maps);
  if (err != 0) {
    munlockall();
    return err;
  }
  lock_wanted.store(true);
  if (bytes != nullptr) *bytes = locked;
  return 0;
}

void LockNewFileMappings() {
  if (lock_wanted.load()) LockFileMappings(nullptr);
}

}  // namespace evictd
