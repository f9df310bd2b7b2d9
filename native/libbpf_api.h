// The part of libbpf's public API the tripwire uses, opened at run time from libbpf.so.1 instead
// of linked: building the addon needs no libbpf-dev, and a node without libbpf1 still loads the
// addon and says, in one line, that the tripwire is missing for that reason. Debian 12 and later
// ship libbpf1 with iproute2. Declarations follow libbpf 1.x's ABI (errors returned as NULL or
// a negative errno, errno set); the functions used are all in libbpf 0.7 and later.
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <string>

extern "C" {
struct bpf_object;
struct bpf_map;
struct bpf_program;
struct bpf_link;
struct ring_buffer;

enum libbpf_print_level { LIBBPF_WARN, LIBBPF_INFO, LIBBPF_DEBUG };
typedef int (*libbpf_print_fn_t)(enum libbpf_print_level level, const char* format, va_list args);
typedef int (*ring_buffer_sample_fn)(void* ctx, void* data, size_t size);

// Options structs are versioned by their leading size: a caller passes the prefix it knows and
// libbpf treats the rest as zero. These are prefixes of libbpf's own.
struct bpf_object_open_opts {
  size_t sz;
  const char* object_name;
};
struct bpf_test_run_opts {
  size_t sz;
  const void* data_in;
  void* data_out;
  uint32_t data_size_in;
  uint32_t data_size_out;
  const void* ctx_in;
  void* ctx_out;
  uint32_t ctx_size_in;
  uint32_t ctx_size_out;
  uint32_t retval;
};
}

namespace evictd {

struct Libbpf {
  libbpf_print_fn_t (*set_print)(libbpf_print_fn_t fn);
  bpf_object* (*object_open_mem)(const void* buf, size_t size, const bpf_object_open_opts* opts);
  int (*object_load)(bpf_object* obj);
  void (*object_close)(bpf_object* obj);
  bpf_map* (*object_find_map_by_name)(const bpf_object* obj, const char* name);
  bpf_program* (*object_next_program)(const bpf_object* obj, bpf_program* prev);
  bpf_program* (*object_find_program_by_name)(const bpf_object* obj, const char* name);
  int (*map_fd)(const bpf_map* map);
  size_t (*map_value_size)(const bpf_map* map);
  int (*program_fd)(const bpf_program* prog);
  bpf_link* (*program_attach)(const bpf_program* prog);
  int (*link_destroy)(bpf_link* link);
  ring_buffer* (*ring_buffer_new)(int map_fd, ring_buffer_sample_fn cb, void* ctx, const void* opts);
  void (*ring_buffer_free)(ring_buffer* rb);
  int (*ring_buffer_consume)(ring_buffer* rb);
  int (*ring_buffer_epoll_fd)(const ring_buffer* rb);
  int (*map_lookup_elem)(int fd, const void* key, void* value);
  int (*map_update_elem)(int fd, const void* key, const void* value, uint64_t flags);
  int (*map_delete_elem)(int fd, const void* key);
  int (*prog_test_run_opts)(int prog_fd, bpf_test_run_opts* opts);
};

// libbpf, opened once per process (EVICTD_LIBBPF names another file, for tests and for
// distributions that ship it elsewhere); null when it cannot be, with `why` saying what is
// missing in one line.
const Libbpf* OpenLibbpf(std::string* why);

}  // namespace evictd
