// Shared between the BPF program (memcg_tripwire.bpf.c) and the addon (tripwire.cc): the
// line table both sides write, and the ring buffer record. Plain fixed-size fields only.
#ifndef EVICTD_MEMCG_TRIPWIRE_H
#define EVICTD_MEMCG_TRIPWIRE_H

// Lines armed at once in one environment (a node line, a pods line and a few pod lines per
// threshold are typical).
#define TRIPWIRE_MAX_LINES 256
// Lines on one cgroup (one per threshold of a signal: hard and soft).
#define TRIPWIRE_LINES_PER_CGROUP 8
// Levels walked from the charged counter towards the root: a kubepods pod container sits at
// depth 4-6 (kubepods/burstable/pod<uid>/<container>, or their .slice/.scope names), plus the
// root itself.
#define TRIPWIRE_MAX_DEPTH 12

// What a line waits for. The addon flips it after each event, so every crossing is reported
// once in each direction, as memcg v1 thresholds do.
enum tripwire_direction {
  TRIPWIRE_OFF = 0,
  TRIPWIRE_UP = 1,    // fire when usage >= line
  TRIPWIRE_DOWN = 2,  // fire when usage < line
};

// What a line compares with its line, in pages. The kubelet's memory signals are
// available = capacity - working set, so "available < threshold" is "working set > capacity -
// threshold": the addon arms working-set lines at capacity - threshold and the program computes
// the working set at each charge, exactly where the kubelet's own numbers come from.
enum tripwire_measure {
  // The cgroup's page counter (memory.current; the root's has no file).
  TRIPWIRE_COUNTER = 0,
  // A cgroup's working set: counter - inactive_file (memory.stat's hierarchical inactive_file as
  // the kernel last flushed it: memcg statistics are folded lazily, see the .bpf.c).
  TRIPWIRE_WORKING_SET = 1,
  // The node's working set as the kubelet computes it on cgroup v2, where the root has no
  // memory.current: anon + file - inactive_file (the root's memory.stat, as runc's
  // rootStatsFromMeminfo reads it for cAdvisor), here from the machine's own counters of the
  // same pages (AnonPages, the page cache, Inactive(file)), which fold in bounded per-CPU
  // batches where the root memcg's fold lazily. Armed on the root cgroup (every charge walks up
  // to the root's counter).
  TRIPWIRE_NODE_WORKING_SET = 2,
};

// One line. The addon owns every field but `usage_pages` and `pending`, and writes them through
// the mmap'd .bss; the program only writes `usage_pages` (the line's measure as last computed,
// for re-arming) and
// sets `pending` 0 -> 1 with a compare-and-swap. While `pending` is 1 the program emits nothing
// more for this line: at most one event per line is in flight, however fast usage oscillates.
struct tripwire_line {
  __u64 cgroup_id;
  __u64 line_pages;
  __u64 usage_pages;
  __u32 direction;
  __u32 pending;
  // Bumped by the addon each time the slot is (re)armed: an event from an older arming is
  // recognised as stale.
  __u32 generation;
  __u32 measure;  // enum tripwire_measure
  // The line's standing order (native/tripwire_orders.h): while `order_generation` is non-zero
  // and the clock is before `order_expires_ns`, the first charge that takes the measure to or
  // past the line plus `order_bias_pages` (whatever `direction` waits for) sets `order_fired`
  // 0 -> 1 and emits an order event to the `orders` ring buffer, which a thread of the addon
  // consumes at once. The program never kills: its measure may be stale (a memcg's statistics
  // are folded lazily), so the thread reads the kubelet's numbers fresh and kills only when they
  // are past the line. When they are not, it sets `order_bias_pages` to how far the program's
  // measure was ahead of the fresh one and `order_fired` back to 0: the order fires again once
  // the measure has moved that much further, or, once the measure has been below the line again
  // (the program then clears the bias), at its next crossing. The addon writes these four; the
  // program only sets `order_fired` and clears `order_bias_pages`.
  __u64 order_expires_ns;
  __u32 order_generation;
  __u32 order_fired;
  __u64 order_bias_pages;
};

// The slots of the lines on one cgroup, keyed by cgroup id (the cgroup2 directory's inode).
// The program's globals, one struct so that the program and the addon agree on the layout: it is
// the program's only global, its .bss, which the addon maps read-write after the load.
struct tripwire_globals {
  // The addon writes the lines (tripwire_methods.cc); the program reads them and writes
  // usage_pages, pending and order_fired.
  struct tripwire_line lines[TRIPWIRE_MAX_LINES];
  // The root memcg's counter as last seen by any charge or uncharge: the addon reads it to arm a
  // line on the root on the right side, since user space has no file that shows this counter.
  __u64 root_usage_pages;
  // Events emitted (the storm test counts them).
  __u64 events_emitted;
  // Events dropped because the ring buffer was full (the line is retried on the next charge).
  __u64 ringbuf_full;
  // Order events dropped because `orders` was full (the order stays unfired: the next charge retries).
  __u64 orders_full;
  // The node poll's period, written by the addon before attaching (0: no poll).
  __u64 node_poll_ns;
  // The polls the node poll made, and the last error starting it.
  __u64 node_polls;
  __s64 node_poll_error;
  // 1 while the node poll's timer runs (or is being started).
  __u32 node_poll_running;
  __u32 pad;
};

struct tripwire_cgroup {
  __u32 count;
  __u32 slots[TRIPWIRE_LINES_PER_CGROUP];
};

// One crossing, through the ring buffer.
struct tripwire_event {
  __u64 cgroup_id;
  __u64 usage_pages;  // the line's measure right after the charge or uncharge that crossed
  __u64 line_pages;
  __u64 ktime_ns;  // bpf_ktime_get_ns() when the program saw the crossing: CLOCK_MONOTONIC
  // When the charge that crossed began (its fentry), the earliest moment anyone could see the
  // counter past the line; ktime_ns for an uncharge (no fentry there).
  __u64 began_ns;
  __u32 slot;
  __u32 generation;
  __u32 direction;  // the direction that fired
  __u32 pad;
};

// A standing order used, through the `orders` ring buffer.
struct tripwire_order_event {
  __u64 cgroup_id;
  __u64 usage_pages;  // the line's measure after the crossing charge
  __u64 line_pages;
  __u64 ktime_ns;  // when the program saw the crossing (CLOCK_MONOTONIC)
  __u64 began_ns;  // when the crossing charge began (its fentry)
  __u32 slot;
  __u32 order_generation;
};

#endif
