import type { EventEmitter } from 'node:events';
import type { LineMeasure } from './working-set';

export type WatchKind = 'memcg-threshold' | 'memcg-pressure-level' | 'psi' | 'memcg-oom' | 'cgroup-events' | 'memory-events';

/** One notification: which source fired, how often since the last event, and when. */
export interface KernelEvent {
  /** The file the kernel notifies through (the watched cgroup file or pressure file). */
  source: string;
  kind: WatchKind;
  /** Signals merged into this event (an eventfd counts them; PSI and kernfs report 1). */
  count: number;
  /** CLOCK_MONOTONIC in ns, read in the native poll callback (or by the poller). */
  monotonicNs: bigint;
  /**
   * Counters read at the event: usage_in_bytes for thresholds and pressure levels;
   * oom_kill_disable, under_oom, oom_kill for OOM; some_avg10 ... full_total for PSI;
   * populated, frozen (cgroup.events) or low, high, max, oom, oom_kill (memory.events).
   */
  counters?: Record<string, number>;
}

/** A native failure, shaped like Node's fs errors. */
export interface KernelError extends Error {
  code: string;
  errno: number;
  syscall: string;
  path?: string;
}

/**
 * A watcher is an EventEmitter: 'event' (KernelEvent) and 'error' (KernelError; the watcher is
 * then closed, e.g. ENODEV when the cgroup was removed). It polls from creation; stop() pauses
 * (signals stay pending in the kernel and arrive on start()).
 */
export interface Watcher extends EventEmitter {
  readonly kind: WatchKind;
  readonly source: string;
  /** 'native' (kernel notification) or 'polling' (the fallback). */
  readonly mechanism: 'native' | 'polling';
  readonly closed: boolean;
  /**
   * Resolves once the kernel registration is in force. memcg v1 registrations complete off the
   * loop (a threshold registration waits for an RCU grace period, ~30 ms here); a crossing
   * before that is not reported. Rejects (besides the 'error' event) when the registration fails.
   */
  ready(): Promise<void>;
  start(): void;
  stop(): void;
  /** Idempotent; resolves once the handle is closed and its fds are released. */
  close(): Promise<void>;
  /** Keep the process alive while open (the default). */
  ref(): this;
  /** Let the process exit even though this watcher is open. */
  unref(): this;
}

/**
 * How a usage line is watched, best first: the eBPF tripwire on the page counters (cgroup v2),
 * the memcg v1 threshold eventfd, the adaptive poller, a fixed-interval poller (baselines only).
 */
export type LineMechanism = 'bpf-tripwire' | 'memcg-threshold-eventfd' | 'adaptive-poll' | 'fixed-poll';

export interface ThresholdWatcher extends Watcher {
  readonly thresholdBytes: number;
  /** What the line compares (src/kernel/working-set.ts): the counter, or the kubelet's working set. */
  readonly measure: LineMeasure;
  /** The mechanism in force for this line. */
  readonly lineMechanism: LineMechanism;
  /**
   * Moves the threshold without a gap: the old registration keeps reporting until the new one
   * is in force, then is released. Resolves at that moment.
   */
  rearm(thresholdBytes: number): Promise<void>;
  /**
   * Places this line's standing order: the mechanism kills the pod of `podCgroupDir` itself at
   * the first crossing within `ttlMs`, off the JS loop, then emits 'order' (OrderEvent), but only
   * when the kubelet's working set of the line's cgroup, read fresh at that moment, is at or past
   * `workingSetLineBytes` (default: the line itself, on a working-set line; required on a usage
   * line). With `tag`, the use is noted in the use log (setOrderUseLog) before the kill.
   * `podMemoryDir` is the pod's directory in the memory hierarchy: a kill refused because the
   * line's statistics lag its usage reads the pod's, which lets them fold (native/fold_nudge.h).
   * The tripwire (cgroup v2 only) takes `podCgroupDir` for it; a memcg v1 line without it reads
   * no pod statistics. null withdraws it. False (or absent) where the mechanism cannot: the eBPF
   * tripwire and the memcg v1 eventfd can (each from a thread of the addon); the pollers cannot.
   */
  setOrder?(podCgroupDir: string | null, ttlMs?: number, workingSetLineBytes?: number, tag?: string, podMemoryDir?: string): boolean;
}

/** A standing order used ('order' on a ThresholdWatcher). Times are CLOCK_MONOTONIC ns. */
export interface OrderEvent {
  podCgroupDir: string;
  /**
   * the kubelet's working set read fresh at the kill, less the usage the kernel's statistics had
   * not listed yet, and the order's line (working-set terms)
   */
  usageBytes: number;
  lineBytes: number;
  /** that unlisted usage (native/fresh_signal.h), bytes */
  unlistedBytes: number;
  /** the crossing charge began; the program saw it; the kill was written; the order was placed */
  chargeBeganNs: bigint;
  firedNs: bigint;
  killedNs: bigint;
  placedNs: bigint;
  /** errno of the kill write, 0 when the pod was killed */
  errno: number;
  /** how long the order thread's fresh read of the kubelet's numbers took before the kill */
  checkNs: bigint;
  /** errno of noting the use in the use log before the kill (0: noted, or no log) */
  logErrno: number;
}

export interface PsiWatcher extends Watcher {
  /** The window the kernel enforces, after rounding up to the unprivileged 2 s rule. */
  readonly windowUs: number;
  /** The trigger as written to the pressure file. */
  readonly trigger: string;
}
