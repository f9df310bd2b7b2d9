// What JS calls on the tripwire (openTripwire, tripwireStatus, tripwireLoad) and the line table
// they and the lines drive: arming, moving and freeing a line's slot in the program's .bss and
// its cgroup's entry in the `watched` map. The program's life and its ring buffer are in
// tripwire.cc. Loop thread only.
#ifdef EVICTD_TRIPWIRE
#include <errno.h>

#include <string>

#include "addon_data.h"
#include "clock.h"
#include "errors.h"
#include "tripwire.h"
#include "tripwire_line.h"
#include "tripwire_ring.h"

namespace evictd {

namespace {

// BPF_ANY: create or replace (include/uapi/linux/bpf.h).
constexpr uint64_t kBpfAny = 0;

// A line in bytes is met when usage (whole pages) reaches it: rounded up.
uint64_t BytesToPages(double bytes) { return static_cast<uint64_t>((bytes + kPageSize - 1) / kPageSize); }

// The usage in whole pages, or -1 when unknown (negative bytes).
int64_t UsagePages(double bytes) {
  return bytes < 0 ? -1 : static_cast<int64_t>(bytes / static_cast<double>(kPageSize));
}

// Arms `slot` at `line_pages` of `measure`, on the side `usage_pages` (in that measure) gives
// (-1: unknown, then the last value the program computed for this line, or the root's counter,
// else below).
void ArmSlot(TripwireRing* ring, int slot, uint64_t cgroup_id, uint32_t measure, uint64_t line_pages,
             int64_t usage_pages) {
  tripwire_line* l = ring->Line(slot);
  // Off first, so the program never pairs the old direction with the new line.
  __atomic_store_n(&l->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
  uint64_t known = 0;
  bool have = usage_pages >= 0;
  if (have) {
    known = static_cast<uint64_t>(usage_pages);
  } else if (l->cgroup_id == cgroup_id && l->measure == measure && l->usage_pages != 0) {
    known = __atomic_load_n(&l->usage_pages, __ATOMIC_RELAXED);
    have = true;
  } else if (cgroup_id == 1 && measure == TRIPWIRE_COUNTER && ring->program.globals->root_usage_pages != 0) {
    known = __atomic_load_n(&ring->program.globals->root_usage_pages, __ATOMIC_RELAXED);
    have = true;
  }
  if (l->measure != measure) __atomic_store_n(&l->usage_pages, 0ull, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->cgroup_id, cgroup_id, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->measure, measure, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->line_pages, line_pages, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->generation, l->generation + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->pending, 0u, __ATOMIC_SEQ_CST);
  // Unknown side: wait for "at or above". If usage is already there, the next charge fires at
  // once, which only wakes the agent for a fresh look.
  __u32 dir = have && known >= line_pages ? TRIPWIRE_DOWN : TRIPWIRE_UP;
  __atomic_store_n(&l->direction, dir, __ATOMIC_SEQ_CST);
}

// Starts the program's node poll (memcg_tripwire.bpf.c) by running tripwire_start_node_poll
// through BPF_PROG_TEST_RUN: the one place it starts (never from a charge), so that the timer is
// set up in this syscall's process context. A failure is kept where tripwireStatus reads the
// program's own (nodePollError); the lines still fire on charges, and the drift tick looks.
void StartNodePoll(TripwireRing* ring) {
  bpf_test_run_opts opts = {};
  opts.sz = sizeof(opts);
  if (ring->program.bpf->prog_test_run_opts(ring->program.start_node_poll_fd, &opts) != 0) {
    ring->program.globals->node_poll_error = -errno;
  }
}

}  // namespace

Napi::Object Tripwire::Open(Napi::Env env, const std::string& dir, uint64_t cgroup_id, uint32_t measure,
                            double line_bytes, double usage_bytes, Napi::Function callback) {
  Load(env);
  TripwireRing* ring = ring_;
  int slot = -1;
  for (int i = 0; i < TRIPWIRE_MAX_LINES && slot < 0; i++) {
    if (ring->slots[i] == nullptr) slot = i;
  }
  if (slot < 0) {
    UnloadWhenIdle();
    throw SystemError(env, ENOSPC, "bpf", dir);
  }
  const Libbpf* bpf = ring->program.bpf;
  int map_fd = ring->program.watched_fd;
  tripwire_cgroup entry = {};
  if (bpf->map_lookup_elem(map_fd, &cgroup_id, &entry) != 0) entry = {};
  if (entry.count >= TRIPWIRE_LINES_PER_CGROUP) {
    UnloadWhenIdle();
    throw SystemError(env, E2BIG, "bpf", dir);
  }
  // The JS object first: if making it throws, nothing is armed yet.
  Napi::Object obj;
  TripwireLine* line = nullptr;
  try {
    obj = line_constructor_.New({});
    line = TripwireLine::Unwrap(obj);
    line->Prepare(dir, callback);
  } catch (...) {
    UnloadWhenIdle();
    throw;
  }
  ArmSlot(ring, slot, cgroup_id, measure, BytesToPages(line_bytes), UsagePages(usage_bytes));
  entry.slots[entry.count++] = static_cast<__u32>(slot);
  if (bpf->map_update_elem(map_fd, &cgroup_id, &entry, kBpfAny) != 0) {
    int err = errno;
    __atomic_store_n(&ring->Line(slot)->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
    UnloadWhenIdle();
    throw SystemError(env, err, "bpf", dir);  // the unattached object goes with the GC
  }
  line->Attach(this, slot);
  ring->slots[slot] = line;
  ring->lines++;
  if (cgroup_id == 1 && measure == TRIPWIRE_NODE_WORKING_SET) StartNodePoll(ring);
  return obj;
}

void Tripwire::Rearm(int slot, double line_bytes, double usage_bytes) {
  if (ring_ == nullptr) return;
  tripwire_line* l = ring_->Line(slot);
  ArmSlot(ring_, slot, l->cgroup_id, l->measure, BytesToPages(line_bytes), UsagePages(usage_bytes));
}

int64_t Tripwire::SetOrder(int slot, int kill_fd, const std::string& path, double ttl_ms, const std::string& memory_dir,
                           uint64_t working_set_line, const std::string& tag, int* err) {
  if (ring_ == nullptr || ring_->orders == nullptr) return -1;
  if (kill_fd < 0) {
    ring_->orders->Withdraw(slot);
    return 0;
  }
  uint64_t expires = MonotonicNs() + static_cast<uint64_t>(ttl_ms * 1e6);
  int e = 0;
  uint32_t generation = ring_->orders->Place(slot, kill_fd, path, expires, memory_dir, working_set_line, tag, &e);
  if (generation == 0 && err != nullptr) *err = e;
  return generation == 0 ? -2 : generation;
}

void Tripwire::Release(TripwireLine* line) {
  TripwireRing* ring = ring_;
  int slot = line->slot_;
  if (ring == nullptr || slot < 0 || ring->slots[slot] != line) return;
  if (ring->orders != nullptr) ring->orders->Withdraw(slot);
  line->slot_ = -1;
  tripwire_line* l = ring->Line(slot);
  __atomic_store_n(&l->direction, static_cast<__u32>(TRIPWIRE_OFF), __ATOMIC_SEQ_CST);
  uint64_t cgroup_id = l->cgroup_id;
  const Libbpf* bpf = ring->program.bpf;
  int map_fd = ring->program.watched_fd;
  tripwire_cgroup entry = {};
  if (bpf->map_lookup_elem(map_fd, &cgroup_id, &entry) == 0) {
    tripwire_cgroup kept = {};
    for (__u32 i = 0; i < entry.count && i < TRIPWIRE_LINES_PER_CGROUP; i++) {
      if (entry.slots[i] != static_cast<__u32>(slot)) kept.slots[kept.count++] = entry.slots[i];
    }
    if (kept.count == 0)
      bpf->map_delete_elem(map_fd, &cgroup_id);
    else
      bpf->map_update_elem(map_fd, &cgroup_id, &kept, kBpfAny);
  }
  __atomic_store_n(&l->cgroup_id, 0ull, __ATOMIC_SEQ_CST);
  ring->slots[slot] = nullptr;
  if (--ring->lines == 0) UnloadWhenIdle();
}

void Tripwire::FlushOrders() {
  if (ring_ != nullptr && ring_->orders != nullptr) ring_->orders->Flush();
}

Napi::Error Tripwire::LoadError(Napi::Env env) const {
  Napi::Error error = SystemError(env, error_, "bpf", "");
  error.Value().Set("stage", error_stage_);
  // libbpf.so.1 missing or too old: the one line that names what to install.
  if (!error_detail_.empty()) error.Value().Set("message", error_detail_);
  return error;
}

Napi::Object Tripwire::Status(Napi::Env env) const {
  Napi::Object status = Napi::Object::New(env);
  status.Set("built", true);
  status.Set("loaded", ring_ != nullptr);
  status.Set("lines", ring_ != nullptr ? ring_->lines : 0);
  status.Set("loadMs", load_ms_);
  status.Set("attachMs", attach_ms_);
  if (ring_ != nullptr) {
    auto* bss = ring_->program.globals;
    uint64_t root = __atomic_load_n(&bss->root_usage_pages, __ATOMIC_RELAXED);
    status.Set("rootUsageBytes",
               root == 0 ? env.Null() : Napi::Number::New(env, static_cast<double>(root * kPageSize)));
    status.Set("events", static_cast<double>(__atomic_load_n(&bss->events_emitted, __ATOMIC_RELAXED)));
    status.Set("ringbufFull", static_cast<double>(__atomic_load_n(&bss->ringbuf_full, __ATOMIC_RELAXED)));
    status.Set("orders", ring_->orders != nullptr);
    if (ring_->orders != nullptr) {
      status.Set("ordersUsed", static_cast<double>(ring_->orders->used()));
      status.Set("ordersRefused", static_cast<double>(ring_->orders->refused()));
      status.Set("ordersDropped", static_cast<double>(ring_->orders->dropped()));
    }
    status.Set("ordersFull", static_cast<double>(__atomic_load_n(&bss->orders_full, __ATOMIC_RELAXED)));
    status.Set("nodePollNs", static_cast<double>(bss->node_poll_ns));
    status.Set("nodePolls", static_cast<double>(__atomic_load_n(&bss->node_polls, __ATOMIC_RELAXED)));
    status.Set("nodePollError", static_cast<double>(bss->node_poll_error));
  }
  if (orders_error_ != 0) status.Set("ordersError", SystemError(env, orders_error_, "epoll", "").Value());
  if (error_ != 0) status.Set("error", LoadError(env).Value());
  return status;
}

namespace {

Tripwire* Of(Napi::Env env) { return env.GetInstanceData<AddonData>()->tripwire; }

// openTripwire(cgroupDir, cgroupId, measure, lineBytes, usageBytes, callback): a line on
// `measure` (enum tripwire_measure: 0 the memory counter, 1 the working set, 2 the node's
// working set) of the cgroup whose id (cgroup2 directory inode; 1 for the root) is `cgroupId`.
// `usageBytes` (in that measure, or -1) tells which side it is armed on. Throws (code, errno,
// syscall 'bpf', stage) when the program cannot be loaded here.
Napi::Value OpenTripwire(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsNumber() ||
      !info[4].IsNumber() || !info[5].IsFunction()) {
    throw Napi::TypeError::New(env, "openTripwire(cgroupDir, cgroupId, measure, lineBytes, usageBytes, callback)");
  }
  uint32_t measure = info[2].As<Napi::Number>().Uint32Value();
  if (measure > TRIPWIRE_NODE_WORKING_SET) throw Napi::RangeError::New(env, "openTripwire: measure must be 0, 1 or 2");
  return Of(env)->Open(env, info[0].As<Napi::String>().Utf8Value(),
                       static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value()), measure,
                       info[3].As<Napi::Number>().DoubleValue(), info[4].As<Napi::Number>().DoubleValue(),
                       info[5].As<Napi::Function>());
}

// tripwireStatus(): for the log line, the metric and the tests.
Napi::Value TripwireStatus(const Napi::CallbackInfo& info) { return Of(info.Env())->Status(info.Env()); }

// tripwireLoad(): loads the program now (else the first openTripwire does) and returns the
// status; throws the load error. Lets the selection decide before arming anything. The program
// stays loaded for the lines that follow (it holds no loop reference); the last line to close,
// or the environment's teardown, unloads it.
Napi::Value TripwireLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Of(env)->Load(env);
  return Of(env)->Status(env);
}

}  // namespace

void Tripwire::Init(Napi::Env env, Napi::Object exports, AddonData* data) {
  auto* tripwire = new Tripwire(data);
  data->tripwire = tripwire;
  tripwire->line_constructor_ = Napi::Persistent(TripwireLine::DefineClass(env));
  exports.Set("tripwireStatus", Napi::Function::New(env, TripwireStatus, "tripwireStatus"));
  exports.Set("tripwireLoad", Napi::Function::New(env, TripwireLoad, "tripwireLoad"));
  exports.Set("openTripwire", Napi::Function::New(env, OpenTripwire, "openTripwire"));
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
