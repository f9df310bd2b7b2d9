#include "code_pages.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <functional>
#include <string>

#include "errors.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21  // Linux 5.4; older kernels answer EINVAL and keep the pages
#endif

namespace evictd {

namespace {

// Calls `fn(start, length, path)` for each file-backed mapping in /proc/self/maps (a deleted
// file's left out) until it returns an errno other than 0; returns that errno, or 0. `bytes` is
// the total length of the mappings walked.
int ForEachFileMapping(Napi::Env env, const std::function<int(void*, size_t, const std::string&)>& fn, double* bytes) {
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
    std::string path(line + path_at);
    if (!path.empty() && path.back() == '\n') path.pop_back();
    if (path.empty() || path[0] != '/' || path.find(" (deleted)") != std::string::npos) continue;
    err = fn(reinterpret_cast<void*>(start), end - start, path);
    if (err == 0) *bytes += static_cast<double>(end - start);
  }
  free(line);
  fclose(maps);
  return err;
}

// The file this addon was loaded from, as /proc/self/maps names it (symbolic links resolved).
std::string OwnFile() {
  Dl_info info{};
  char resolved[PATH_MAX];
  if (dladdr(reinterpret_cast<void*>(&OwnFile), &info) == 0 || info.dli_fname == nullptr) return "";
  return realpath(info.dli_fname, resolved) != nullptr ? std::string(resolved) : std::string(info.dli_fname);
}

// The kill path's code: this addon (the order threads, the fresh read, the kill) and libbpf (the
// tripwire's ring). It runs seldom, and when it runs it must not wait on a disk: never given back.
bool OnKillPath(const std::string& path, const std::string& own) {
  std::string base = path.substr(path.rfind('/') + 1);
  return path == own || base.rfind("libbpf.so", 0) == 0;
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
      env,
      [](void* at, size_t length, const std::string&) { return mlock2(at, length, MLOCK_ONFAULT) == 0 ? 0 : errno; },
      &bytes);
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
// use and, locked, stays. Pages another process maps too are left alone by the kernel, and the
// kill path's own files are only locked (OnKillPath).
Napi::Value ShedFilePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool locked = info.Length() > 0 && info[0].ToBoolean().Value();
  const std::string own = OwnFile();
  double bytes = 0;
  int err = ForEachFileMapping(
      env,
      [locked, &own](void* at, size_t length, const std::string& path) {
        // Locked, not given back; libbpf is mapped after the start's lock, with the tripwire.
        if (OnKillPath(path, own)) return locked && mlock2(at, length, MLOCK_ONFAULT) != 0 ? errno : 0;
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
