// Standing orders on memcg v1 threshold lines: the eventfd source of the order engine
// (order_engine.h; the tripwire is the other). On a cgroup v1 or hybrid host a memory line is a
// cgroup.event_control eventfd, and its crossing wakes whoever polls it. The engine's thread
// waits on the eventfds of the lines that hold an order; woken, it reads the line's usage file
// (the eventfd fires both ways and carries no value), and on the way up the engine confirms and
// writes the victim pod's cgroup.kill (Linux 5.14; on a hybrid host in the cgroup2 mount, where
// runc creates the pod's cgroup too); the order's JS callback runs on the loop.
//
// The thread waits with EPOLLET on a duplicate of each eventfd: the line's own uv_poll reads
// (and so resets) the counter on the loop, and an edge-triggered epoll is woken by every signal
// whatever the counter holds.
//
// The kernel checks a v1 threshold only every 128 page events per CPU (512 KiB: 2.5 ms of a
// 200 MiB/s ramp), so the eventfd alone comes up to that late. While an order is in force the
// thread also reads the line's usage itself, sooner the nearer the line and the faster the usage
// rises: the time a ramp eight times as fast as the last 20 ms (at least 64 MiB/s) would take to
// cover what is left, 100 µs to 50 ms apart. A crossing by a steady ramp is then seen within one
// charge batch (the counter moves up to 256 KiB at a time); a node that stays near the line costs
// a read every 16 ms per MiB left; a ramp that starts right at the line is left to the eventfd.
// Like the eventfd, a read kills only on the way up: once it has seen the usage below the line.
//
// A usage line only says the kubelet's line may be crossed: it sits at the working-set line plus
// inactive_file as a pass last read it, and page cache moves inactive_file. So a crossing of it
// is a candidate: the thread reads the kubelet's own numbers fresh (fresh_signal.h: usage and
// memory.stat total_inactive_file) and kills only when the working set is at or past the order's
// working-set line. Otherwise it refuses (counted) and moves its own usage line to that line plus
// the inactive_file it just read; the kernel's threshold stays where the loop put it. An order
// placed while usage is already past its usage line is checked the same way at its first read:
// with the working set below the kubelet's line, it watches from its corrected line at once.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "order_engine.h"
#include "usage_pace.h"

namespace evictd {

struct AddonData;

class EventfdOrders : public OrderEngine {
 public:
  // Loop thread. Starts the thread and the loop's async handle; null and *err when it cannot.
  static EventfdOrders* Start(AddonData* data, int* err);

  struct Order {
    int event_fd;         // the line's eventfd (duplicated here; the caller keeps its own)
    int usage_fd;         // the line's usage file (duplicated here)
    uint64_t line_bytes;  // the usage line (the threshold's)
    int kill_fd;          // the pod's cgroup.kill, owned from now on
    std::string path;     // the file kill_fd was opened from
    uint64_t expires_ns;
    std::string memory_dir;      // the line's memory cgroup, whose numbers are read at the kill
    uint64_t working_set_line;   // the kubelet's line: a kill needs the working set at or past it
    std::string tag;             // the order's name in the use log (use_log.h); empty: not logged
    std::string pod_memory_dir;  // the pod's memory cgroup (OrderKill::fold_dir); empty: unknown
  };

  // Loop thread. Places an order; returns its id (> 0), or 0 with errno set (kill_fd closed).
  // `on_fired(text, path)` runs on the loop for its use, even after a withdrawal raced it.
  uint64_t Place(const Order& order, Napi::Function on_fired);
  // Loop thread. Withdraws an order (no-op when it is gone).
  void Withdraw(uint64_t id);
  // Loop thread, at teardown: joins the thread, closes every fd, then the async handle; once it
  // is closed the object deletes itself and tells `data` (AddonData::MaybeDone).
  void Stop();

 private:
  struct Entry {
    OrderKill kill;
    int event_fd = -1;
    int usage_fd = -1;
    uint64_t line_bytes = 0;
    uint64_t expires_ns = 0;
    bool fired = false;
    bool below_seen = false;     // a read saw the usage below the line: the next one past it is a crossing
    bool awaiting_fold = false;  // refused for statistics not yet folded: read again, counted once
    uint64_t crossed_ns = 0;     // the wake-up of the crossing being confirmed
    uint64_t next_read_ns = 0;   // when the thread reads the usage again (0: at once)
    UsagePace pace;              // when the thread reads the usage again, below the line
  };

  explicit EventfdOrders(AddonData* data);
  int64_t Due() override;
  void Woken(uint64_t key, uint64_t woken_ns) override;
  bool Confirm(uint64_t id, Entry& entry, uint64_t woken_ns);
  void CloseEntry(Entry& entry);
  void Deliver(const OrderOutcome& outcome);
  static void OnClosed(uv_handle_t* handle);

  AddonData* data_;
  int kick_fd_ = -1;  // a placed order: the thread reads its usage at once
  std::unique_ptr<Napi::AsyncContext> async_context_;
  std::unordered_map<uint64_t, Entry> entries_;  // under mutex_
  uint64_t next_id_ = 0;
  // Loop thread only: the callback of every order that may still report a use.
  std::unordered_map<uint64_t, Napi::FunctionReference> callbacks_;
};

}  // namespace evictd
