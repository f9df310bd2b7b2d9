// The tripwire's N-API methods: openTripwire, rearmTripwire, tripwireStatus, tripwireLoad. The
// hub they drive (load, ring buffer, release) is in tripwire.cc.
#ifdef EVICTD_TRIPWIRE
#include <errno.h>
#include <sys/eventfd.h>

#include <string>

#include <bpf/bpf.h>

#include "errors.h"
#include "tripwire.h"
#include "tripwire_hub.h"

namespace evictd {

namespace {

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

void TripwireExports(Napi::Env env, Napi::Object exports) {
  exports.Set("tripwireStatus", Napi::Function::New(env, TripwireStatus, "tripwireStatus"));
  exports.Set("tripwireLoad", Napi::Function::New(env, TripwireLoad, "tripwireLoad"));
  exports.Set("openTripwire", Napi::Function::New(env, OpenTripwire, "openTripwire"));
  exports.Set("rearmTripwire", Napi::Function::New(env, RearmTripwire, "rearmTripwire"));
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
