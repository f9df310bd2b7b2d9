// The tripwire's BPF side: the committed CO-RE object (native/bpf/build.sh), carried in the
// addon as bytes (native/bpf/embed.js), opened through libbpf.so.1 at run time, loaded, its
// programs attached and its globals mapped read-write. Only built with EVICTD_TRIPWIRE.
#pragma once

#ifdef EVICTD_TRIPWIRE
#include <linux/types.h>

#include <string>
#include <vector>

#include "bpf/memcg_tripwire.h"
#include "libbpf_api.h"

namespace evictd {

struct TripwireProgram {
  const Libbpf* bpf = nullptr;
  bpf_object* obj = nullptr;
  std::vector<bpf_link*> links;
  tripwire_globals* globals = nullptr;  // the program's .bss, shared with it
  size_t globals_map_size = 0;
  int watched_fd = -1;
  int events_fd = -1;
  int orders_fd = -1;
  int start_node_poll_fd = -1;

  // Opens and loads the object (the verifier runs here). 0, or a positive errno with `stage`
  // ("libbpf": not available here, `detail` says why; "open", "load", "map") set.
  int Load(std::string* stage, std::string* detail);
  // Attaches every program (fentry/fexit on the page counters, and the node poll's starter).
  int Attach(std::string* stage);
  // Detaches, unmaps and closes; safe on a half-loaded program. Waits for RCU grace periods
  // (fexit detach): callers run it off the loop.
  void Destroy();
};

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
