#include "tripwire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>

#include <string>

#include "clock.h"
#include "errors.h"
#include "off_loop.h"

#ifdef EVICTD_TRIPWIRE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "bpf/memcg_tripwire.h"
#include "memcg_tripwire.skel.h"
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

constexpr uint64_t kPageSize = 4096;

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

void SetText(Source* source, const tripwire_event& e) {
  source->tripwire_text = "usage_bytes " + std::to_string(e.usage_pages * kPageSize) + "\nline_bytes " +
                          std::to_string(e.line_pages * kPageSize) + "\nfired_ns " + std::to_string(e.ktime_ns) +
                          "\ncharge_began_ns " + std::to_string(e.began_ns) + "\nabove " +
                          (e.direction == TRIPWIRE_UP ? "1" : "0") + "\n";
}

// Arms `slot` at `line_pages`, on the side given by `usage_pages` (the usage now, or -1 when
// unknown: then the last usage the program saw for this line or for the root, else below).
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
  // A line in bytes is met when usage (whole pages) reaches it: round up.
  return static_cast<uint64_t>((bytes + kPageSize - 1) / kPageSize);
}

// openTripwire(cgroupDir, cgroupId, lineBytes, usageBytes, callback): a line on the memory
// counter of the cgroup whose id (cgroup2 directory inode; 1 for the root) is `cgroupId`.
// `usageBytes` (or -1) tells which side it is armed on. Throws (code, errno, syscall 'bpf',
// stage) when the program cannot be loaded here.
Napi::Value OpenTripwire(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsNumber() ||
      !info[4].IsFunction()) {
    throw Napi::TypeError::New(env, "openTripwire(cgroupDir, cgroupId, lineBytes, usageBytes, callback)");
  }
  std::string dir = info[0].As<Napi::String>().Utf8Value();
  uint64_t cgroup_id = static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value());
  double line_bytes = info[2].As<Napi::Number>().DoubleValue();
  double usage_bytes = info[3].As<Napi::Number>().DoubleValue();
  auto* data = env.GetInstanceData<AddonData>();
  TripwireHub* hub = EnsureHub(env, data);

  int slot = -1;
  for (int i = 0; i < TRIPWIRE_MAX_LINES; i++) {
    if (hub->slots[i] == nullptr) {
      slot = i;
      break;
    }
  }
  if (slot < 0) {
    TripwireShutdown(data, true);
    throw SystemError(env, ENOSPC, "bpf", dir);
  }
  tripwire_cgroup entry = {};
  int map_fd = bpf_map__fd(hub->skel->maps.watched);
  if (bpf_map_lookup_elem(map_fd, &cgroup_id, &entry) != 0) entry = {};
  if (entry.count >= TRIPWIRE_LINES_PER_CGROUP) {
    TripwireShutdown(data, true);
    throw SystemError(env, E2BIG, "bpf", dir);
  }
  Fd relay(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!relay.valid()) {
    int err = errno;
    TripwireShutdown(data, true);
    throw SystemError(env, err, "eventfd", dir);
  }
  ArmSlot(hub, slot, cgroup_id, BytesToPages(line_bytes),
          usage_bytes < 0 ? -1 : static_cast<int64_t>(usage_bytes / static_cast<double>(kPageSize)));
  entry.slots[entry.count++] = static_cast<__u32>(slot);
  if (bpf_map_update_elem(map_fd, &cgroup_id, &entry, BPF_ANY) != 0) {
    int err = errno;
    __atomic_store_n(&hub->Line(slot)->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
    TripwireShutdown(data, true);
    throw SystemError(env, err, "bpf", dir);
  }
  // Create closes the relay fd itself if it throws; the slot is claimed only once it returned.
  Napi::Object watcher;
  try {
    watcher = Watcher::Create(env, data, SourceKind::kTripwire, std::move(relay), dir, Fd(), "",
                              info[4].As<Napi::Function>());
  } catch (...) {
    __atomic_store_n(&hub->Line(slot)->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
    entry.count--;
    if (entry.count == 0)
      bpf_map_delete_elem(map_fd, &cgroup_id);
    else
      bpf_map_update_elem(map_fd, &cgroup_id, &entry, BPF_ANY);
    TripwireShutdown(data, true);
    throw;
  }
  Source* source = Watcher::Unwrap(watcher)->source();
  source->tripwire_slot = slot;
  hub->slots[slot] = source;
  hub->lines++;
  return watcher;
}

// rearmTripwire(watcher, lineBytes, usageBytes): moves the line in place. No registration, no
// grace period: the program reads the new line at the next charge.
Napi::Value RearmTripwire(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsObject() || !info[1].IsNumber() || !info[2].IsNumber()) {
    throw Napi::TypeError::New(env, "rearmTripwire(watcher, lineBytes, usageBytes)");
  }
  Watcher* watcher = Watcher::Unwrap(info[0].As<Napi::Object>());
  Source* source = watcher->source();
  auto* data = env.GetInstanceData<AddonData>();
  if (source == nullptr || source->closing || source->kind != SourceKind::kTripwire || source->tripwire_slot < 0 ||
      data->tripwire == nullptr) {
    throw Napi::Error::New(env, "tripwire watcher is closed");
  }
  TripwireHub* hub = data->tripwire;
  double usage_bytes = info[2].As<Napi::Number>().DoubleValue();
  tripwire_line* l = hub->Line(source->tripwire_slot);
  ArmSlot(hub, source->tripwire_slot, l->cgroup_id, BytesToPages(info[1].As<Napi::Number>().DoubleValue()),
          usage_bytes < 0 ? -1 : static_cast<int64_t>(usage_bytes / static_cast<double>(kPageSize)));
  return env.Undefined();
}

// tripwireStatus(): { built, loaded, lines, loadMs, attachMs, rootUsageBytes, events, ringbufFull,
// error? } for the log line, the metric and the tests.
Napi::Value TripwireStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* data = env.GetInstanceData<AddonData>();
  Napi::Object status = Napi::Object::New(env);
  status.Set("built", true);
  TripwireHub* hub = data->tripwire;
  status.Set("loaded", hub != nullptr);
  status.Set("lines", hub != nullptr ? hub->lines : 0);
  status.Set("loadMs", data->tripwire_load_ms);
  status.Set("attachMs", data->tripwire_attach_ms);
  if (hub != nullptr) {
    uint64_t root = __atomic_load_n(&hub->skel->bss->root_usage_pages, __ATOMIC_RELAXED);
    status.Set("rootUsageBytes",
               root == 0 ? env.Null() : Napi::Number::New(env, static_cast<double>(root * kPageSize)));
    status.Set("events", static_cast<double>(__atomic_load_n(&hub->skel->bss->events_emitted, __ATOMIC_RELAXED)));
    status.Set("ringbufFull", static_cast<double>(__atomic_load_n(&hub->skel->bss->ringbuf_full, __ATOMIC_RELAXED)));
  }
  if (data->tripwire_error != 0) {
    Napi::Error error = SystemError(env, data->tripwire_error, "bpf", "");
    error.Value().Set("stage", data->tripwire_error_stage);
    status.Set("error", error.Value());
  }
  return status;
}

// tripwireLoad(): loads the program now (else the first openTripwire does) and returns the
// status; throws the load error. Lets the selection decide before arming anything.
Napi::Value TripwireLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // The hub stays loaded for the lines that follow (it holds no loop reference); the last line
  // to close, or the environment's teardown, unloads it.
  EnsureHub(env, env.GetInstanceData<AddonData>());
  return TripwireStatus(info);
}

}  // namespace

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

void TripwireExports(Napi::Env env, Napi::Object exports) {
  exports.Set("tripwireStatus", Napi::Function::New(env, TripwireStatus, "tripwireStatus"));
  exports.Set("tripwireLoad", Napi::Function::New(env, TripwireLoad, "tripwireLoad"));
  exports.Set("openTripwire", Napi::Function::New(env, OpenTripwire, "openTripwire"));
  exports.Set("rearmTripwire", Napi::Function::New(env, RearmTripwire, "rearmTripwire"));
}

#endif  // EVICTD_TRIPWIRE

}  // namespace evictd
