// The agent's code pages: kept in RAM (lockMappedFiles) and trimmed to what it runs once started
// (shedFilePages). Both walk the file-backed mappings of this process (the node binary, its
// libraries, this addon, libbpf).
#pragma once

#include <napi.h>

namespace evictd {

// lockMappedFiles(): mlock2(MLOCK_ONFAULT) on every file-backed mapping; the bytes of the
// mappings. Throws the errno (EPERM, or ENOMEM past RLIMIT_MEMLOCK), with nothing left locked.
Napi::Value LockMappedFiles(const Napi::CallbackInfo& info);

// shedFilePages(locked: boolean): madvise(MADV_PAGEOUT) on every file-backed mapping but the kill
// path's (this addon, libbpf), first unlocking and then locking it again when `locked` (pageout
// skips locked mappings); the kill path's are locked as they are. The bytes of the mappings walked; throws the errno of
// a lock that could not be taken again.
Napi::Value ShedFilePages(const Napi::CallbackInfo& info);

}  // namespace evictd
