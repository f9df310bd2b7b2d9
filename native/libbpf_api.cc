#include "libbpf_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <mutex>

namespace evictd {

namespace {

struct Opened {
  Libbpf api = {};
  bool ok = false;
  std::string why;
};

// libbpf logs to stderr by default (verifier logs included): keep the agent's output clean and
// report failures as errors; EVICTD_TRIPWIRE_DEBUG=1 shows libbpf's own lines.
int Print(enum libbpf_print_level level, const char* format, va_list args) {
  static const bool debug = getenv("EVICTD_TRIPWIRE_DEBUG") != nullptr;
  if (!debug || level == LIBBPF_DEBUG) return 0;
  return vfprintf(stderr, format, args);
}

template <typename F>
bool Find(void* lib, const char* name, F* slot, std::string* missing) {
  void* sym = dlsym(lib, name);
  if (sym == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
    return false;
  }
  *slot = reinterpret_cast<F>(sym);
  return true;
}

void Open(Opened* o) {
  const char* env = getenv("EVICTD_LIBBPF");
  const char* file = env != nullptr && *env != '\0' ? env : "libbpf.so.1";
  // RTLD_LOCAL: libbpf's symbols stay out of the process's namespace.
  void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    o->why =
        std::string(file) + " not found (Debian: apt-get install libbpf1): " + (err != nullptr ? err : "dlopen failed");
    return;
  }
  std::string missing;
  Libbpf& a = o->api;
  bool all = true;
  all &= Find(lib, "libbpf_set_print", &a.set_print, &missing);
  all &= Find(lib, "bpf_object__open_mem", &a.object_open_mem, &missing);
  all &= Find(lib, "bpf_object__load", &a.object_load, &missing);
  all &= Find(lib, "bpf_object__close", &a.object_close, &missing);
  all &= Find(lib, "bpf_object__find_map_by_name", &a.object_find_map_by_name, &missing);
  all &= Find(lib, "bpf_object__next_program", &a.object_next_program, &missing);
  all &= Find(lib, "bpf_object__find_program_by_name", &a.object_find_program_by_name, &missing);
  all &= Find(lib, "bpf_map__fd", &a.map_fd, &missing);
  all &= Find(lib, "bpf_map__value_size", &a.map_value_size, &missing);
  all &= Find(lib, "bpf_program__fd", &a.program_fd, &missing);
  all &= Find(lib, "bpf_program__attach", &a.program_attach, &missing);
  all &= Find(lib, "bpf_link__destroy", &a.link_destroy, &missing);
  all &= Find(lib, "ring_buffer__new", &a.ring_buffer_new, &missing);
  all &= Find(lib, "ring_buffer__free", &a.ring_buffer_free, &missing);
  all &= Find(lib, "ring_buffer__consume", &a.ring_buffer_consume, &missing);
  all &= Find(lib, "ring_buffer__epoll_fd", &a.ring_buffer_epoll_fd, &missing);
  all &= Find(lib, "bpf_map_lookup_elem", &a.map_lookup_elem, &missing);
  all &= Find(lib, "bpf_map_update_elem", &a.map_update_elem, &missing);
  all &= Find(lib, "bpf_map_delete_elem", &a.map_delete_elem, &missing);
  all &= Find(lib, "bpf_prog_test_run_opts", &a.prog_test_run_opts, &missing);
  if (!all) {
    // Kept open: a library that was found stays mapped for the process's life either way.
    o->why = std::string(file) + " is too old (needs libbpf 0.7 or later): it lacks " + missing;
    return;
  }
  a.set_print(Print);
  o->ok = true;
}

}  // namespace

const Libbpf* OpenLibbpf(std::string* why) {
  static Opened opened;
  static std::once_flag once;
  std::call_once(once, Open, &opened);
  if (!opened.ok && why != nullptr) *why = opened.why;
  return opened.ok ? &opened.api : nullptr;
}

}  // namespace evictd
