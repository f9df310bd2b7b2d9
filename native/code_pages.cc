#include "code_pages.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <functional>

#include "errors.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21  // Linux 5.4; older kernels answer EINVAL and keep the pages
#endif

namespace evictd {

namespace {

// Calls `fn(start, length)` for each file-backed mapping in /proc/self/maps (a deleted file's
// left out) until it returns an errno other than 0; returns that errno, or 0. `bytes` is the
// total length of the mappings `fn` accepted.
int ForEachFileMapping(Napi::Env env, const std::function<int(void*, size_t)>& fn, double* bytes) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) throw SystemError(env, errno, "open", "/proc/self/maps");
  char* line = nullptr;
  size_t cap = 0;
  int err = 0;
  *bytes = 0;
  while (err == 0 && getline(&line, &cap, maps) > 0) {
    unsigned long start = 0, end = 0;
    int path_at = -1;
    // start-end perms offset dev inode path
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &path_at) < 2 || path_at < 0) continue;
    const char* path = line + path_at;
    if (path[0] != '/' || strstr(path, " (deleted)") != nullptr) continue;
    err = fn(reinterpret_cast<void*>(start), end - start);
    if (err == 0) *bytes += static_cast<double>(end - start);
  }
  free(line);
  fclose(maps);
  return err;
}

}  // namespace

// Near the end of memory the kernel reclaims file pages first, and the agent's code is file
// pages: an agent idle for a while finds its text evicted exactly when it must act, and each
// major fault then waits on a disk that reclaim keeps busy. MLOCK_ONFAULT keeps what is resident
// and every page touched later, without reading in code never run. Not mlockall: V8 gives heap
// pages back with madvise, which fails on locked memory and aborts the process (seen at the
// first heap teardown); anonymous memory is not reclaimed without swap anyway.
Napi::Value LockMappedFiles(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double bytes = 0;
  int err = ForEachFileMapping(
      env, [](void* at, size_t length) { return mlock2(at, length, MLOCK_ONFAULT) == 0 ? 0 : errno; }, &bytes);
  if (err != 0) {
    munlockall();
    throw SystemError(env, err, "mlock2", "");
  }
  return Napi::Number::New(env, bytes);
}

// Starting touches code that never runs again (module loading, the options, the first listing)
// and the kernel maps pages around each fault (fault-around): about half of the node binary's
// resident pages after a start are of no further use. Paging them out once the first pass is done
// gives that memory back to the node; what the agent runs afterwards comes back on its first
// use and, locked, stays. Pages another process maps too are left alone by the kernel.
Napi::Value ShedFilePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool locked = info.Length() > 0 && info[0].ToBoolean().Value();
  double bytes = 0;
  int err = ForEachFileMapping(
      env,
      [locked](void* at, size_t length) {
        if (locked) munlock(at, length);
        madvise(at, length, MADV_PAGEOUT);  // best effort: EINVAL before 5.4 keeps the pages
        return locked && mlock2(at, length, MLOCK_ONFAULT) != 0 ? errno : 0;
      },
      &bytes);
  malloc_trim(0);
  if (err != 0) {
    munlockall();
    throw SystemError(env, err, "mlock2", "");
  }
  return Napi::Number::New(env, bytes);
}

}  // namespace evictd
