import path from 'node:path';

/** A native watcher (native/watcher.cc). All methods run on the loop of the thread that made it. */
export interface NativeWatcher {
  /** Starts polling; signals that arrived while stopped are delivered then. */
  start(): void;
  stop(): void;
  /** Idempotent; `cb` runs once the uv handle is closed and the fds are released. */
  close(cb?: () => void): void;
  ref(): void;
  unref(): void;
  hasRef(): boolean;
  /** Reads the probe file now (the same file whose contents each event carries). */
  read(): string | undefined;
  readonly closed: boolean;
}

/** A memcg v1 event (native/watcher.cc, openMemcgEvent). */
export interface NativeMemcgWatcher extends NativeWatcher {
  /**
   * Places a threshold line's standing order (native/eventfd_orders.h): at the first upward
   * crossing within `ttlMs` (the usage file at or past `lineBytes`), confirmed by the addon's
   * order thread on the kubelet's working set of the line's cgroup read fresh (at or past
   * `workingSetLineBytes`), "1" is written to `killPath` from that thread, then
   * `onFired(text, killPath)` runs on the loop with the same fields as a tripwire order's use
   * (charge_began_ns and fired_ns: the wake-up). `podMemoryDir`: the pod's memory cgroup, read
   * when a kill is refused on statistics that lag (native/fold_nudge.h). null withdraws it. False
   * when this is not a threshold in force; throws when killPath or the cgroup's memory.stat cannot
   * be opened.
   */
  setOrder(
    killPath: string | null,
    ttlMs?: number,
    lineBytes?: number,
    onFired?: (text: string, killPath: string) => void,
    workingSetLineBytes?: number,
    tag?: string,
    podMemoryDir?: string,
  ): boolean;
}

/**
 * A memcg tripwire line (native/tripwire_line.cc): a watcher without an fd of its own, fed by the
 * environment's tripwire from the BPF ring buffer. Crossings while stopped are counted and
 * delivered on start(), as an eventfd's are.
 */
export interface NativeTripwireLine extends NativeWatcher {
  /** Moves the line in place (no kernel registration, no grace period); `usageBytes` -1: side unknown. */
  rearm(lineBytes: number, usageBytes: number): void;
  /**
   * Places the line's standing order (native/tripwire_orders.h): the first crossing within
   * `ttlMs` the program sees is confirmed by the addon's order thread on the kubelet's working set
   * of `memoryDir` read fresh (at or past `workingSetLineBytes`), which then writes "1" to
   * `killPath`; `onFired(text, killPath)` runs on the loop (usage_bytes and line_bytes: the
   * working set at the kill and the line; trigger_bytes: the program's measure; charge_began_ns,
   * fired_ns, killed_ns, placed_ns, errno), for every use, even of an order replaced or withdrawn
   * since. setOrder(null) withdraws it. False when this load has no order thread; throws when
   * killPath or the cgroup's memory.stat cannot be opened.
   */
  setOrder(
    killPath: string | null,
    ttlMs?: number,
    onFired?: (text: string, killPath: string) => void,
    memoryDir?: string,
    workingSetLineBytes?: number,
    tag?: string,
  ): boolean;
}

/** (err) on failure, after which the watcher is closed; else (null, count, ns, text). */
export type NativeCallback = (err: Error | null, count?: number, monotonicNs?: bigint, text?: string) => void;

/** One reap: tasks found in the pod's cgroups, tasks whose memory the kernel reaped, the first errno (other than ESRCH), its duration. */
export interface ReapResult {
  tasks: number;
  reaped: number;
  errno: number;
  ns: number;
}

export interface ReapCounts {
  pods: number;
  tasks: number;
  reaped: number;
  failed: number;
}

export interface NativeAddon {
  /** The registration completes off the loop: `onArmed` runs once it is in force. */
  openMemcgEvent(controlPath: string, targetPath: string, args: string, probePath: string, cb: NativeCallback, onArmed?: () => void): NativeMemcgWatcher;
  openPsiTrigger(path: string, trigger: string, cb: NativeCallback): NativeWatcher;
  openKernfsFile(path: string, cb: NativeCallback): NativeWatcher;
  monotonicNs(): bigint;
  /** the memcg v1 standing orders' kills written and refusals (a usage line crossed, the working set read fresh below the line) */
  eventfdOrderStats?(): { used: number; refused: number };
  /** the file the order threads append each use to, before its kill (native/use_log.h); null closes it */
  setOrderUseLog?(path: string | null): void;
  liveSources(): number;
  /** SCHED_FIFO at `priority` for the calling thread, SCHED_OTHER for 0; children reset on fork (bench notify; evictd run uses setKillThreadPriority) */
  setRealtimePriority(priority: number): void;
  /** SCHED_FIFO at `priority` for the threads that kill (the standing orders' threads), 0 for normal; checked first, throws the errno */
  setKillThreadPriority?(priority: number): void;
  /** process_mrelease on the tasks of a killed pod's cgroup2 directory (and below), off the loop (native/reap.h) */
  reapCgroup?(dir: string): Promise<ReapResult>;
  /** whether the kill threads reap after their kills (on by default) */
  setReapAfterKill?(enabled: boolean): void;
  /** the reaps of this process so far: by the kill threads after their kills and by reapCgroup */
  reapCounts?(): ReapCounts;
  /** mlock2(MLOCK_ONFAULT) on every file-backed mapping: the agent's code stays in RAM once touched; the bytes of the mappings */
  lockMappedFiles(): number;
  /** madvise(MADV_PAGEOUT) on every file-backed mapping, unlocked and locked again when `locked`; the bytes of the mappings (absent from older builds) */
  shedFilePages?(locked: boolean): number;
  /** Delivers now the standing orders' uses written on their threads (absent from older builds). */
  flushOrderUses?(): void;
  /** One sd_notify(3) datagram to $NOTIFY_SOCKET; false when it is not set. */
  sdNotify(state: string): boolean;
  /** The memcg tripwire (native/tripwire.h): always present; `built` false when built with EVICTD_TRIPWIRE=0. */
  tripwireStatus(): TripwireStatus;
  /** Loads and attaches the BPF program in this environment now; throws the load error (with `stage`). Tripwire builds only. */
  tripwireLoad?(): TripwireStatus;
  /**
   * A line on `measure` (0 the memory counter, 1 the working set usage - inactive_file, 2 the
   * node's anon + file - inactive_file, from the machine's page counters) of cgroup `cgroupId` (cgroup2 directory inode, 1
   * for the root), armed on the side `usageBytes` (in that measure) says (-1: unknown). Events carry usage_bytes, line_bytes,
   * fired_ns (bpf_ktime_get_ns at the crossing), charge_began_ns (the crossing charge's start),
   * above. Tripwire builds only.
   */
  openTripwire?(cgroupDir: string, cgroupId: number, measure: 0 | 1 | 2, lineBytes: number, usageBytes: number, cb: NativeCallback): NativeTripwireLine;
}

export interface TripwireStatus {
  /** false: the addon was built with EVICTD_TRIPWIRE=0 (or not on Linux) */
  built: boolean;
  loaded: boolean;
  lines?: number;
  /** verification (load) and fexit attach times of the last successful load */
  loadMs?: number;
  attachMs?: number;
  /** the root memcg's page counter as last seen by the program (null before any charge) */
  rootUsageBytes?: number | null;
  events?: number;
  ringbufFull?: number;
  /** whether this load has its standing-order thread, how many orders it used, how many it dropped (ring full) */
  orders?: boolean;
  ordersUsed?: number;
  ordersFull?: number;
  /** crossings the program saw where the kubelet's numbers, read fresh, were below the line (no kill) */
  ordersRefused?: number;
  /** uses of an order withdrawn before its record was read (the program kills nobody: no kill) */
  ordersDropped?: number;
  /** the in-kernel re-check of the node's lines between charges: its period (0: off) and the checks made */
  nodePollNs?: number;
  nodePolls?: number;
  /** the last failure to start that re-check (a negative errno; 0: none) */
  nodePollError?: number;
  /** why the last load has no order thread */
  ordersError?: Error & { code?: string };
  /** the last load failure: code, errno, syscall 'bpf', stage 'open' | 'load' | 'attach' | 'ring_buffer' */
  error?: Error & { code?: string; stage?: string };
}

/** The package root (dist/src/kernel/ -> ../../..), where node-gyp leaves build/Release. */
export const packageRoot = path.resolve(__dirname, '..', '..', '..');

/**
 * The addon's file, as node-gyp-build finds it: a build of this tree (build/Release: a checkout,
 * or an install that compiled because no prebuilt addon loads here), else the package's prebuilt
 * one for this platform (prebuilds/linux-x64/node.napi.glibc.node: scripts/prebuilds.mjs).
 * Throws when there is neither.
 */
export function addonFile(): string {
  return (require('node-gyp-build') as { path(dir: string): string }).path(packageRoot);
}

let loaded: { addon: NativeAddon } | { error: Error } | undefined;

function load(): { addon: NativeAddon } | { error: Error } {
  if (loaded === undefined) {
    try {
      loaded = { addon: require(addonFile()) as NativeAddon };
    } catch (err) {
      loaded = { error: err instanceof Error ? err : new Error(String(err)) };
    }
  }
  return loaded;
}

/** False where the addon is not built or cannot load: callers then use the polling fallback. */
export function nativeAvailable(): boolean {
  return 'addon' in load();
}

/** Why the addon is unavailable (for the log line that reports the fallback), or null. */
export function nativeLoadError(): Error | null {
  const l = load();
  return 'error' in l ? l.error : null;
}

/** The addon; throws the load error where it is unavailable. */
export function addon(): NativeAddon {
  const l = load();
  if ('error' in l) throw l.error;
  return l.addon;
}

/** CLOCK_MONOTONIC in ns, the clock of event timestamps (libuv's hrtime reads the same clock). */
export function monotonicNs(): bigint {
  return process.hrtime.bigint();
}
