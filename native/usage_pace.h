// How soon an eventfd order's thread reads its usage again while it is below the line. The v1
// threshold's eventfd fires at the crossing, but the kill waits for the kubelet's working set,
// which page cache can hold below the line after usage passed it: the thread then watches the
// usage itself. It reads again after the time a ramp of eight times the usage's current rise
// (at least 64 MiB/s) takes to cover what is left, between 100 µs and 50 ms (eventfd_orders.h).
// A node that stays near the line costs a read every 16 ms per MiB left; a ramp is read often
// enough to be seen within a charge batch. One per order; used under the engine's lock.
#pragma once

#include <cstdint>

namespace evictd {

class UsagePace {
 public:
  // The longest time between two reads (also the wait after a read that failed).
  static constexpr uint64_t kMaxReadNs = 50'000'000;

  // The usage was read at `now`, `left` bytes below the line: when to read it next, ns from now.
  uint64_t NextReadAfterNs(uint64_t left, int64_t usage, uint64_t now) {
    double rate = Rate(usage, now);
    double fastest = 8 * rate > kSlowestRampBytesPerSec ? 8 * rate : kSlowestRampBytesPerSec;
    double ns = static_cast<double>(left) * 1e9 / fastest;
    uint64_t after = ns < kMinReadNs ? kMinReadNs : (ns > kMaxReadNs ? kMaxReadNs : static_cast<uint64_t>(ns));
    // A new order knows no rate yet (each refresh places a new one): read every 2 ms until it does.
    return !rate_known_ && after > kLearnReadNs ? kLearnReadNs : after;
  }

 private:
  static constexpr double kSlowestRampBytesPerSec = 64.0 * 1024 * 1024;
  static constexpr uint64_t kMinReadNs = 100'000;
  static constexpr uint64_t kRateWindowNs = 20'000'000;
  static constexpr uint64_t kLearnReadNs = 2'000'000;

  // How fast the usage rises, bytes/s: over the last window of 20 ms, or since it began if
  // faster (a ramp that just started).
  double Rate(int64_t usage, uint64_t now) {
    if (window_ns_ == 0) {
      window_ns_ = now;
      window_usage_ = usage;
      return 0;
    }
    uint64_t span = now - window_ns_;
    double current = span > 0 && usage > window_usage_
                         ? static_cast<double>(usage - window_usage_) * 1e9 / static_cast<double>(span)
                         : 0;
    if (span >= kRateWindowNs) {
      rate_ = current;
      rate_known_ = true;
      window_ns_ = now;
      window_usage_ = usage;
    }
    return current > rate_ ? current : rate_;
  }

  uint64_t window_ns_ = 0;    // the current window's start,
  int64_t window_usage_ = 0;  // the usage then,
  double rate_ = 0;           // and the last whole window's rate, bytes/s
  bool rate_known_ = false;   // a whole window has passed
};

}  // namespace evictd
