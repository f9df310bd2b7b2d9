// SPDX-License-Identifier: GPL-2.0
// The memcg tripwire: tells user space the moment a cgroup's memory counter crosses a line.
//
// cgroup v2 has no usage threshold notification (v1's cgroup.event_control thresholds are
// gone), so this hooks the page counter itself. memcg charges reach the counters in batches:
// each CPU keeps a stock and refills it 64 pages at a time (MEMCG_CHARGE_BATCH), so
// page_counter_try_charge runs once per 256 KiB charged per CPU, not per fault; measured in the
// lab, an fexit there costs nothing measurable while a hook on try_charge_memcg (every fault)
// cost 17-36%. The counter walk in page_counter_try_charge updates every ancestor's counter,
// the root's included (mm/page_counter.c), so one hook sees every level: a pod, the pod cgroup
// root, and the cgroup v2 root, which has no memory.current of its own.
//
// A line compares a counter, or the kubelet's own working set computed at that charge (see
// enum tripwire_measure): reclaim uncharges and anonymous charges both pass here, so a
// memory.available line fires within one charge batch of the kubelet's number crossing it, even
// where usage stays flat while page cache turns into anonymous memory.
//
// GPL: the program calls GPL-only helpers (bpf_probe_read_kernel via BPF_CORE_READ).
#include "kernel_types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "memcg_tripwire.h"

char LICENSE[] SEC("license") = "GPL";

// The program's only global: the line table and counters the addon maps (memcg_tripwire.h).
struct tripwire_globals tw;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, TRIPWIRE_MAX_LINES);
  __type(key, __u64);  // cgroup id: kernfs node id, the inode number of the cgroup2 directory
  __type(value, struct tripwire_cgroup);
} watched SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  // One event per line is in flight at most (the pending flag): 256 lines * 56 bytes fit.
  __uint(max_entries, 64 * 1024);
} events SEC(".maps");

// Standing orders used (one per placed order at most: `order_fired`), for the addon's order
// thread; apart from `events` so that a busy JS loop never sits between a crossing and its kill.
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096 * 4);
} orders SEC(".maps");

// When the charge running on a task began (fentry), so an event can say when the crossing
// charge started as well as when the program saw it: the counter is updated inside the charge,
// before fexit runs, and a reader of memory.current on another CPU can see the new value in
// between (under emulation, tens of microseconds). `depth` covers a charge nested in another
// on the same task (an interrupt charging kmem): the outer start stays, which is earlier.
struct charge_start {
  __u64 ns;
  __u32 depth;
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);  // thread id
  __type(value, struct charge_start);
} charging SEC(".maps");

static __always_inline void charge_begins(void) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct charge_start *s = bpf_map_lookup_elem(&charging, &tid);
  if (s) {
    s->depth++;
    return;
  }
  struct charge_start fresh = {.ns = bpf_ktime_get_ns(), .depth = 1};
  bpf_map_update_elem(&charging, &tid, &fresh, BPF_NOEXIST);
}

// The start of the charge now ending on this task (0 when unknown: the map was full), and
// forgets it once the outermost charge ends.
static __always_inline __u64 charge_ends(void) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct charge_start *s = bpf_map_lookup_elem(&charging, &tid);
  if (!s) return 0;
  __u64 ns = s->ns;
  if (s->depth <= 1)
    bpf_map_delete_elem(&charging, &tid);
  else
    s->depth--;
  return ns;
}

// The machine's page counters are plain kernel arrays of atomic_long_t: vm_node_stat
// [NR_ANON_MAPPED] (AnonPages), [NR_FILE_PAGES] (the page cache, shmem and buffers included),
// [NR_INACTIVE_FILE] (Inactive(file)). Untyped ksym: libbpf takes its address from
// /proc/kallsyms (Debian's BTF describes per-CPU variables only), and CO-RE gives the indexes
// from the running kernel's enum. Per-CPU deltas fold into this array in bounded batches
// (vmstat's stat_threshold), for /proc/meminfo's reader as for this one.
extern const void vm_node_stat __ksym;

static __always_inline __u64 read_stat(const void *array, __u32 index) {
  long v = 0;
  bpf_probe_read_kernel(&v, sizeof(v), (const char *)array + index * sizeof(long));
  return v > 0 ? (__u64)v : 0;  // a fold in progress can leave a global briefly negative
}

// anon + file - inactive_file, pages: the kubelet's node working set on cgroup v2 (runc's
// rootStatsFromMeminfo: usage = the root memory.stat's anon + file; cAdvisor subtracts
// inactive_file). The root memcg's own statistics of these pages are folded lazily (up to 2 s);
// the machine's counters of the same pages are not, and hold what no memcg was charged for too,
// so this is at or a little above the kubelet's number: a trigger that may come early, never
// late. The order thread confirms every kill on the root's memory.stat, read fresh.
static __always_inline __u64 node_working_set(void) {
  const __u32 anon = bpf_core_enum_value(enum node_stat_item, NR_ANON_MAPPED);
  const __u32 file = bpf_core_enum_value(enum node_stat_item, NR_FILE_PAGES);
  const __u32 inactive_file = bpf_core_enum_value(enum node_stat_item, NR_INACTIVE_FILE);
  __u64 usage = read_stat(&vm_node_stat, anon) + read_stat(&vm_node_stat, file);
  __u64 inactive = read_stat(&vm_node_stat, inactive_file);
  return inactive < usage ? usage - inactive : 0;
}

// A memcg's hierarchical inactive_file, pages, as memory.stat shows it: vmstats->state, which
// the kernel folds from per-CPU deltas lazily (rstat: on a memory.stat read, in reclaim, when
// enough updates pile up, and every 2 s). Between folds it lags the truth by the pending updates;
// the kernel suite measures the gap. NR_INACTIVE_FILE indexes `state` directly on 6.1 and keeps
// index 2 in the compacted table of later kernels (memcg_node_stat_items starts with the LRUs).
static __always_inline __u64 memcg_inactive_file(__u64 vmstats_addr) {
  const __u32 inactive_file = bpf_core_enum_value(enum node_stat_item, NR_INACTIVE_FILE);
  if (!vmstats_addr) return 0;
  return read_stat((const char *)vmstats_addr + bpf_core_field_offset(struct memcg_vmstats, state), inactive_file);
}

// The value a line compares: its cgroup's counter, or a working set computed from it.
//
// This, use_order and check_lines are global (not inlined) functions: the verifier checks each
// once, on its own, instead of once per unrolled iteration of the callers' loops (inlined, the
// load took 13 s on the lab's emulated CPUs instead of 0.2 s). Global functions take scalars:
// the memcg's statistics travel as the address read from memcg->vmstats.
__noinline __u64 measure(__u32 kind, __u64 usage, __u64 vmstats_addr) {
  if (kind == TRIPWIRE_NODE_WORKING_SET) return node_working_set();
  if (kind == TRIPWIRE_WORKING_SET) {
    __u64 inactive = memcg_inactive_file(vmstats_addr);
    return inactive < usage ? usage - inactive : 0;
  }
  return usage;
}

// A line's standing order, once: independent of the line's own event (which may still be pending
// while JS is busy), so the kill never waits for the loop. The program only tells the addon's
// order thread, which reads the kubelet's numbers fresh and kills: this measure may be stale.
// The record is reserved before the order is marked used, and a full ring is counted: a crossing
// the thread never hears of is never a kill it did not report.
__noinline int use_order(__u32 slot, __u64 value, __u64 line, __u64 began_ns) {
  if (slot >= TRIPWIRE_MAX_LINES) return 0;
  struct tripwire_line *l = &tw.lines[slot];
  __u64 now = bpf_ktime_get_ns();
  if (now >= l->order_expires_ns) return 0;
  __u32 generation = l->order_generation;
  if (__sync_val_compare_and_swap(&l->order_fired, 0, 1) != 0) return 0;
  struct tripwire_order_event *e = bpf_ringbuf_reserve(&orders, sizeof(*e), 0);
  if (!e) {
    __sync_fetch_and_add(&tw.orders_full, 1);
    l->order_fired = 0;
    return 0;
  }
  e->cgroup_id = l->cgroup_id;
  e->usage_pages = value;
  e->line_pages = line;
  e->ktime_ns = now;
  e->began_ns = began_ns ? began_ns : now;
  e->slot = slot;
  e->order_generation = generation;
  bpf_ringbuf_submit(e, 0);
  return 1;
}

// `flags`: CHECK_NODE_ONLY from the node poll, which has only the node's counters fresh.
#define CHECK_NODE_ONLY 2

__noinline int check_lines(__u64 cgroup_id, __u64 usage, __u64 vmstats_addr, __u64 began_ns, __u32 flags) {
  struct tripwire_cgroup *cg = bpf_map_lookup_elem(&watched, &cgroup_id);
  if (!cg) return 0;
  for (int i = 0; i < TRIPWIRE_LINES_PER_CGROUP; i++) {
    if (i >= cg->count) break;
    __u32 slot = cg->slots[i];
    if (slot >= TRIPWIRE_MAX_LINES) continue;
    struct tripwire_line *l = &tw.lines[slot];
    if (l->cgroup_id != cgroup_id) continue;  // slot being re-armed for another cgroup
    if ((flags & CHECK_NODE_ONLY) && l->measure != TRIPWIRE_NODE_WORKING_SET) continue;
    __u64 value = measure(l->measure, usage, vmstats_addr);
    l->usage_pages = value;
    __u32 dir = l->direction;
    __u64 line = l->line_pages;
    // A refused order's bias (memcg_tripwire.h) holds while the measure stays past the line, as a
    // gap that does not close (page cache on a counter line, pages no memcg was charged for on the
    // node's); once the measure is below the line again, the gap closed (the thread's read of
    // memory.stat folded the statistics the measure lagged on) and the next crossing is checked.
    __u64 bias = l->order_bias_pages;
    if (bias != 0 && value < line) {
      l->order_bias_pages = 0;
      bias = 0;
    }
    if (l->order_generation != 0 && value >= line + bias) use_order(slot, value, line, began_ns);
    bool hit = (dir == TRIPWIRE_UP && value >= line) || (dir == TRIPWIRE_DOWN && value < line);
    if (!hit) continue;
    if (__sync_val_compare_and_swap(&l->pending, 0, 1) != 0) continue;
    struct tripwire_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
      __sync_fetch_and_add(&tw.ringbuf_full, 1);
      l->pending = 0;
      continue;
    }
    e->cgroup_id = cgroup_id;
    e->usage_pages = value;
    e->line_pages = line;
    e->ktime_ns = bpf_ktime_get_ns();
    e->began_ns = began_ns ? began_ns : e->ktime_ns;
    e->slot = slot;
    e->generation = l->generation;
    e->direction = dir;
    e->pad = 0;
    bpf_ringbuf_submit(e, 0);
    __sync_fetch_and_add(&tw.events_emitted, 1);
  }
  return 0;
}

// The node poll. The node's working set also moves without any charge: reclaim activates
// referenced page cache (Inactive(file) falls, nothing is charged), kernel allocations outside
// any memcg take free pages, and a task stalled in direct reclaim charges nothing until it
// returns (measured in the lab's race: the kubelet's signal 100 ms past the line before the next
// charge). So while the root has lines, a BPF timer re-checks the node's lines every
// `node_poll_ns` in the kernel: no thread wakes unless a line is crossed. Started only by the
// addon when it arms a root line (tripwire_start_node_poll, in the addon's own syscall), never
// from a charge: bpf_timer_init allocates, and an allocation inside memcg charging is a context
// the kernel has had to fix (Debian's 6.1 carries "bpf: Tell memcg to use allow_spinning=false
// path in bpf_timer_init()"). It stops itself when the root has no lines left.
#define CLOCK_MONOTONIC 1
struct node_poll {
  struct bpf_timer timer;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct node_poll);
} node_poll_timer SEC(".maps");

static int node_poll_fire(void *map, __u32 *key, struct node_poll *p) {
  __u64 root = 1;  // the cgroup2 root's id
  __u64 period = tw.node_poll_ns;
  if (period == 0) {
    tw.node_poll_running = 0;
    return 0;
  }
  if (!bpf_map_lookup_elem(&watched, &root)) {
    // Stop, then look again: a root line armed between the lookup above and the stop found the
    // poll running and did not start it (node_poll_ensure); it is seen here, and the poll goes on.
    __sync_val_compare_and_swap(&tw.node_poll_running, 1, 0);
    if (!bpf_map_lookup_elem(&watched, &root)) return 0;
    if (__sync_val_compare_and_swap(&tw.node_poll_running, 0, 1) != 0) return 0;  // restarted already
  }
  check_lines(root, tw.root_usage_pages, 0, 0, CHECK_NODE_ONLY);
  __sync_fetch_and_add(&tw.node_polls, 1);
  bpf_timer_start(&p->timer, period, 0);
  return 0;
}

static __always_inline void node_poll_ensure(void) {
  if (tw.node_poll_ns == 0) return;
  if (__sync_val_compare_and_swap(&tw.node_poll_running, 0, 1) != 0) return;
  __u32 key = 0;
  struct node_poll *p = bpf_map_lookup_elem(&node_poll_timer, &key);
  if (!p) return;
  long err = bpf_timer_init(&p->timer, &node_poll_timer, CLOCK_MONOTONIC);
  if (err == -16 /* EBUSY: initialised already */) err = 0;
  if (!err) err = bpf_timer_set_callback(&p->timer, node_poll_fire);
  if (!err) err = bpf_timer_start(&p->timer, tw.node_poll_ns, 0);
  if (err) {
    tw.node_poll_error = err;
    tw.node_poll_running = 0;  // the next root line's start tries again
  }
}

// The addon starts the node poll when it arms a line on the root: it runs this program through
// BPF_PROG_TEST_RUN, which calls bpf_fentry_test1 (net/bpf/test_run.c), the kernel's own entry
// point for running fentry programs on demand, in the addon's process context.
SEC("fentry/bpf_fentry_test1")
int BPF_PROG(tripwire_start_node_poll, int a) {
  __u64 root = 1;
  if (bpf_map_lookup_elem(&watched, &root)) node_poll_ensure();
  return 0;
}

// Called after `counter` and its ancestors changed. page_counter_try_charge also serves the
// swap counter (memcg->swap, v2), v1's memsw/kmem/tcpmem and the hugetlb controller: only a
// memcg's `memory` counter is wanted. container_of as if it were memory, then check that the
// result is really a memory css: its cgroup's memory css must point back at it. For any other
// counter the "memcg" is off by the distance between the fields and the check fails (reads
// through a wrong pointer are probe reads: they fail, they do not fault).
static __always_inline void counter_changed(struct page_counter *counter, __u64 began_ns) {
  const __u64 memory_off = bpf_core_field_offset(struct mem_cgroup, memory);
  const __u64 css_off = bpf_core_field_offset(struct mem_cgroup, css);
  const int memory_id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
  struct mem_cgroup *memcg = (struct mem_cgroup *)((__u64)counter - memory_off);
  struct cgroup *cgrp = BPF_CORE_READ(memcg, css.cgroup);
  if (!cgrp) return;
  struct cgroup_subsys_state *css = NULL;
  const __u64 subsys_off = bpf_core_field_offset(struct cgroup, subsys);
  if (bpf_probe_read_kernel(&css, sizeof(css), (void *)((__u64)cgrp + subsys_off + memory_id * sizeof(css))) != 0)
    return;
  if ((__u64)css != (__u64)memcg + css_off) return;

  // A memory counter: its parents are the ancestors' memory counters (page_counter_init with
  // &parent->memory in mem_cgroup_css_alloc).
  struct page_counter *c = counter;
  for (int depth = 0; depth < TRIPWIRE_MAX_DEPTH; depth++) {
    if (!c) break;
    __u64 usage = BPF_CORE_READ(c, usage.counter);
    struct page_counter *parent = BPF_CORE_READ(c, parent);
    if (!parent) tw.root_usage_pages = usage;
    memcg = (struct mem_cgroup *)((__u64)c - memory_off);
    __u64 id = BPF_CORE_READ(memcg, css.cgroup, kn, id);
    // Only a watched cgroup costs the read of its statistics' address.
    if (bpf_map_lookup_elem(&watched, &id)) {
      check_lines(id, usage, (__u64)BPF_CORE_READ(memcg, vmstats), began_ns, 0);
    }
    c = parent;
  }
}

// Charges: the stock refill path (try_charge_memcg), once per batch per CPU.
SEC("fentry/page_counter_try_charge")
int BPF_PROG(tripwire_try_charge_begins, struct page_counter *counter, unsigned long nr_pages, struct page_counter **fail) {
  charge_begins();
  return 0;
}

SEC("fexit/page_counter_try_charge")
int BPF_PROG(tripwire_try_charge, struct page_counter *counter, unsigned long nr_pages, struct page_counter **fail,
             bool ret) {
  __u64 began = charge_ends();
  if (ret) counter_changed(counter, began);
  return 0;
}

// Forced charges that may exceed the limit (__GFP_NOFAIL, socket memory, kmem on some paths).
SEC("fentry/page_counter_charge")
int BPF_PROG(tripwire_charge_begins, struct page_counter *counter, unsigned long nr_pages) {
  charge_begins();
  return 0;
}

SEC("fexit/page_counter_charge")
int BPF_PROG(tripwire_charge, struct page_counter *counter, unsigned long nr_pages) {
  counter_changed(counter, charge_ends());
  return 0;
}

// Uncharges (freed pages, a drained stock): the line is crossed downwards here.
SEC("fexit/page_counter_uncharge")
int BPF_PROG(tripwire_uncharge, struct page_counter *counter, unsigned long nr_pages) {
  counter_changed(counter, 0);
  return 0;
}
