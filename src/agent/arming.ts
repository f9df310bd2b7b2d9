/**
 * Arms the kernel notifications that wake the loop, and re-arms them after every pass with the
 * numbers that pass read.
 *
 * Memory lines are on the kubelet's own signal (memory_threshold_notifier.go): available =
 * capacity - working set, working set = usage - inactive_file, so "available < line" is
 *   working set > capacity - line.
 * Where the mechanism computes the working set itself, fresh at each charge or read (the eBPF
 * tripwire on cgroup v2, src/kernel/tripwire.ts; the adaptive poller), the line sits at
 * capacity - line and only moves when capacity does: no drift, nothing frozen between reads.
 * The v2 root's working set is its memory.stat anon + file - inactive_file, as the kubelet
 * computes it (src/kernel/kubelet-memory.ts).
 *
 * The memcg v1 threshold eventfd compares usage alone, so there the line is
 *   usage > capacity - line + inactive_file,
 * and inactive_file drifts: every pass, and a cheap read of the memory numbers every second in
 * between (Agent's drift tick), move those lines when they are off by more than a tolerance.
 * Moving a v1 threshold is not free: each registration in cgroup.event_control waits for an RCU
 * grace period in the kernel (measured here: 15-30 ms, blocking the JS thread), so they move
 * only when off by more than max(1 MiB, capacity/512) — at 2 GB/s under a millisecond of ramp.
 *
 * Standing orders ride on the lines: `setOrder` hands a hard line's order to its handle
 * (ThresholdHandle.setOrder) with the line in working-set terms, which the mechanism's
 * thread confirms each kill against on the kubelet's numbers read fresh (a usage line
 * that page cache pushed past, or a working set from stale statistics, is a candidate, not a
 * kill), and a used order comes back through `onOrderFired` with the line it was on. A handle
 * whose mechanism cannot hold one (no setOrder, or it says false) has no order, and the caller is
 * told so. Which orders stand, and for whom, is the order book's (order-book.ts): here only the
 * handles. With `nearLines`, each hard line also has a line at the edge
 * of its near zone (`node:nearN`, `pods:nearN`; standing-order.ts): the node entering the zone
 * wakes a pass at once, which places the order. Without it the drift tick (100 ms) finds the
 * node near, and a 1 GiB/s ramp crosses the zone's 128 MiB floor in about that time.
 *
 * On the pod cgroup root: thresholds for allocatableMemory.available, a PSI trigger on its
 * memory.pressure (cgroup2) and a watch on memory.events (pure v2) or cgroup.events. PSI and
 * memory.events (high, max, oom, oom_kill) stay as secondary wake-ups beside the lines.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { MemoryReading } from '../node/memory';
import type { PolicyConfig } from '../policy/config';
import type { LineSignal } from '../policy/standing-order';
import { systemClock } from './clock';
import { lineKey, nearKey, nearLines, workingSetLines, type LineKey } from './memory-lines';
import type { Clock, NotificationPort, OrderFired, StandingOrder, ThresholdHandle, WatchHandle, Wakeup } from './ports';

export interface ArmingOptions {
  port: NotificationPort;
  policy: PolicyConfig;
  logger: Logger;
  /** called for every kernel wake-up */
  wake: (w: Wakeup) => void;
  /** memory cgroup dirs of the node and of the pod cgroup root */
  nodeMemoryDir: string;
  podRootMemoryDir: string;
  /** cgroup2 dir of the pod cgroup root (memory.pressure, cgroup.events, memory.events), if any */
  podRootUnifiedDir: string | null;
  memoryVersion: 1 | 2;
  /** the node cgroup is the machine's root (v2 root has no memory.current to watch) */
  nodeIsRoot: boolean;
  psi?: { kind: 'some' | 'full'; stallUs: number; windowUs: number } | null;
  /** told the mechanism of each line when it is armed, and null when the line goes away */
  onLineMechanism?: (line: LineKey, mechanism: string | null) => void;
  /** stamps drift wake-ups and times retries (default: the process's monotonic clock) */
  clock?: Clock;
  /** a standing order on this line was used (delivered on the loop) */
  onOrderFired?: (line: LineKey, fired: OrderFired) => void;
  /** a line's own wake-up (its order, if it holds one, may have been used: see OrderBook.crossed) */
  onLineCrossed?: (line: LineKey) => void;
  /** also arm each hard line's near-zone edge, whose crossing wakes a pass (standing orders on) */
  nearLines?: boolean;
}

/** What became of an order handed to a line: placed, or why not. */
export interface OrderPlacement {
  placed: boolean;
  /** no-line: nothing watches that line now; unsupported: its mechanism keeps no orders; refused: setOrder said false or threw */
  why?: 'no-line' | 'unsupported' | 'refused';
  mechanism?: string;
}

/** The tripwire counts pages: a line moved by less than one is where it was. */
const PAGE_BYTES = 4096;

export class Arming {
  private readonly lines = new Map<LineKey, ThresholdHandle>();
  private readonly others: WatchHandle[] = [];
  private closed = false;
  /** watches that failed, by key: not retried until `retryAfter` */
  private readonly failed = new Map<LineKey, number>();
  psiWindowUs: number | null = null;
  /** how often a line was moved (each move costs an RCU grace period in the kernel) */
  rearms = 0;
  /** per line, whether usage was at or past it at the last update */
  private readonly met = new Map<LineKey, boolean>();
  /** per line, the kubelet's line in working-set terms at the last update: an order's kill is confirmed against it */
  private readonly wsLines = new Map<LineKey, number>();
  private headroom: number | null = null;

  constructor(private readonly o: ArmingOptions) {}

  /** Arms the watches that do not depend on numbers (PSI, events). Failures are logged, not thrown. */
  start(): void {
    const { port, logger } = this.o;
    const cb = (source: string) => ({
      onWakeup: (w: Wakeup) => this.o.wake({ ...w, source: w.source || source }),
      onError: (err: Error) => logger.warn({ err, source }, 'notification source ended'),
    });
    const dir = this.o.podRootUnifiedDir;
    if (dir && this.o.psi !== null) {
      const file = path.join(dir, 'memory.pressure');
      if (fs.existsSync(file)) {
        try {
          const h = port.watchPsi(file, this.o.psi ?? { kind: 'some', stallUs: 100_000, windowUs: 2_000_000 }, cb('psi'));
          this.psiWindowUs = h.windowUs;
          this.others.push(h);
          logger.info({ file, windowUs: h.windowUs }, 'PSI trigger armed');
        } catch (err) {
          logger.warn({ err, file }, 'PSI trigger unavailable');
        }
      }
    }
    for (const name of ['memory.events', 'cgroup.events']) {
      const file = dir ? path.join(dir, name) : null;
      const v2Memory = this.o.memoryVersion === 2 ? path.join(this.o.podRootMemoryDir, name) : null;
      const target = v2Memory && fs.existsSync(v2Memory) ? v2Memory : file && fs.existsSync(file) ? file : null;
      if (!target) continue;
      try {
        this.others.push(port.watchFile(target, cb(name === 'memory.events' ? 'memory-events' : 'cgroup-events')));
      } catch (err) {
        logger.warn({ err, file: target }, 'cgroup file watch unavailable');
      }
    }
    if (port.watchOom && this.o.memoryVersion === 1) {
      try {
        this.others.push(port.watchOom(this.o.nodeMemoryDir, cb('memcg-oom')));
      } catch (err) {
        logger.warn({ err }, 'OOM notification unavailable');
      }
    }
  }

  /**
   * Re-arms every line from fresh memory numbers (a pass's, or the drift tick's). With
   * `wakeOnMet` (the drift tick), a line that these numbers put at or below usage, where the
   * last numbers had it above, wakes a pass: near the end of memory, anonymous pages replace
   * page cache, so usage stays flat while inactive_file shrinks and the line comes down to
   * usage. No counter crosses it, so neither the tripwire nor a v1 threshold would ever fire
   * (each arms a line below usage for the way down). A pass's own numbers need no wake: that
   * pass already decided on them.
   */
  update(memory: MemoryReading, allocatable: MemoryReading | null, o: { wakeOnMet?: boolean } = {}): void {
    if (this.closed) return;
    // bytes: the line in usage terms; wsLine: in working-set terms; usage, ws: this reading's.
    const want = new Map<LineKey, { dir: string; bytes: number; wsLine: number; costlyTolerance: number; usage: number; ws: number; near?: true }>();
    const add = (dir: string, m: MemoryReading, signal: LineSignal) => {
      const costlyTolerance = Math.max(1024 * 1024, m.capacityBytes / 512);
      workingSetLines(this.o.policy, signal, m).forEach((wsLine, i) =>
        want.set(lineKey(signal, i), { dir, bytes: wsLine + m.inactiveFileBytes, wsLine, costlyTolerance, usage: m.usageBytes, ws: m.workingSetBytes }),
      );
      if (!this.o.nearLines) return;
      for (const [i, wsLine] of nearLines(this.o.policy, signal, m))
        want.set(nearKey(signal, i), {
          dir,
          bytes: wsLine + m.inactiveFileBytes,
          wsLine,
          costlyTolerance,
          usage: m.usageBytes,
          ws: m.workingSetBytes,
          near: true,
        });
    };
    // On a v2 root (no memory.current) usage is memory.stat anon + file and the working set that
    // minus inactive_file, as the reading is: the tripwire computes the latter in the kernel.
    add(this.o.nodeMemoryDir, memory, 'memory.available');
    if (allocatable && this.o.podRootMemoryDir !== this.o.nodeMemoryDir) add(this.o.podRootMemoryDir, allocatable, 'allocatableMemory.available');
    const now = Number((this.o.clock ?? systemClock).now() / 1_000_000n);
    for (const [key, h] of this.lines) {
      if (!want.has(key)) {
        this.lines.delete(key);
        this.o.onLineMechanism?.(key, null);
        void h.close();
      }
    }
    let metNow = false;
    this.headroom = null;
    for (const [key, { bytes, usage, near }] of want) {
      // A near-zone edge only wakes a pass to place an order: the signal is not met there.
      if (near) continue;
      this.headroom = Math.min(this.headroom ?? Infinity, bytes - usage);
      const met = usage >= bytes;
      if (met && this.met.get(key) === false) metNow = true;
      this.met.set(key, met);
    }
    for (const key of [...this.met.keys()]) if (!want.has(key)) this.met.delete(key);
    this.wsLines.clear();
    for (const [key, { wsLine, near }] of want) if (!near) this.wsLines.set(key, wsLine);
    for (const [key, { dir, bytes, wsLine, costlyTolerance, usage, ws, near }] of want) {
      const h = this.lines.get(key);
      if (h) {
        // A working-set line moves only with capacity; a usage line follows inactive_file.
        const target = h.measure === 'working-set' ? wsLine : bytes;
        // Only a v1 threshold costs a kernel grace period to move (see above).
        const tolerance = h.mechanism === 'memcg-threshold-eventfd' ? costlyTolerance : PAGE_BYTES;
        // Also move a usage line that usage has passed while the signal is not met (inactive_file
        // grew): left there it would only fire on the way down, and the crossing would be missed.
        // A working-set line is re-armed from a fresh reading whenever this pass found the signal
        // not met: the program's inactive_file is the kernel's last fold, so it may have seen the
        // line crossed a little early and now wait for the way down; re-arming puts it back on
        // the side the kubelet's own number (memory.stat, read now, which folds) says.
        const behind = h.measure === 'working-set' ? ws < target : h.lineBytes < usage && bytes > usage;
        if (behind || Math.abs(h.lineBytes - target) > tolerance) {
          try {
            h.rearm(target);
            this.rearms++;
          } catch (err) {
            this.lines.delete(key);
            this.o.onLineMechanism?.(key, null);
            void h.close();
            this.o.logger.warn({ err, key }, 'threshold re-arm failed');
          }
        }
        continue;
      }
      if ((this.failed.get(key) ?? 0) > now) continue;
      try {
        const cb = {
          onWakeup: (w: Wakeup) => {
            if (this.lines.get(key) === handle) this.o.onLineCrossed?.(key);
            this.o.wake({ ...w, source: near ? 'near-line' : 'memcg-threshold' });
          },
          onOrderFired: (fired: OrderFired) => this.o.onOrderFired?.(key, fired),
          onError: (err: Error) => {
            if (this.lines.get(key) === handle) this.lines.delete(key);
            this.o.onLineMechanism?.(key, null);
            this.o.logger.warn({ err, key }, 'memory threshold watch ended');
          },
        };
        // The kubelet's signal itself where a mechanism computes it, else usage with the drift.
        const handle: ThresholdHandle = this.o.port.watchWorkingSet?.(dir, wsLine, cb) ?? this.o.port.watchMemoryUsage(dir, bytes, cb);
        this.lines.set(key, handle);
        const mechanism = handle.mechanism ?? this.o.port.mechanism;
        const measure = handle.measure ?? 'usage';
        this.o.logger.info({ line: key, dir, lineBytes: handle.lineBytes, measure, mechanism }, `memory line ${key}: ${mechanism} on ${measure}`);
        this.o.onLineMechanism?.(key, mechanism);
      } catch (err) {
        this.failed.set(key, now + 60_000);
        this.o.logger.warn({ err, key, dir }, 'memory threshold unavailable');
      }
    }
    if (metNow && o.wakeOnMet) this.o.wake({ source: 'line-drift', monotonicNs: (this.o.clock ?? systemClock).now() });
  }

  /**
   * Hands a line its standing order (null: withdraws it). Orders never outlive `order.ttlMs` in
   * the mechanism, so a caller that stops placing them lets them lapse; a failed withdrawal too.
   */
  setOrder(line: LineKey, order: StandingOrder | null): OrderPlacement {
    const h = this.closed ? undefined : this.lines.get(line);
    if (!h) return { placed: false, why: 'no-line' };
    const mechanism = h.mechanism ?? this.o.port.mechanism;
    if (!h.setOrder) return { placed: false, why: 'unsupported', mechanism };
    if (order === null) {
      try {
        h.setOrder(null);
      } catch (err) {
        this.o.logger.warn({ err, line }, 'standing order withdrawal failed; it lapses at its TTL');
      }
      return { placed: false, mechanism };
    }
    let placed = false;
    try {
      placed = h.setOrder({ ...order, workingSetLineBytes: this.wsLines.get(line) });
    } catch (err) {
      this.o.logger.warn({ err, line }, 'standing order refused by the line');
    }
    return placed ? { placed, mechanism } : { placed, why: 'refused', mechanism };
  }

  /** Whether some line now is watched by a mechanism that can hold an order (it may still refuse one). */
  canHoldOrders(): boolean {
    for (const h of this.lines.values()) if (h.setOrder) return true;
    return false;
  }

  /** How far usage was below the nearest line at the last update (negative: past it); null without lines. */
  headroomBytes(): number | null {
    return this.headroom;
  }

  /** The mechanism watching each current line (for the metric and --dry-run). */
  mechanisms(): Record<string, string> {
    return Object.fromEntries([...this.lines].map(([k, h]) => [k, h.mechanism ?? this.o.port.mechanism]));
  }

  /** Current lines (each in its measure), for logs and tests. */
  armed(): Record<string, number> {
    return Object.fromEntries([...this.lines].map(([k, h]) => [k, h.lineBytes]));
  }

  /** What each current line compares: 'usage' or 'working-set'. */
  measures(): Record<string, 'usage' | 'working-set'> {
    return Object.fromEntries([...this.lines].map(([k, h]) => [k, h.measure ?? 'usage']));
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.lines.values(), ...this.others];
    this.lines.clear();
    this.others.length = 0;
    await Promise.allSettled(all.map((h) => h.close()));
  }
}
