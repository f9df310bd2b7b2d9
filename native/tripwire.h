// The memcg tripwire: cgroup v2 memory lines watched by a BPF program on the page counters
// (native/bpf/memcg_tripwire.bpf.c). One object per environment, beside its watchers: it loads
// the program for the first line and unloads it after the last, polls the program's ring buffer
// with its one uv_poll_t, and hands each record to the line it belongs to (a TripwireLine,
// tripwire_line.h) in that same callback: no relay and no handle per line. Built on Linux from
// the committed CO-RE object (EVICTD_TRIPWIRE, binding.gyp; no BPF toolchain needed), with
// libbpf.so.1 opened at run time; where it is left out or cannot load, Init's status says why
// and the TS layer falls back. Everything here runs on the environment's loop thread.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "tripwire_line.h"

namespace evictd {

struct AddonData;
struct TripwireRing;

class Tripwire final : public TripwireLineHost {
 public:
  // Exports tripwireStatus() and, where built, tripwireLoad() and openTripwire(); where built,
  // makes the environment's tripwire (data->tripwire).
  static void Init(Napi::Env env, Napi::Object exports, AddonData* data);

  // Loads and attaches the program and starts polling its ring buffer, unless it is loaded;
  // throws the failure (code, errno, syscall 'bpf', stage). On the JS thread: verification
  // takes 140-230 ms and the fexit attach 50-190 ms on emulated CPUs, once per load.
  void Load(Napi::Env env);
  // A line on `measure` (enum tripwire_measure) of the cgroup `cgroup_id` (cgroup2 directory
  // inode, 1 for the root), armed on the side `usage_bytes` says (-1: unknown). Returns its JS
  // object, not yet started, or throws.
  Napi::Object Open(Napi::Env env, const std::string& dir, uint64_t cgroup_id, uint32_t measure, double line_bytes,
                    double usage_bytes, Napi::Function callback);
  // Moves an open line in place: the program reads it at the next charge (no registration, no
  // grace period).
  void Rearm(int slot, double line_bytes, double usage_bytes) override;
  // Places `slot`'s standing order (kill_fd: an open cgroup.kill, owned from now on) for
  // `ttl_ms`, confirmed at the kill on the working set of `memory_dir` read fresh against
  // `working_set_line` bytes, or with kill_fd -1 withdraws it. Returns the order's generation
  // (0: withdrawn), -1 when this load has no order thread (kill_fd left open), or -2 with *err
  // set when the cgroup's files cannot be opened (kill_fd closed).
  int64_t SetOrder(int slot, int kill_fd, const std::string& path, double ttl_ms, const std::string& memory_dir,
                   uint64_t working_set_line, const std::string& tag, int* err) override;
  // { built, loaded, lines, loadMs, attachMs, rootUsageBytes, events, ringbufFull, error? }
  Napi::Object Status(Napi::Env env) const;
  // The last load's failure as a JS error (code, errno, syscall 'bpf', stage).
  Napi::Error LoadError(Napi::Env env) const;
  // Delivers the standing orders' uses written so far, now (TripwireOrders::Flush).
  void FlushOrders();

  // What a line tells its tripwire. Release: the line stops firing now and frees its slot.
  // Hold: it starts or stops holding the loop (started, ref'd and open). Later: run its
  // RunLater() on the next loop turn. Forget: its object is finalized while still attached.
  void Release(TripwireLine* line) override;
  void Hold(bool holds) override;
  void Later(TripwireLine* line) override;
  void Forget(TripwireLine* line) override;

  // The environment is going away: every line ends without running JS and the program is
  // unloaded, its BPF object freed from the last handle's close callback.
  void Teardown();
  // A program is loaded, or one is still being unloaded: the environment's data waits for it.
  bool Busy() const { return ring_ != nullptr || unloading_ > 0; }
  // The instance data is being finalized: the JS references held here go first.
  void Finalize() { line_constructor_.Reset(); }

 private:
  friend struct TripwireRing;

  explicit Tripwire(AddonData* data) : data_(data) {}
  TripwireRing* LoadRing();
  void UnloadWhenIdle();
  void Unload();
  void FailLines(int status);
  static void Destroy(TripwireRing* ring);

  AddonData* data_;
  Napi::FunctionReference line_constructor_;
  TripwireRing* ring_ = nullptr;  // the loaded program, or null
  int unloading_ = 0;             // programs whose handles or BPF object are still being freed
  // The last load, reported by tripwireStatus() even once unloaded: the failure (errno and
  // stage), or the verification and attach times.
  int error_ = 0;
  std::string error_stage_;
  std::string error_detail_;  // for stage "libbpf": what is missing, in one line
  int orders_error_ = 0;      // why the last load has no order thread (errno), 0 when it has one
  double load_ms_ = 0;
  double attach_ms_ = 0;
};

}  // namespace evictd
