/**
 * What the agent needs from the other parts, as small interfaces. Adapters in
 * src/agent/adapters/ turn the real modules (src/kernel, src/cri, src/kube) into these, so the
 * agent's own logic can be unit tested with one fake at a time.
 */
import type { MemoryHighReader, RelaxResult } from '../cri/relax';
import type { ContainerUsage, NodeReclaimFunction, PodConditionReport, PodSpec } from '../policy/types';

// ---------------------------------------------------------------------------------------------
// Kernel notifications: they only wake the loop, they never carry a decision.

export interface Wakeup {
  /** e.g. "memcg-threshold", "psi", "memory-events", "cgroup-events", "memcg-oom", "poll" */
  source: string;
  /** CLOCK_MONOTONIC ns read when the kernel event was seen, when known */
  monotonicNs?: bigint;
  count?: number;
}

export interface WatchHandle {
  close(): Promise<void>;
}

/**
 * A standing order on a hard memory line: the kernel-side mechanism kills this pod the moment
 * the line is crossed, from its own thread, before any pass runs. Left by a pass near
 * the line; the pass that follows the kill confirms it (CRI stop, report).
 */
export interface StandingOrder {
  /** the victim's pod cgroup dir (its cgroup.kill on cgroup v2; its cgroup.procs otherwise) */
  podCgroupDir: string;
  /** the victim's directory in the memory hierarchy (a hybrid host's differs from podCgroupDir), when known */
  podMemoryDir?: string;
  /** how long the order stands from now, ms (expired orders are never used) */
  ttlMs: number;
  /**
   * The kubelet's line in working-set terms (capacity - threshold, plus one byte): the mechanism
   * kills only when the working set of the line's cgroup, read fresh at the crossing, is at or
   * past it. Set by the arming from the line it places the order on.
   */
  workingSetLineBytes?: number;
  /** the order's name in the use log (src/agent/order-journal.ts), noted before its kill */
  tag?: string;
}

/** A standing order was used: the pod's kill was written at killedNs. */
export interface OrderFired {
  podCgroupDir: string;
  /** CLOCK_MONOTONIC ns: the crossing charge began (the earliest anyone could see it) */
  crossedNs: bigint;
  /** CLOCK_MONOTONIC ns: the kill was written (cgroup.kill) or sent (each pid) */
  killedNs: bigint;
  /** the order's age when used, ms */
  ageMs: number;
  /**
   * the kubelet's working set read fresh at the kill, less the usage the kernel's statistics had
   * not listed yet (native/fresh_signal.h), and the line it was at or past, bytes
   */
  valueBytes: number;
  lineBytes: number;
  /** that unlisted usage, bytes (absent: the mechanism reports none) */
  unlistedBytes?: number;
  /** set when the kill could not be written (the pod was not killed) */
  error?: string;
  /** the order thread's fresh read of the kubelet's numbers that confirmed the kill, µs */
  checkUs?: number;
  /** set when the use could not be noted in the use log before the kill (a crash would have lost it) */
  useLogError?: string;
}

export interface ThresholdHandle extends WatchHandle {
  /**
   * Places (or with null, withdraws) this line's standing order; false when the mechanism
   * cannot keep one (absent: never can). Replaces any earlier order on the line.
   */
  setOrder?(order: StandingOrder | null): boolean;
  /** moves the line (in the handle's measure) without a gap in coverage */
  rearm(lineBytes: number): void;
  /** the line, in the handle's measure */
  readonly lineBytes: number;
  /**
   * What the line compares: the cgroup's usage (the default: the caller moves the line as
   * inactive_file drifts), or the kubelet's working set, which the mechanism reads fresh itself.
   */
  readonly measure?: 'usage' | 'working-set';
  /** how the line is watched: 'bpf-tripwire', 'memcg-threshold-eventfd', 'adaptive-poll', ... */
  readonly mechanism?: string;
}

export interface WatchCallbacks {
  onWakeup(w: Wakeup): void;
  /** a standing order on this line was used (from the mechanism's own thread, delivered on the loop) */
  onOrderFired?(fired: OrderFired): void;
  /** the watch is over (its cgroup went away, or the kernel refused): the handle is closed */
  onError(err: Error): void;
}

export interface NotificationPort {
  /** 'native' when the kernel addon is loaded; 'polling' when a fallback emulates it */
  readonly mechanism: 'native' | 'polling';
  /** a line on the memory usage of a memory cgroup dir (v1 memory.usage_in_bytes; v2 memory.current) */
  watchMemoryUsage(cgroupDir: string, usageBytes: number, cb: WatchCallbacks): ThresholdHandle;
  /**
   * A line on the kubelet's working set of a memory cgroup dir (usage - inactive_file; the v2
   * root: memory.stat anon + file - inactive_file), compared fresh by the mechanism itself; null
   * where no mechanism here can (then a usage line is armed and moved with the drift).
   */
  watchWorkingSet?(cgroupDir: string, workingSetBytes: number, cb: WatchCallbacks): ThresholdHandle | null;
  /** a PSI trigger on a memory.pressure file; resolves the window actually in force */
  watchPsi(pressureFile: string, trigger: { kind: 'some' | 'full'; stallUs: number; windowUs: number }, cb: WatchCallbacks): WatchHandle & { windowUs: number };
  /** kernfs change notifications on cgroup.events or memory.events */
  watchFile(file: string, cb: WatchCallbacks): WatchHandle;
  /** v1 OOM notifications of a memory cgroup */
  watchOom?(cgroupDir: string, cb: WatchCallbacks): WatchHandle;
  /**
   * Delivers now (through each line's onOrderFired) the standing orders' uses the mechanism has
   * made but not yet reported: a pass calls it before deciding.
   */
  flushOrderUses?(): void;
  /** where the mechanism notes each use before its kill (null: nowhere); throws when it cannot open it */
  setOrderUseLog?(file: string | null): void;
}

// ---------------------------------------------------------------------------------------------
// The container runtime (CRI).

export interface RuntimePod {
  sandboxId: string;
  uid: string;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** 'ready' while the sandbox runs */
  ready: boolean;
  /** the sandbox's cgroup parent, when the runtime reports it */
  cgroupParent?: string;
  createdAtNs?: number;
}

export interface StopTimings {
  /** total time of the stop, ms */
  totalMs: number;
  [step: string]: number;
}

export interface ImageFsInfo {
  mountpoint?: string;
  usedBytes?: number;
  inodesUsed?: number;
}

export interface RuntimePort {
  /** running (ready) pod sandboxes with their metadata; gives up after `deadlineMs` when given */
  listPods(deadlineMs?: number): Promise<RuntimePod[]>;
  /** stops the pod's containers with the grace period, then its sandbox; rejects on failure */
  stopPod(pod: RuntimePod, gracePeriodSeconds: number): Promise<StopTimings>;
  /** node-level reclaim (kubelet's deleteUnusedContainers / deleteUnusedImages) */
  reclaim(fn: NodeReclaimFunction): Promise<{ freedBytes?: number }>;
  imageFsInfo(): Promise<ImageFsInfo | undefined>;
  /**
   * Per-pod disk usage of running containers (writable layer, logs), by pod uid. Only read
   * when a disk threshold is met: it costs a call per container.
   */
  containerDiskUsage?(): Promise<Map<string, ContainerUsage[]>>;
  /** running containers: id, pod sandbox and name (KEP-5986 names a container cgroup by its id) */
  listContainers?(): Promise<RuntimeContainer[]>;
  /** KEP-5986 stage 1: the container's memory.high raised to max through the runtime, then read back */
  relaxMemoryHigh?(containerId: string, readMemoryHigh: MemoryHighReader): Promise<RelaxResult>;
  close(): void;
}

export interface RuntimeContainer {
  id: string;
  sandboxId: string;
  name: string;
}

// ---------------------------------------------------------------------------------------------
// Pod specs (the Kubernetes issue's PodSource satisfies this structurally).

export interface PodSpecSource {
  get(uid: string): PodSpec | undefined;
  readonly healthy?: boolean;
  readonly kind?: string;
}

/** Where an eviction is reported once done (the Kubernetes status writer), if anywhere. */
export interface EvictionReporter {
  /**
   * `at` and `podEventName` fix the report's time and its Evicted event's name (the eviction
   * journal keeps them, so a report repeated after a crash is the same report); `recovered`
   * says it may have landed before: the status is read back before it is written, and no node
   * event is sent again.
   */
  report(eviction: {
    pod: { namespace: string; name: string; uid: string };
    signal: string;
    gracePeriodSeconds: number;
    message: string;
    annotations: Record<string, string>;
    at?: Date;
    podEventName?: string;
    recovered?: boolean;
    /** 'interrupted': the agent stopped before the report was written (the journal keeps it for the next start) */
  }): Promise<void | 'done' | 'skipped' | 'failed' | 'interrupted'>;
  /**
   * Sets a pod condition the agent owns (KEP-5986's ContainerMemoryPressure), with a Warning
   * event when `event` is given; calls for one pod land in order. Never rejects.
   */
  podCondition?(c: PodConditionReport): Promise<void | 'done' | 'skipped' | 'failed' | 'interrupted'>;
}

// ---------------------------------------------------------------------------------------------
// Time: the one clock the agent reads, injected so its passes and actions run on a fake one in
// unit tests.

/** A timer the clock set; `cancel` may be called more than once, and after it fired. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** CLOCK_MONOTONIC, ns (the clock the kernel stamps its events with) */
  now(): bigint;
  /** resolves after `ms` milliseconds */
  sleep(ms: number): Promise<void>;
  /**
   * Calls `fn` once, `ms` milliseconds from now. Every timer of the agent is set here, so that a
   * test's clock steps them as the kubelet's tests step a fake clock. `background`: the timer
   * alone does not keep the process alive.
   */
  after(ms: number, fn: () => void, background?: boolean): Timer;
}
