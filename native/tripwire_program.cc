#ifdef EVICTD_TRIPWIRE
#include "tripwire_program.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

namespace evictd {

extern const unsigned char kTripwireObject[];
extern const size_t kTripwireObjectSize;

int TripwireProgram::Load(std::string* stage, std::string* detail) {
  auto fail = [stage](int err, const char* at) {
    *stage = at;
    return err > 0 ? err : (err < 0 ? -err : EINVAL);
  };
  bpf = OpenLibbpf(detail);
  if (bpf == nullptr) return fail(ENOENT, "libbpf");
  bpf_object_open_opts opts = {};
  opts.sz = sizeof(opts);
  opts.object_name = "memcg_tripwire";
  obj = bpf->object_open_mem(kTripwireObject, kTripwireObjectSize, &opts);
  if (obj == nullptr) return fail(errno, "open");
  int err = bpf->object_load(obj);
  if (err != 0) return fail(err, "load");

  bpf_map* bss = bpf->object_find_map_by_name(obj, ".bss");
  bpf_map* watched = bpf->object_find_map_by_name(obj, "watched");
  bpf_map* events = bpf->object_find_map_by_name(obj, "events");
  bpf_map* orders = bpf->object_find_map_by_name(obj, "orders");
  bpf_program* start = bpf->object_find_program_by_name(obj, "tripwire_start_node_poll");
  if (bss == nullptr || watched == nullptr || events == nullptr || orders == nullptr || start == nullptr) {
    return fail(ENOENT, "map");
  }
  // The object and this addon must agree on the globals' layout (one struct, memcg_tripwire.h).
  if (bpf->map_value_size(bss) != sizeof(tripwire_globals)) return fail(EPROTO, "map");
  watched_fd = bpf->map_fd(watched);
  events_fd = bpf->map_fd(events);
  orders_fd = bpf->map_fd(orders);
  start_node_poll_fd = bpf->program_fd(start);
  // libbpf's own copy of .bss is private memory until a skeleton remaps it: map the kernel's.
  long page = sysconf(_SC_PAGESIZE);
  globals_map_size = (sizeof(tripwire_globals) + page - 1) / page * page;
  void* shared = mmap(nullptr, globals_map_size, PROT_READ | PROT_WRITE, MAP_SHARED, bpf->map_fd(bss), 0);
  if (shared == MAP_FAILED) return fail(errno, "map");
  globals = static_cast<tripwire_globals*>(shared);
  return 0;
}

int TripwireProgram::Attach(std::string* stage) {
  for (bpf_program* p = bpf->object_next_program(obj, nullptr); p != nullptr; p = bpf->object_next_program(obj, p)) {
    bpf_link* link = bpf->program_attach(p);
    if (link == nullptr) {
      *stage = "attach";
      return errno != 0 ? errno : EINVAL;
    }
    links.push_back(link);
  }
  return 0;
}

void TripwireProgram::Destroy() {
  for (auto it = links.rbegin(); it != links.rend(); ++it) bpf->link_destroy(*it);
  links.clear();
  if (globals != nullptr) munmap(globals, globals_map_size);
  globals = nullptr;
  if (obj != nullptr) bpf->object_close(obj);
  obj = nullptr;
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
