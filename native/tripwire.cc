#include "tripwire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <string>

#include "clock.h"
#include "errors.h"
#include "off_loop.h"

#ifdef EVICTD_TRIPWIRE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "tripwire_hub.h"
#endif

namespace evictd {

#ifndef EVICTD_TRIPWIRE

struct TripwireHub {};

void TripwireRelease(Source* /*source*/) {}
void TripwireShutdown(AddonData* /*data*/, bool /*only_if_idle*/) {}

void TripwireExports(Napi::Env env, Napi::Object exports) {
  exports.Set("tripwireStatus", Napi::Function::New(
                                    env,
                                    [](const Napi::CallbackInfo& info) -> Napi::Value {
                                      Napi::Object status = Napi::Object::New(info.Env());
                                      status.Set("built", false);
                                      status.Set("loaded", false);
                                      return status;
                                    },
                                    "tripwireStatus"));
}

#else

namespace {

double NowMs() {
  return static_cast<double>(MonotonicNs()) / 1e6;
}

// libbpf logs to stderr by default (verifier logs included): keep the agent's output clean and
// report failures as errors; EVICTD_TRIPWIRE_DEBUG=1 shows libbpf's own lines.
int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  static const bool debug = getenv("EVICTD_TRIPWIRE_DEBUG") != nullptr;
  if (!debug || level == LIBBPF_DEBUG) return 0;
  return vfprintf(stderr, format, args);
}

}  // namespace

namespace {

// Loads and attaches the program, then opens the ring buffer. Returns null and sets the
// environment's error (errno and stage) on failure. Runs on the JS thread: verification takes
// 140-230 ms and the fexit attach 50-190 ms on emulated CPUs, once per environment.
TripwireHub* LoadHub(AddonData* data) {
  static bool print_set = false;
  if (!print_set) libbpf_set_print(LibbpfPrint);
  print_set = true;
  auto fail = [data](int err, const char* stage) -> TripwireHub* {
    data->tripwire_error = err > 0 ? err : (err < 0 ? -err : EINVAL);
    data->tripwire_error_stage = stage;
    return nullptr;
  };
  double t0 = NowMs();
  memcg_tripwire* skel = memcg_tripwire__open();
  if (skel == nullptr) return fail(errno, "open");
  int err = memcg_tripwire__load(skel);
  if (err != 0) {
    memcg_tripwire__destroy(skel);
    return fail(err, "load");
  }
  double t1 = NowMs();
  err = memcg_tripwire__attach(skel);
  if (err != 0) {
    memcg_tripwire__destroy(skel);
    return fail(err, "attach");
  }
  double t2 = NowMs();
  auto* hub = new TripwireHub();
  hub->data = data;
  hub->skel = skel;
  hub->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), &TripwireHub::OnRecord, hub, nullptr);
  if (hub->rb == nullptr) {
    int e = errno;
    memcg_tripwire__destroy(skel);
    delete hub;
    return fail(e, "ring_buffer");
  }
  data->tripwire_error = 0;
  data->tripwire_error_stage.clear();
  data->tripwire_load_ms = t1 - t0;
  data->tripwire_attach_ms = t2 - t1;
  return hub;
}

// Frees the BPF side. Detaching an fexit link waits for an RCU-tasks grace period: off the loop
// unless the environment is going away.
void DestroyHub(TripwireHub* hub) {
  AddonData* data = hub->data;
  auto destroy = [hub]() {
    ring_buffer__free(hub->rb);
    memcg_tripwire__destroy(hub->skel);
  };
  auto done = [hub, data]() {
    delete hub;
    data->tripwire_closing--;
    data->MaybeDone();
  };
  if (data->tearing_down) {
    destroy();
    done();
  } else {
    RunOffLoop(data->env, destroy, done);
  }
}

// The ring buffer reports through an epoll fd that libbpf owns; libuv polls that.
int StartPolling(TripwireHub* hub, Napi::Env env) {
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) return UV_EINVAL;
  int err = uv_poll_init(loop, &hub->poll, ring_buffer__epoll_fd(hub->rb));
  if (err != 0) return err;
  hub->poll.data = hub;
  hub->poll_open = true;
  // The line watchers hold the loop (each has its own handle, ref'd or not by JS): the hub never.
  uv_unref(reinterpret_cast<uv_handle_t*>(&hub->poll));
  return uv_poll_start(&hub->poll, UV_READABLE, &TripwireHub::OnPoll);
}

}  // namespace

TripwireHub* EnsureHub(Napi::Env env, AddonData* data) {
  if (data->tripwire != nullptr) return data->tripwire;
  TripwireHub* hub = LoadHub(data);
  if (hub == nullptr) {
    Napi::Error error = SystemError(env, data->tripwire_error, "bpf", "");
    error.Value().Set("stage", data->tripwire_error_stage);
    throw error;
  }
  data->tripwire = hub;
  int err = StartPolling(hub, env);
  if (err != 0) {
    TripwireShutdown(data);
    throw SystemError(env, err, "uv_poll_start", "");
  }
  return hub;
}

namespace {

void SetText(Source* source, const tripwire_event& e) {
  // Formatted on the stack and assigned into the string's kept capacity: no allocation on the
  // way to JS, where every cold cache line counts (measured under emulation).
  char text[kTripwireTextSize];
  int len = snprintf(text, sizeof text, "usage_bytes %llu\nline_bytes %llu\nfired_ns %llu\ncharge_began_ns %llu\nabove %d\n",
                     static_cast<unsigned long long>(e.usage_pages * kPageSize),
                     static_cast<unsigned long long>(e.line_pages * kPageSize), static_cast<unsigned long long>(e.ktime_ns),
                     static_cast<unsigned long long>(e.began_ns), e.direction == TRIPWIRE_UP ? 1 : 0);
  source->tripwire_text.assign(text, static_cast<size_t>(std::clamp(len, 0, static_cast<int>(sizeof text) - 1)));
}

}  // namespace

void ArmSlot(TripwireHub* hub, int slot, uint64_t cgroup_id, uint64_t line_pages, int64_t usage_pages) {
  tripwire_line* l = hub->Line(slot);
  // Off first, so the program never pairs the old direction with the new line.
  __atomic_store_n(&l->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
  uint64_t known = 0;
  bool have = usage_pages >= 0;
  if (have) {
    known = static_cast<uint64_t>(usage_pages);
  } else if (l->cgroup_id == cgroup_id && l->usage_pages != 0) {
    known = __atomic_load_n(&l->usage_pages, __ATOMIC_RELAXED);
    have = true;
  } else if (cgroup_id == 1 && hub->skel->bss->root_usage_pages != 0) {
    known = __atomic_load_n(&hub->skel->bss->root_usage_pages, __ATOMIC_RELAXED);
    have = true;
  }
  __atomic_store_n(&l->cgroup_id, cgroup_id, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->line_pages, line_pages, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->generation, l->generation + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->pending, 0u, __ATOMIC_SEQ_CST);
  // Unknown side: wait for "at or above". If usage is already there, the next charge fires at
  // once, which only wakes the agent for a fresh look.
  __u32 dir = have && known >= line_pages ? TRIPWIRE_DOWN : TRIPWIRE_UP;
  __atomic_store_n(&l->direction, dir, __ATOMIC_SEQ_CST);
}

uint64_t BytesToPages(double bytes) {
  return static_cast<uint64_t>((bytes + kPageSize - 1) / kPageSize);
}

int TripwireHub::OnRecord(void* ctx, void* record, size_t size) {
  auto* hub = static_cast<TripwireHub*>(ctx);
  if (size < sizeof(tripwire_event)) return 0;
  const auto* e = static_cast<const tripwire_event*>(record);
  if (e->slot >= TRIPWIRE_MAX_LINES) return 0;
  Source* source = hub->slots[e->slot];
  tripwire_line* l = hub->Line(static_cast<int>(e->slot));
  // Released, or re-armed since (ArmSlot reset `pending` already): stale.
  if (source == nullptr || source->closing || e->generation != l->generation) return 0;
  // Re-arm for the other side of the line as usage is NOW (the program kept updating it while
  // this event waited): a crossing back while we were busy is then caught by the next charge.
  uint64_t usage = __atomic_load_n(&l->usage_pages, __ATOMIC_RELAXED);
  __u32 dir = usage >= l->line_pages ? TRIPWIRE_DOWN : TRIPWIRE_UP;
  __atomic_store_n(&l->direction, dir, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->pending, 0u, __ATOMIC_SEQ_CST);
  SetText(source, *e);
  // A started watcher hears it in this loop turn (a relay through its eventfd would cost one
  // more turn: measured under emulation, milliseconds when the CPUs are contended). A stopped
  // one gets it counted in its eventfd, delivered on start().
  if (source->polling && source->owner != nullptr) {
    source->owner->DeliverNow(hub->now_ns);
    return 0;
  }
  uint64_t one = 1;
  // Cannot fail but for an eventfd counter overflow (2^64-2 pending signals).
  (void)WriteRetry(source->poll_fd.get(), &one, sizeof one);
  return 0;
}

void TripwireHub::OnPoll(uv_poll_t* handle, int status, int /*events*/) {
  auto* hub = static_cast<TripwireHub*>(handle->data);
  // Timestamp first, as the other watchers do: the latency reported is to this point.
  hub->now_ns = MonotonicNs();
  if (status < 0) return;  // an epoll fd of ours does not fail; the lines report their own errors
  ring_buffer__consume(hub->rb);
}

void TripwireRelease(Source* source) {
  AddonData* data = source->data;
  TripwireHub* hub = data->tripwire;
  int slot = source->tripwire_slot;
  if (hub == nullptr || slot < 0 || hub->slots[slot] != source) return;
  source->tripwire_slot = -1;
  tripwire_line* l = hub->Line(slot);
  __atomic_store_n(&l->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
  uint64_t cgroup_id = l->cgroup_id;
  int map_fd = bpf_map__fd(hub->skel->maps.watched);
  tripwire_cgroup entry = {};
  if (bpf_map_lookup_elem(map_fd, &cgroup_id, &entry) == 0) {
    tripwire_cgroup kept = {};
    for (__u32 i = 0; i < entry.count && i < TRIPWIRE_LINES_PER_CGROUP; i++) {
      if (entry.slots[i] != static_cast<__u32>(slot)) kept.slots[kept.count++] = entry.slots[i];
    }
    if (kept.count == 0)
      bpf_map_delete_elem(map_fd, &cgroup_id);
    else
      bpf_map_update_elem(map_fd, &cgroup_id, &kept, BPF_ANY);
  }
  __atomic_store_n(&l->cgroup_id, 0ull, __ATOMIC_SEQ_CST);
  hub->slots[slot] = nullptr;
  hub->lines--;
}

void TripwireShutdown(AddonData* data, bool only_if_idle) {
  TripwireHub* hub = data->tripwire;
  if (hub == nullptr || (only_if_idle && hub->lines > 0)) return;
  data->tripwire = nullptr;
  data->tripwire_closing++;
  for (Source*& s : hub->slots) {
    if (s != nullptr) s->tripwire_slot = -1;
    s = nullptr;
  }
  hub->lines = 0;
  if (!hub->poll_open) {
    DestroyHub(hub);
    return;
  }
  uv_poll_stop(&hub->poll);
  uv_close(reinterpret_cast<uv_handle_t*>(&hub->poll),
           [](uv_handle_t* handle) { DestroyHub(static_cast<TripwireHub*>(handle->data)); });
}

#endif  // EVICTD_TRIPWIRE

}  // namespace evictd
