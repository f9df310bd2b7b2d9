// Standing orders: a pass near a hard memory line leaves, on that line, the pod the
// kubelet's ranking would evict if the line were crossed now. The BPF program reports the first
// crossing of a line that holds an unexpired order through its own `orders` ring buffer; a thread
// of the addon, not the JS loop, consumes it, reads the kubelet's numbers of the line's cgroup
// fresh (fresh_signal.h: the program's working set uses memcg statistics as the kernel last
// folded them) and, when they are past the line, writes the pod's cgroup.kill at once, then
// tells the line on the loop, where the agent's next pass confirms the eviction (CRI stop,
// report). When they are not, the order is refused (counted) and given back to the program with
// the gap as its bias (memcg_tripwire.h, order_bias_pages).
// A JS pass takes tens of milliseconds under emulation and grows with the pods on the node; this
// path is a ring buffer wake-up and one write, whatever the loop is doing.
//
// Threads: Place and Withdraw run on the loop thread; the order thread only reads the table and
// writes the kill under the same mutex, so an fd is never closed (or its number reused) under it.
// Only built with EVICTD_TRIPWIRE.
#pragma once

#ifdef EVICTD_TRIPWIRE
#include <linux/types.h>
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "bpf/memcg_tripwire.h"
#include "fresh_signal.h"
#include "libbpf_api.h"
#include "use_log.h"

struct memcg_tripwire;

namespace evictd {

struct TripwireRing;

// What the order thread did with one order, handed to the loop.
struct OrderOutcome {
  int slot = -1;
  uint32_t generation = 0;
  tripwire_order_event event = {};
  uint64_t placed_ns = 0;          // when the order was placed
  uint64_t killed_ns = 0;          // right after the kill was written
  int error = 0;                   // errno of the write; 0: the pod was killed
  uint64_t working_set_bytes = 0;  // the kubelet's working set read at the kill
  uint64_t line_bytes = 0;         // the order's working-set line
  uint64_t check_ns = 0;           // the fresh read that confirmed the kill
  int log_error = 0;               // errno of the use log's append (0: noted, or no log)
  std::string path;                // the kill file written
};

class TripwireOrders {
 public:
  // Starts the order thread on the loaded program's `orders` map and the loop's async handle
  // (counted in ring->open_handles). Returns null and sets *err when it cannot.
  // `log`: where each use is noted before its kill (use_log.h; it outlives this object).
  static TripwireOrders* Start(TripwireRing* ring, uv_loop_t* loop, const UseLog* log, int* err);

  // Loop thread. Places `slot`'s order: the kill goes to `kill_fd` (owned from now on; opened
  // from `path`) until `expires_ns` (CLOCK_MONOTONIC), once the working set of `memory_dir` read
  // fresh is at or past `working_set_line` bytes. Returns the order's generation, or 0 with
  // *err set when the cgroup's files cannot be opened (kill_fd is then closed).
  uint32_t Place(int slot, int kill_fd, const std::string& path, uint64_t expires_ns, const std::string& memory_dir,
                 uint64_t working_set_line, const std::string& tag, int* err);
  // Loop thread. Withdraws `slot`'s order, if any (a released line, a withdrawn order).
  void Withdraw(int slot);
  // Loop thread. Stops and joins the thread, closes the fds, then the async handle; the ring's
  // handle count drops when it is closed.
  void Stop();

  // Loop thread: delivers the uses written so far now, as the async handle would on a later
  // turn (a pass about to decide must know which pods are dead already).
  void Flush();

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  // Crossings the program saw where the kubelet's numbers, read fresh, were not past the line.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  // Records of an order withdrawn before the thread read them: nobody was killed.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    int fd = -1;
    uint32_t generation = 0;
    uint64_t placed_ns = 0;
    std::string path;
    FreshSignal signal;
    std::string tag;  // the order's name in the use log
  };

  TripwireOrders(TripwireRing* ring, const UseLog* log) : ring_(ring), log_(log) {}
  void Run();
  static int OnRecord(void* ctx, void* record, size_t size);
  static void OnAsync(uv_async_t* handle);

  TripwireRing* ring_;
  const UseLog* log_;
  ring_buffer* rb_ = nullptr;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd that wakes the thread to end it
  std::thread thread_;
  uv_async_t async_;
  std::mutex mutex_;  // entries_, outcomes_
  Entry entries_[TRIPWIRE_MAX_LINES];
  uint32_t next_generation_ = 0;
  std::deque<OrderOutcome> outcomes_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
