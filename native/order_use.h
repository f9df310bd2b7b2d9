// What a standing order's use tells JS, the same from either engine (eventfd_orders.h,
// tripwire_orders.h): "name value" lines, as the watchers' files have them, that
// src/kernel/order-event.ts reads. Formatted on the stack: nothing is allocated on the way to JS.
#pragma once

#include <stdio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace evictd {

struct OrderUse {
  uint64_t usage_bytes = 0;      // the kubelet's working set, read fresh at the kill, less unlisted
  uint64_t unlisted_bytes = 0;   // usage the statistics did not account for yet (fresh_signal.h)
  uint64_t line_bytes = 0;       // the kubelet's line it was past
  uint64_t charge_began_ns = 0;  // when the crossing began (the charge; the wake-up for an eventfd)
  uint64_t fired_ns = 0;         // when the mechanism saw the crossing
  uint64_t killed_ns = 0;        // when cgroup.kill was written
  uint64_t placed_ns = 0;        // when the order was placed
  int error = 0;                 // errno of the kill's write (0: written)
  uint64_t check_ns = 0;         // how long the fresh read that confirmed the kill took
  int log_error = 0;             // errno of the use log's append (0: noted, or no log)
  int64_t trigger_bytes = -1;    // the tripwire's counter at the crossing (-1: the engine has none)
};

constexpr size_t kOrderUseTextSize = 448;

// `use` as its text; returns the text's length.
inline size_t FormatOrderUse(const OrderUse& use, char (&text)[kOrderUseTextSize]) {
  using ull = unsigned long long;
  int len = snprintf(text, sizeof text,
                     "usage_bytes %llu\nline_bytes %llu\ncharge_began_ns %llu\nfired_ns %llu\nkilled_ns %llu\n"
                     "placed_ns %llu\nerrno %d\ncheck_ns %llu\nlog_errno %d\nunlisted_bytes %llu\n",
                     static_cast<ull>(use.usage_bytes), static_cast<ull>(use.line_bytes),
                     static_cast<ull>(use.charge_began_ns), static_cast<ull>(use.fired_ns),
                     static_cast<ull>(use.killed_ns), static_cast<ull>(use.placed_ns), use.error,
                     static_cast<ull>(use.check_ns), use.log_error, static_cast<ull>(use.unlisted_bytes));
  len = std::clamp(len, 0, static_cast<int>(sizeof text) - 1);
  if (use.trigger_bytes >= 0) {
    int more = snprintf(text + len, sizeof text - static_cast<size_t>(len), "trigger_bytes %llu\n",
                        static_cast<ull>(use.trigger_bytes));
    len = std::clamp(len + more, 0, static_cast<int>(sizeof text) - 1);
  }
  return static_cast<size_t>(len);
}

}  // namespace evictd
