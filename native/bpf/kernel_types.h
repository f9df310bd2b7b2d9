// The kernel types the tripwire program reads, declared here instead of a vmlinux.h dumped from
// the build machine's BTF: the committed object then depends only on its sources and the
// compiler, so anyone with the same clang rebuilds it byte for byte (native/bpf/build.sh), and
// no build or node needs bpftool.
//
// CO-RE: every struct below carries preserve_access_index, so each field access is recorded by
// name and libbpf rewrites its offset at load time from the running kernel's BTF
// (/sys/kernel/btf/vmlinux). Only the fields the program touches are declared; their order and
// the sizes here mean nothing. Enum values are relocated by name the same way
// (bpf_core_enum_value), so the numbers below are placeholders.
#ifndef EVICTD_BPF_KERNEL_TYPES_H
#define EVICTD_BPF_KERNEL_TYPES_H

typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
// Named in the prototypes of libbpf's bpf_helper_defs.h.
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u16 __sum16;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0
#ifndef NULL
#define NULL ((void *)0)
#endif

// UAPI (include/uapi/linux/bpf.h): map types by number, and the timer the verifier finds by name.
enum bpf_map_type {
  BPF_MAP_TYPE_HASH = 1,
  BPF_MAP_TYPE_ARRAY = 2,
  BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
  BPF_ANY = 0,
  BPF_NOEXIST = 1,
  BPF_EXIST = 2,
};

struct bpf_timer {
  __u64 : 64;
  __u64 : 64;
} __attribute__((aligned(8)));

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

typedef struct {
  __s64 counter;
} atomic64_t;
typedef atomic64_t atomic_long_t;

// mm/page_counter.c walks `parent` to the root on every charge.
struct page_counter {
  atomic_long_t usage;
  struct page_counter *parent;
};

struct kernfs_node {
  __u64 id;  // the cgroup2 directory's inode number, the cgroup id
};

struct cgroup_subsys_state {
  struct cgroup *cgroup;
};

struct cgroup {
  struct kernfs_node *kn;
  struct cgroup_subsys_state *subsys[1];  // indexed by enum cgroup_subsys_id
};

struct memcg_vmstats {
  long state[1];  // indexed by enum node_stat_item (the LRU counters)
};

struct mem_cgroup {
  struct cgroup_subsys_state css;
  struct page_counter memory;
  struct memcg_vmstats *vmstats;
};

#pragma clang attribute pop

enum node_stat_item { NR_INACTIVE_FILE = 0, NR_ANON_MAPPED = 1, NR_FILE_PAGES = 2 };
enum cgroup_subsys_id { memory_cgrp_id = 0 };

#endif
