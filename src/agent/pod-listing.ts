/**
 * The runtime's pod listing, as the agent's passes see it: the last ListPodSandbox answer, when
 * a pass may decide on it without a fresh round trip, and the inotify watch on the pod cgroup
 * root that refreshes it when a pod starts. It also owns the runtime's health as the agent
 * reports it (answering or not, the last problem), because the listing is the call that finds
 * out first.
 *
 * Runs on the main JS thread; the only background work is a refresh that a pass never waits for.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { NodeReading } from '../node/observer';
import { listPodCgroups, podUidFromDirName } from '../node/pod-cgroups';
import type { PassTrigger } from './controller';
import type { AgentMetrics } from './metrics';
import { cancel, msSince, systemClock } from './clock';
import type { Clock, RuntimePod, RuntimePort, Timer } from './ports';

/** a pod listing older than this is never used in place of a fresh one */
const POD_LIST_MAX_AGE_MS = 30_000;
/** how long a new pod cgroup is waited for in the runtime's listing (see learn) */
const LEARN_FOR_MS = 30_000;
/** a dead runtime is logged once, then at most this often */
const RUNTIME_ERROR_LOG_MS = 30_000;

export interface PodListingOptions {
  runtime: RuntimePort;
  logger: Logger;
  metrics: AgentMetrics;
  /** the memory mount and the pod cgroup root, to see which pod cgroups exist */
  memoryMount: string;
  podCgroupRoot: string;
  /** the pod cgroup root's directory in the memory hierarchy (watched with inotify) */
  podRootMemoryDir: string;
  /** ages of listings and log lines (default: the process's monotonic clock) */
  clock?: Clock;
  /** every listing the runtime answered (a pass's or a background refresh): its ready pods */
  onListed?: (readyUids: ReadonlySet<string>) => void;
}

export class PodListing {
  private pods: RuntimePod[] = [];
  private listedAt: bigint | null = null;
  private refreshing: Promise<void> | null = null;
  private watchers: fs.FSWatcher[] = [];
  private learnTimer: Timer | null = null;
  private closed = false;
  private errorLoggedAt: bigint | null = null;
  /** the runtime answered the last listing */
  runtimeOk = true;
  /** why the runtime is unhealthy, when it is */
  problem = '';
  /** when the runtime's current run of failed listings began (null while it answers) */
  private failingSince: bigint | null = null;
  /** the last forPass() decided on the cached listing */
  usedCache = false;
  /**
   * uids some listing has named, kept while their pod cgroup exists: a pod that stopped (one
   * evicted, say) leaves its cgroup until the kubelet removes it, seconds later. Such a cgroup
   * is no new pod, so it must not send every pass in between to the runtime (measured in the VM
   * demo: every ramp after the first listed fresh, 17-25 ms of the reaction), nor keep learn()
   * retrying for its whole bound.
   */
  private readonly everListed = new Set<string>();

  private readonly clock: Clock;

  constructor(private readonly o: PodListingOptions) {
    this.clock = o.clock ?? systemClock;
  }

  /**
   * The runtime's pods for this pass. A pass woken by the kernel, or one that places or
   * refreshes standing orders, decides on the last listing when every pod cgroup observed now
   * belongs to a pod some listing named (no pod started since; a stopped pod's cgroup may linger,
   * see everListed), and refreshes it in the background: the CRI round trip (2-10 ms while a hog
   * saturates a core, up to its 1 s deadline when containerd itself is short of memory) stays
   * out of the path from the event to the kill, and out of an order's refresh, which must end
   * before the order's TTL (the background listing withdraws the orders if the pod set moved).
   * Housekeeping passes, and any pass that sees a pod cgroup no listing has named, wait for a
   * fresh listing. While the runtime is down such a pass decides on the last listing whatever its
   * age, as a failed listing would leave it to (list), but without first waiting out a listing
   * that is likely to fail: a runtime outage must not slow a kill.
   */
  async forPass(obs: NodeReading, trigger: PassTrigger): Promise<RuntimePod[]> {
    const quick = (trigger.firstEventNs !== null || trigger.sources['standing-order'] !== undefined) && !trigger.sources.housekeeping && !trigger.sources.start;
    this.forgetRemoved(new Set(obs.pods.keys()));
    const cacheUsable = this.listedAt !== null && (!this.runtimeOk || msSince(this.clock, this.listedAt) < POD_LIST_MAX_AGE_MS);
    if (quick && cacheUsable) {
      if ([...obs.pods.keys()].every((uid) => this.everListed.has(uid))) {
        this.usedCache = true;
        this.refreshing ??= this.list()
          .then(() => undefined)
          .finally(() => (this.refreshing = null));
        return this.pods;
      }
    }
    this.usedCache = false;
    return this.list();
  }

  /** A fresh listing, or the last known pods when the runtime does not answer. */
  async list(): Promise<RuntimePod[]> {
    const o = this.o;
    try {
      // A pass must not stall on a runtime that stopped answering: a short deadline (shorter
      // still while it is known to be down), then the last known pods.
      const pods = await o.runtime.listPods(this.runtimeOk ? 1000 : 250);
      if (!this.runtimeOk) o.logger.info('container runtime answers again');
      this.runtimeOk = true;
      this.problem = '';
      this.failingSince = null;
      this.pods = pods;
      this.listedAt = this.clock.now();
      for (const p of pods) this.everListed.add(p.uid);
      o.onListed?.(new Set(pods.filter((p) => p.ready).map((p) => p.uid)));
      return pods;
    } catch (err) {
      o.metrics.runtimeErrors.inc({ call: 'listPods' });
      this.problem = `container runtime: ${err instanceof Error ? err.message : String(err)}`;
      // The first failure, then at most one line per interval: a dead runtime must not flood logs.
      if (this.runtimeOk || this.errorLoggedAt === null || msSince(this.clock, this.errorLoggedAt) > RUNTIME_ERROR_LOG_MS) {
        o.logger.warn({ err }, 'container runtime does not answer; deciding on the last known pods');
        this.errorLoggedAt = this.clock.now();
      }
      this.runtimeOk = false;
      this.failingSince ??= this.clock.now();
      return this.pods;
    }
  }

  /**
   * How long the runtime has failed every listing, 0 while it answers. Health is judged on this
   * span, not on one failure: a single deadline missed while containerd is busy stopping a
   * sandbox (seen in the TCG lab right after an eviction) is no reason to restart the agent.
   */
  runtimeFailingForMs(): number {
    return this.failingSince === null ? 0 : msSince(this.clock, this.failingSince);
  }

  /**
   * inotify on the pod cgroup root (and its QoS tiers): a new pod cgroup means a new sandbox,
   * so the listing is refreshed in the background right away, and a kernel-woken pass can
   * decide on it without a CRI round trip (see forPass). Best effort: without it, such a pass
   * just lists fresh.
   */
  watchPodDirs(): void {
    const root = this.o.podRootMemoryDir;
    const dirs = [root];
    try {
      for (const e of fs.readdirSync(root, { withFileTypes: true })) {
        if (e.isDirectory() && /(^|-)(burstable|besteffort)(\.slice)?$/.test(e.name)) dirs.push(path.join(root, e.name));
      }
    } catch {
      return;
    }
    for (const d of dirs) {
      try {
        const w = fs.watch(d, { persistent: false }, (_event, name) => {
          if (name && podUidFromDirName(String(name))) this.learn();
        });
        w.on('error', () => w.close());
        this.watchers.push(w);
      } catch (err) {
        this.o.logger.debug({ err, dir: d }, 'no inotify on a pod cgroup dir');
      }
    }
  }

  /**
   * Refreshes the listing until it covers the pod cgroups seen: a sandbox turns ready a while
   * after its cgroup appears (a second or more on a loaded node or emulated CPUs), so a fixed
   * number of quick tries would give up before it and leave the next kernel-woken pass to wait
   * for a CRI round trip. Backs off from 100 ms to 1 s, for at most LEARN_FOR_MS.
   */
  private learn(delayMs = 100, until = this.clock.now() + BigInt(LEARN_FOR_MS) * 1_000_000n): void {
    if (this.learnTimer || this.closed) return;
    this.learnTimer = this.clock.after(
      delayMs,
      () => {
        this.learnTimer = null;
        void this.list()
          .then(() => {
            const cgroups = listPodCgroups(this.o.memoryMount, this.o.podCgroupRoot);
            this.forgetRemoved(new Set(cgroups.map((c) => c.uid)));
            const missing = cgroups.some((c) => !this.everListed.has(c.uid));
            if (missing && this.clock.now() < until) this.learn(Math.min(delayMs * 2, 1000), until);
          })
          // Best effort (a pass lists fresh without it); a rejection here would end the process.
          .catch((err: unknown) => this.o.logger.warn({ err }, 'pod listing refresh after a new pod cgroup failed'));
      },
      true,
    );
  }

  /** Forgets pods whose cgroup is gone and that the last listing does not name: the set stays as small as the node. */
  private forgetRemoved(cgroupUids: ReadonlySet<string>): void {
    if (this.everListed.size <= this.pods.length) return;
    const listed = new Set(this.pods.map((p) => p.uid));
    for (const uid of this.everListed) if (!cgroupUids.has(uid) && !listed.has(uid)) this.everListed.delete(uid);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.watchers) w.close();
    this.watchers = [];
    this.learnTimer = cancel(this.learnTimer);
    await this.refreshing;
  }
}
