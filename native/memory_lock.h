// The agent's code kept in RAM: mlock2(MLOCK_ONFAULT) on every file-backed mapping (see
// memory_lock.cc). Shared by the JS call (addon.cc) and the libraries the addon loads later
// (libbpf_api.cc), which a lock taken at start would not cover.
#ifndef EVICTD_MEMORY_LOCK_H_
#define EVICTD_MEMORY_LOCK_H_

namespace evictd {

// Locks every file-backed mapping now; on success the lock is "wanted" from then on. Returns 0
// and the mappings' bytes in *bytes (when not null), or the errno, with nothing left locked.
int LockFileMappings(double* bytes);

// After a library is loaded: locks the new mappings too, when the lock is wanted. Best effort
// (the privilege that took the first lock takes this one).
void LockNewFileMappings();

}  // namespace evictd

#endif  // EVICTD_MEMORY_LOCK_H_
