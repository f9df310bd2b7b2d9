// Private to the tripwire's two files: the per-environment hub (the loaded BPF program, its
// ring buffer and the line slots) and what the N-API methods (tripwire_methods.cc) need of it
// (tripwire.cc). Only built with EVICTD_TRIPWIRE.
#pragma once

#ifdef EVICTD_TRIPWIRE
#include <bpf/libbpf.h>
#include <linux/types.h>
#include <napi.h>
#include <uv.h>

#include <cstdint>

#include "bpf/memcg_tripwire.h"
#include "memcg_tripwire.skel.h"
#include "watcher.h"

namespace evictd {

constexpr uint64_t kPageSize = 4096;

struct TripwireHub {
  AddonData* data = nullptr;
  memcg_tripwire* skel = nullptr;
  ring_buffer* rb = nullptr;
  uv_poll_t poll;
  bool poll_open = false;
  Source* slots[TRIPWIRE_MAX_LINES] = {};
  int lines = 0;
  uint64_t now_ns = 0;  // when the ring buffer poll woke (CLOCK_MONOTONIC)

  tripwire_line* Line(int slot) { return &skel->bss->lines[slot]; }

  static int OnRecord(void* ctx, void* record, size_t size);
  static void OnPoll(uv_poll_t* handle, int status, int events);
};

// The environment's hub, loaded and polling; throws the load error (with `stage`).
TripwireHub* EnsureHub(Napi::Env env, AddonData* data);

// Arms `slot` at `line_pages`, on the side given by `usage_pages` (the usage now, or -1 when
// unknown: then the last usage the program saw for this line or for the root, else below).
void ArmSlot(TripwireHub* hub, int slot, uint64_t cgroup_id, uint64_t line_pages, int64_t usage_pages);

// A line in bytes is met when usage (whole pages) reaches it: rounded up.
uint64_t BytesToPages(double bytes);

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
