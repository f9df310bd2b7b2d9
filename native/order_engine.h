// The standing orders' engine, one for every kind of line that can hold an order: the memcg v1
// threshold eventfds (eventfd_orders.h) and the BPF tripwire (tripwire_orders.h) are its two
// sources. A thread of the addon, not the JS loop, waits for what its source says may be a
// crossing, reads the kubelet's numbers of the line's cgroup fresh (fresh_signal.h: a usage line
// that page cache pushed past, or a working set from stale statistics, is a candidate, not a
// kill), and only when the working set is at or past the order's line notes the use (use_log.h)
// and writes the pod's cgroup.kill at once. Then it tells the loop (Flush, on the async handle),
// and reaps the pod's memory on its own thread (reap.h). A JS pass takes tens of milliseconds and
// grows with the pods on the node; this path is one wake-up, one fresh read and one write.
//
// A source says what wakes the thread (Watch: an fd in the engine's epoll set, under a key of its
// own), what to do when it does (Woken), and when to look without being woken (Due); the engine
// owns the thread, the kill and the delivery of each use to the loop.
//
// Threads: a source's Place and Withdraw, Stop and Flush run on the loop thread; the order thread
// reads the source's table and writes the kill under mutex_, so an fd is never closed (or its
// number reused) under it.
#pragma once

#include <sys/epoll.h>
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fresh_signal.h"
#include "order_use.h"
#include "use_log.h"

namespace evictd {

// What one order kills, and what its kill is confirmed on. Move-only: it owns its fds. Armed
// off the lock (opening files), then moved into the source's table under it.
struct OrderKill {
  int fd = -1;             // the pod's cgroup.kill, owned
  std::string path;        // the file `fd` was opened from
  uint64_t placed_ns = 0;  // when the order was placed (CLOCK_MONOTONIC)
  FreshSignal signal;      // the kubelet's numbers of the line's cgroup, and its working-set line
  std::string tag;         // the order's name in the use log (empty: not logged)
  // The pod's directory in the memory hierarchy (empty: unknown) and the line's, and when a
  // refused kill may next read their statistics to let the line's fold (fold_nudge.h).
  std::string fold_dir;
  std::string line_dir;
  uint64_t next_nudge_ns = 0;

  OrderKill() = default;
  OrderKill(const OrderKill&) = delete;
  OrderKill& operator=(const OrderKill&) = delete;
  OrderKill(OrderKill&& other) noexcept { *this = std::move(other); }
  OrderKill& operator=(OrderKill&& other) noexcept;
  ~OrderKill() { Disarm(); }

  bool armed() const { return fd >= 0; }
  // Takes `kill_fd` (owned from now on; closed when this fails) and opens the line's cgroup files
  // (`memory_dir`); `pod_memory_dir` is the fold_dir. 0, or the errno of opening them.
  int Arm(int kill_fd, const std::string& kill_path, const std::string& memory_dir, uint64_t working_set_line,
          const std::string& order_tag, const std::string& pod_memory_dir);
  // Closes the kill file and the cgroup's files.
  void Disarm();
  // After a kill refused only because the line's statistics lag its usage (FreshSignal): reads
  // the statistics of the pod and of the cgroups between it and the line (NudgeFold), at most
  // every kNudgeEveryNs and a fifth of the time. A ramp in the pod then lets the line's next read
  // fold; page cache written in another pod still waits for the kernel's fold.
  void NudgeFoldIfDue(uint64_t now_ns);
  static constexpr uint64_t kNudgeEveryNs = 2'000'000;
};

// One use of an order, handed to the loop.
struct OrderOutcome {
  uint64_t key = 0;         // which order, in the source's terms (an id, or a slot)
  uint32_t generation = 0;  // which of the slot's orders, where a source reuses slots
  OrderUse use;             // what JS is told (order_use.h)
  std::string path;         // the kill's file
};

class OrderEngine {
 public:
  // Where each use goes, on the loop thread.
  using Deliver = std::function<void(const OrderOutcome&)>;

  virtual ~OrderEngine() = default;

  // Loop thread: delivers the uses written so far now, as the async handle would on a later turn
  // (a pass about to decide must know which pods are dead already).
  void Flush();

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  // Crossings where the kubelet's numbers, read fresh, were not past the order's line.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  // Crossings of an order withdrawn before the thread read them: nobody was killed.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 protected:
  explicit OrderEngine(const UseLog* log) : log_(log) {}

  // Loop thread: the stop eventfd, the epoll set, and the async handle that runs `deliver` for
  // each use on the loop (unref'd: uses are for open lines, which hold the loop themselves).
  // 0 or an errno; then everything opened is closed again.
  int Open(uv_loop_t* loop, Deliver deliver);
  // Loop thread, once the source is ready: the thread (it takes the kill threads' real-time class
  // itself, thread_sched.h).
  void StartThread();
  // Adds `fd` to what wakes the thread, under `key` (kStopKey is the engine's). 0 or an errno.
  int Watch(int fd, uint64_t key, uint32_t events);
  void Unwatch(int fd);
  // Loop thread: stops and joins the thread and drops the uses not yet delivered; the source then
  // closes its table, and calls CloseHandle.
  void StopThread();
  // Loop thread: closes the engine's fds, then the async handle; `closed` runs once it is closed,
  // with the handle's data set to `data`.
  void CloseHandle(void* data, uv_close_cb closed);

  // On the order thread, under mutex_: reads the kubelet's numbers of `kill`'s cgroup fresh; when
  // the working set is at or past the order's line, notes the use, writes the kill, queues the
  // use for the loop (`use` brings what the source knows of the crossing: its times, the
  // tripwire's counter) and the pod for the reap, disarms `kill` and returns true. Otherwise
  // false, with what was read in *working_set (-1: the cgroup's files are gone or unreadable),
  // *inactive and *unlisted (fresh_signal.h; either pointer may be null).
  bool KillIfPast(uint64_t key, uint32_t generation, OrderKill& kill, OrderUse use, int64_t* working_set,
                  int64_t* inactive, int64_t* unlisted = nullptr);
  void CountRefused() { refused_.fetch_add(1, std::memory_order_relaxed); }
  void CountDropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }

  // The source's part, on the order thread. When it must look again without a wake-up: ns from
  // now, 0 at once, -1 not until woken (called without mutex_).
  virtual int64_t Due() { return -1; }
  // An fd it watches under `key` woke the thread at `woken_ns` (called without mutex_).
  virtual void Woken(uint64_t key, uint64_t woken_ns) = 0;

  std::mutex mutex_;  // the source's table, and outcomes_ and to_reap_

 private:
  void Run();
  int Wait(struct epoll_event* events, int max, int64_t wait_ns);
  void ReapKilled();
  static void OnAsync(uv_async_t* handle);

  const UseLog* log_;
  Deliver deliver_;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  uv_async_t async_;
  std::deque<OrderOutcome> outcomes_;
  // Pods killed since the last reap (their cgroup directories).
  std::vector<std::string> to_reap_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace evictd
