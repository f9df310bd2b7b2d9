// Private to the tripwire's files (tripwire.cc: the program's life and its ring buffer;
// tripwire_methods.cc: the line table and what JS calls): one load of the program. Only built
// with EVICTD_TRIPWIRE.
#pragma once

#ifdef EVICTD_TRIPWIRE
#include <linux/types.h>
#include <uv.h>

#include <cstdint>
#include <vector>

#include "bpf/memcg_tripwire.h"
#include "tripwire_orders.h"
#include "tripwire_program.h"

namespace evictd {

class Tripwire;
class TripwireLine;

constexpr uint64_t kPageSize = 4096;

// The program, its ring buffer and the two uv handles, which close asynchronously: a ring
// outlives its unload until both close callbacks ran, then its BPF side is freed off the loop.
struct TripwireRing {
  Tripwire* owner = nullptr;
  TripwireProgram program;
  ring_buffer* rb = nullptr;
  // The ring buffer's epoll fd (libbpf owns it). Ref'd only while some line holds the loop.
  uv_poll_t poll;
  // Next-turn work (Tripwire::Later), started only while there is some. Ref'd: a close callback
  // that JS awaits must keep the loop alive until it runs, as a closing handle does.
  uv_idle_t later;
  bool poll_open = false;
  bool later_open = false;
  int open_handles = 0;
  // The standing orders' thread (null when it could not start: lines work, orders are refused).
  TripwireOrders* orders = nullptr;
  TripwireLine* slots[TRIPWIRE_MAX_LINES] = {};
  int lines = 0;
  int holding = 0;  // lines started, ref'd and open
  bool unload_when_idle = false;
  std::vector<TripwireLine*> queue;

  tripwire_line* Line(int slot) { return &program.globals->lines[slot]; }

  static int OnRecord(void* ctx, void* record, size_t size);
  static void OnPoll(uv_poll_t* handle, int status, int events);
  static void OnLater(uv_idle_t* handle);
  static void OnHandleClosed(uv_handle_t* handle);
};

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
