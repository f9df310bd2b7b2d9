// Standing orders on tripwire lines: the BPF tripwire's source of the order engine
// (order_engine.h; memcg v1 eventfds are the other). A pass near a hard memory line leaves, on
// that line, the pod the kubelet's ranking would evict if the line were crossed now. The BPF
// program reports the first crossing of a line that holds an unexpired order through its own
// `orders` ring buffer, which wakes the engine's thread; the engine confirms it on the kubelet's
// numbers read fresh (the program's working set uses memcg statistics as the kernel last folded
// them) and kills. When they are not past the line, the order is refused (counted) and given
// back to the program with the gap as its bias (memcg_tripwire.h, order_bias_pages).
//
// Place and Withdraw run on the loop thread; the thread reads the table under the engine's mutex.
// Only built with EVICTD_TRIPWIRE.
#pragma once

#ifdef EVICTD_TRIPWIRE
#include <linux/types.h>
#include <uv.h>

#include <cstdint>
#include <string>

#include "bpf/memcg_tripwire.h"
#include "libbpf_api.h"
#include "order_engine.h"
#include "tripwire_program.h"

namespace evictd {

class TripwireOrders : public OrderEngine {
 public:
  // Starts the thread on the loaded `program`'s `orders` ring buffer, and the loop's async handle
  // that hands each use to `deliver`. Returns null and sets *err when it cannot. `log`: where each
  // use is noted before its kill (use_log.h; it outlives this object).
  static TripwireOrders* Start(TripwireProgram* program, uv_loop_t* loop, const UseLog* log, Deliver deliver, int* err);
  ~TripwireOrders() override;

  // Loop thread. Places `slot`'s order: the kill goes to `kill_fd` (owned from now on; opened
  // from `path`) until `expires_ns` (CLOCK_MONOTONIC), once the working set of `memory_dir` read
  // fresh is at or past `working_set_line` bytes. Returns the order's generation, or 0 with
  // *err set when the cgroup's files cannot be opened (kill_fd is then closed).
  uint32_t Place(int slot, int kill_fd, const std::string& path, uint64_t expires_ns, const std::string& memory_dir,
                 uint64_t working_set_line, const std::string& tag, int* err);
  // Loop thread. Withdraws `slot`'s order, if any (a released line, a withdrawn order).
  void Withdraw(int slot);
  // Loop thread. Stops and joins the thread, withdraws every order, closes the ring buffer, then
  // the async handle: `closed` runs once it is, with the handle's data set to `data`.
  void Stop(void* data, uv_close_cb closed);

 private:
  struct Entry {
    OrderKill kill;
    uint32_t generation = 0;
  };

  TripwireOrders(TripwireProgram* program, const UseLog* log) : OrderEngine(log), program_(program) {}
  void Woken(uint64_t key, uint64_t woken_ns) override;
  static int OnRecord(void* ctx, void* record, size_t size);
  tripwire_line* Line(int slot) { return &program_->globals->lines[slot]; }

  TripwireProgram* program_;
  ring_buffer* rb_ = nullptr;
  Entry entries_[TRIPWIRE_MAX_LINES];  // under mutex_
  uint32_t next_generation_ = 0;
};

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
