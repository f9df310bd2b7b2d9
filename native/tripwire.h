// The memcg tripwire: cgroup v2 memory lines watched by a BPF program on the page counters
// (native/bpf/memcg_tripwire.bpf.c). Built only when binding.gyp found clang, bpftool and
// libbpf (EVICTD_TRIPWIRE); otherwise the exports say "not built" and the TS layer falls back.
#pragma once

#include <napi.h>

#include "watcher.h"

namespace evictd {

// tripwireStatus(), openTripwire(), rearmTripwire() on `exports`.
void TripwireExports(Napi::Env env, Napi::Object exports);

// A kTripwire source is closing: its line stops firing now and its slot is freed.
void TripwireRelease(Source* source);

// Closes the environment's hub (ring buffer poll, BPF links and object): at teardown, or, with
// `only_if_idle`, once no line is left.
void TripwireShutdown(AddonData* data, bool only_if_idle = false);

}  // namespace evictd
