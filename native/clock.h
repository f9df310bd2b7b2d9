// The one clock of every event timestamp: CLOCK_MONOTONIC, the clock bpf_ktime_get_ns() and
// process.hrtime.bigint() read too, so stamps from the kernel, the addon and JS compare.
#ifndef EVICTD_CLOCK_H
#define EVICTD_CLOCK_H

#include <time.h>

#include <cstdint>

namespace evictd {

inline uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace evictd

#endif
