/**
 * KEP-5986 on a live node (its rules: src/policy/memory-pressure.ts). Each pass it reads every
 * container cgroup's memory.events and memory.pressure (node/container-pressure.ts), names them
 * through the runtime's container list, puts them on the pods' usage and decides; it keeps the
 * policy's state between passes, carries out stage 1 (the runtime's UpdateContainerResources,
 * memory.high read back) and watches each container so that a pass comes when one could find
 * something new:
 * - memory.events (kernfs notifies every change): the counters are read in the callback and a
 *   pass is woken only when a rate is above its threshold on the history the last pass kept (a
 *   throttled container changes the file thousands of times a second);
 * - a PSI trigger per container, `some` stall of the threshold's share of a 10 s window (the
 *   window of avg10): it fires when the stall gets there, and the pass reads avg10.
 * The grace periods' ends wake the loop through the deadline timer (nextDueNs). The pods'
 * ContainerMemoryPressure condition goes to the reporter (the API server) as it changes: set
 * when a relax is applied (not merely decided), cleared when the policy no longer holds it.
 *
 * Runs on the main JS thread, inside a pass, except the watch callbacks (on the loop too).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { readContainerPressure } from '../node/container-pressure';
import { cgroupDir, type CgroupLayout } from '../node/cgroups';
import { parseKeyValues } from '../node/cgroups';
import type { MemoryPressureConfig, PolicyConfig } from '../policy/config';
import {
  CONTAINER_MEMORY_PRESSURE,
  MEMORY_HIGH_RELAXED,
  decideMemoryPressure,
  initialMemoryPressureState,
  rateAboveThreshold,
  relaxOutcome,
  type MemoryPressureDecision,
  type MemoryPressureState,
  type Relax,
  type RelaxResult,
  type Sample,
} from '../policy/memory-pressure';
import type { JoinedPod } from './active-pods';
import type { ConditionRecord } from './condition-record';
import type { Effect } from './effects/effect';
import type { AgentMetrics } from './metrics';
import type { PodRef } from '../policy/types';
import type { Clock, EvictionReporter, NotificationPort, RuntimeContainer, RuntimePort, WatchHandle, Wakeup } from './ports';

/** The reason evictd gives a cleared ContainerMemoryPressure (the KEP names none: "cleared when pressure subsides"). */
export const MEMORY_PRESSURE_SUBSIDED = 'MemoryPressureSubsided';

/** avg10's window: a PSI trigger over it fires near where avg10 reaches the threshold. */
const PSI_WINDOW_US = 10_000_000;

export interface MemoryPressureTrackerOptions {
  config: MemoryPressureConfig;
  maxPodGracePeriodSeconds: number;
  runtime: RuntimePort;
  /** a pod cgroup path's directory in the cgroup v2 hierarchy */
  podDir(podPath: string): string;
  /** null: no kernel notifications (the housekeeping tick and the deadlines drive the passes) */
  notifications: NotificationPort | null;
  wake(w: Wakeup): void;
  clock: Clock;
  logger: Logger;
  metrics: AgentMetrics;
  /** where the ContainerMemoryPressure condition is written, if anywhere */
  reporter?: EvictionReporter;
  /** the pods it was set True on, kept across restarts (the state dir), if anywhere */
  record?: ConditionRecord;
}

interface Known {
  uid: string;
  name: string;
  id: string;
  dir: string;
}

export class MemoryPressureTracker {
  private state: MemoryPressureState = initialMemoryPressureState();
  /** the containers of the last pass, by `${uid}/${name}` */
  private known = new Map<string, Known>();
  private names = new Map<string, RuntimeContainer>();
  private readonly watches = new Map<string, WatchHandle[]>();
  private pressuredUids = new Set<string>();
  /** pods whose ContainerMemoryPressure condition was set True, by uid */
  private readonly conditioned = new Map<string, PodRef>();
  last: MemoryPressureDecision | null = null;
  /** the relaxes of the pass under way, for its recording line */
  private relaxed: RelaxResult[] = [];

  /** Stage 1 as an action: each container relaxed through the runtime, the outcome kept. */
  readonly relaxing: Effect<readonly Relax[], void> = {
    run: (relax) => this.relax(relax),
    rehearse: (relax) => ({
      message: 'would relax memory.high to memory.max (KEP-5986 stage 1; dry run)',
      fields: { containers: relax.map((r) => `${r.pod.namespace}/${r.pod.name}/${r.container}`) },
      outcome: undefined,
    }),
  };

  constructor(private readonly o: MemoryPressureTrackerOptions) {
    // Set by a run before this one: cleared at the first pass (its state starts fresh), unless a pod is gone.
    for (const [uid, pod] of o.record?.load() ?? []) this.conditioned.set(uid, pod);
    if (this.conditioned.size > 0)
      o.logger.info(
        { pods: [...this.conditioned.values()].map((p) => `${p.namespace}/${p.name}`) },
        'ContainerMemoryPressure set by the last run: cleared at the first pass',
      );
  }

  /**
   * Reads the containers' signals onto the pods and decides this pass. `listed`: the runtime's
   * pod list is current (a failed listing says nothing about which pods are gone).
   */
  async decide(joined: readonly JoinedPod[], nowNs: number, listed = true): Promise<MemoryPressureDecision> {
    const read = joined.flatMap((j) => (j.cgroup ? readContainerPressure(this.o.podDir(j.cgroup.path)).map((r) => ({ j, r })) : []));
    // A container's id never changes: the runtime is asked again only when a cgroup shows one it
    // has not named yet (a new container), not on every pass. The pause container is the sandbox's.
    if (read.some(({ j, r }) => r.containerId !== j.runtime.sandboxId && !this.names.has(r.containerId))) await this.refreshNames();
    const known = new Map<string, Known>();
    for (const { j, r } of read) {
      const c = this.names.get(r.containerId);
      if (!c || c.sandboxId !== j.runtime.sandboxId) continue; // the pause container, or one not listed yet
      const usage = (j.active.usage ??= { containers: [], volumes: [] });
      usage.containers.push({
        name: c.name,
        memoryEvents: { high: r.high, max: r.max },
        ...(r.psiSomeAvg10 !== undefined ? { memoryPressureSomeAvg10: r.psiSomeAvg10 } : {}),
      });
      known.set(`${j.runtime.uid}/${c.name}`, { uid: j.runtime.uid, name: c.name, id: c.id, dir: r.dir });
    }
    this.known = known;
    const d = decideMemoryPressure(
      this.o.config,
      this.o.maxPodGracePeriodSeconds,
      this.state,
      nowNs,
      joined.map((j) => j.active),
    );
    this.state = d.state;
    this.last = d;
    this.logPressure(d);
    this.clearConditions(d, new Set(joined.map((j) => j.runtime.uid)), listed);
    this.rewatch();
    return d;
  }

  /** The earliest grace period's end still ahead (monotonic ns), or null. */
  nextDueNs(nowNs: number): number | null {
    const due = (this.last?.pressured ?? []).map((p) => p.dueNs).filter((t) => t > nowNs);
    return due.length > 0 ? Math.min(...due) : null;
  }

  close(): void {
    for (const hs of this.watches.values()) for (const h of hs) void h.close();
    this.watches.clear();
  }

  /** The runtime's containers by id; a failed listing keeps the last one (ids do not change). */
  private async refreshNames(): Promise<void> {
    if (!this.o.runtime.listContainers) return;
    try {
      this.names = new Map((await this.o.runtime.listContainers()).map((c) => [c.id, c]));
    } catch (err) {
      this.o.metrics.runtimeErrors.inc({ call: 'listContainers' });
      this.o.logger.warn({ err }, 'container list unavailable: KEP-5986 decides on the last one');
    }
  }

  private async relax(list: readonly Relax[]): Promise<void> {
    for (const r of list) {
      const k = this.known.get(`${r.pod.uid}/${r.container}`);
      const pod = `${r.pod.namespace}/${r.pod.name}`;
      if (!k || !this.o.runtime.relaxMemoryHigh) {
        this.outcome({ uid: r.pod.uid, container: r.container, ok: false });
        this.o.metrics.memoryHighRelaxed.inc({ outcome: 'refused' });
        this.o.logger.warn({ pod, container: r.container }, 'memory.high relax: no container id or no runtime support; stage 2 next');
        continue;
      }
      const t0 = this.o.clock.now();
      const res = await this.o.runtime.relaxMemoryHigh(k.id, () => Promise.resolve(fs.readFileSync(path.join(k.dir, 'memory.high'), 'utf8').trim()));
      const after = res.outcome === 'applied' ? this.readEvents(k) : null;
      this.outcome({ uid: r.pod.uid, container: r.container, ok: res.outcome === 'applied', ...(after ? { after } : {}) });
      this.o.metrics.memoryHighRelaxed.inc({ outcome: res.outcome });
      const fields = {
        pod,
        uid: r.pod.uid,
        // CLOCK_MONOTONIC ns once the runtime answered and memory.high was read back (bench memory-pressure)
        at: String(this.o.clock.now()),
        container: r.container,
        containerId: k.id,
        outcome: res.outcome,
        runtimeMs: res.runtimeMs,
        relaxMs: Number(this.o.clock.now() - t0) / 1e6,
        signals: r.pressure.active,
        highRate: r.pressure.highRate,
        maxRate: r.pressure.maxRate,
        psiSomeAvg10: r.pressure.psiSomeAvg10,
        detail: res.detail,
      };
      if (res.outcome === 'applied') {
        this.o.logger.warn(fields, 'memory.high relaxed to memory.max (KEP-5986 stage 1)');
        this.setCondition(r.pod, r.container);
      } else this.o.logger.error(fields, 'memory.high relax not applied by the runtime: the pod goes to stage 2 if its pressure stays');
    }
  }

  /** A relax's result, on the state and kept for the pass's recording line (which the replay applies the same way). */
  private outcome(r: RelaxResult): void {
    this.state = relaxOutcome(this.state, r.uid, r.container, r.ok, r.after);
    this.relaxed.push(r);
  }

  /** The relaxes carried out since the last call (the pass's, once it has acted). */
  takeRelaxed(): RelaxResult[] {
    const out = this.relaxed;
    this.relaxed = [];
    return out;
  }

  /** Stage 1 applied: the condition set, with a Warning event (the KEP's), unless it already is. */
  private setCondition(pod: PodRef, container: string): void {
    if (this.conditioned.has(pod.uid)) return;
    this.conditioned.set(pod.uid, pod);
    this.o.record?.save(this.conditioned);
    const message = `memory.high of container ${container} was raised to memory.max after sustained memory pressure`;
    void this.o.reporter?.podCondition?.({
      pod,
      type: CONTAINER_MEMORY_PRESSURE,
      status: 'True',
      reason: MEMORY_HIGH_RELAXED,
      message,
      event: { reason: MEMORY_HIGH_RELAXED, message },
    });
  }

  /** The pods the policy no longer holds the condition for are cleared; a pod gone is only forgotten. */
  private clearConditions(d: MemoryPressureDecision, present: ReadonlySet<string>, listed: boolean): void {
    const held = new Set(d.conditions.map((p) => p.uid));
    const before = this.conditioned.size;
    for (const [uid, pod] of this.conditioned) {
      if (held.has(uid)) continue;
      // Absent from a list that failed: not known to be gone, so kept for a pass that can tell.
      if (!present.has(uid) && !listed) continue;
      this.conditioned.delete(uid);
      if (!present.has(uid)) continue;
      this.o.logger.info({ pod: `${pod.namespace}/${pod.name}`, uid }, 'ContainerMemoryPressure cleared: the pressure subsided');
      void this.o.reporter?.podCondition?.({
        pod,
        type: CONTAINER_MEMORY_PRESSURE,
        status: 'False',
        reason: MEMORY_PRESSURE_SUBSIDED,
        message: 'memory pressure subsided after memory.high was relaxed',
      });
    }
    if (this.conditioned.size !== before) this.o.record?.save(this.conditioned);
  }

  private logPressure(d: MemoryPressureDecision): void {
    const now = new Set(d.pressured.map((p) => p.pod.uid));
    for (const p of d.pressured) {
      if (this.pressuredUids.has(p.pod.uid)) continue;
      this.o.logger.info(
        { pod: `${p.pod.namespace}/${p.pod.name}`, uid: p.pod.uid, containers: p.containers, dueNs: p.dueNs },
        'containers under memory pressure (KEP-5986): grace period started',
      );
    }
    for (const uid of this.pressuredUids) if (!now.has(uid)) this.o.logger.info({ uid }, 'containers no longer under memory pressure (KEP-5986)');
    this.pressuredUids = now;
  }

  /** One memory.events watch and, with a PSI threshold, one trigger per container; the gone ones closed. */
  private rewatch(): void {
    const n = this.o.notifications;
    if (!n) return;
    for (const [key, hs] of this.watches) {
      if (this.known.has(key)) continue;
      for (const h of hs) void h.close();
      this.watches.delete(key);
    }
    for (const [key, k] of this.known) {
      if (this.watches.has(key)) continue;
      const handles: WatchHandle[] = [];
      const onError = (err: Error) => this.o.logger.debug({ err, container: key }, 'container watch ended');
      try {
        if (this.o.config.highThreshold > 0 || this.o.config.maxThreshold > 0)
          handles.push(n.watchFile(path.join(k.dir, 'memory.events'), { onWakeup: (w) => this.onEvents(k, w), onError }));
        if (this.o.config.psiThreshold > 0) {
          const stallUs = Math.max(1, Math.round((this.o.config.psiThreshold / 100) * PSI_WINDOW_US));
          handles.push(
            n.watchPsi(
              path.join(k.dir, 'memory.pressure'),
              { kind: 'some', stallUs, windowUs: PSI_WINDOW_US },
              { onWakeup: (w) => this.o.wake({ ...w, source: 'container-psi' }), onError },
            ),
          );
        }
      } catch (err) {
        this.o.logger.debug({ err, container: key }, 'container watch not armed (the passes still read it)');
      }
      this.watches.set(key, handles);
    }
  }

  /** A container's memory.events changed: a pass only if a rate is now above its threshold and no grace period runs for its pod. */
  private onEvents(k: Known, w: Wakeup): void {
    if (this.pressuredUids.has(k.uid)) return; // its grace period's end is the deadline timer's
    const sample = this.readEvents(k);
    if (sample && rateAboveThreshold(this.o.config, this.state, k.uid, k.name, sample)) this.o.wake({ ...w, source: 'container-memory-events' });
  }

  /** The container's memory.events counters now, or null when its cgroup is gone. */
  private readEvents(k: Known): Sample | null {
    let text: string;
    try {
      text = fs.readFileSync(path.join(k.dir, 'memory.events'), 'utf8');
    } catch {
      return null;
    }
    const ev = parseKeyValues(text);
    return { atNs: Number(this.o.clock.now()), high: ev.high ?? 0, max: ev.max ?? 0 };
  }
}

/** The tracker an agent with these options needs, or null when KEP-5986 is off; refused on cgroup v1. */
export function memoryPressureTracker(
  o: {
    policy: PolicyConfig;
    layout: Pick<CgroupLayout, 'memoryMount' | 'memoryVersion'>;
    runtime: RuntimePort;
    notifications: NotificationPort | null;
    logger: Logger;
    metrics: AgentMetrics;
    reporter?: EvictionReporter;
  },
  wake: (w: Wakeup) => void,
  clock: Clock,
  record?: ConditionRecord,
): MemoryPressureTracker | null {
  const config = o.policy.memoryPressure;
  if (!config) return null;
  if (o.layout.memoryVersion !== 2)
    throw new Error('KEP-5986 memory pressure eviction needs cgroup v2 (memory.events, memory.high); the memory controller here is on cgroup v1');
  return new MemoryPressureTracker({
    config,
    maxPodGracePeriodSeconds: o.policy.maxPodGracePeriodSeconds,
    runtime: o.runtime,
    podDir: (podPath) => cgroupDir(o.layout.memoryMount, podPath),
    notifications: o.notifications,
    wake,
    clock,
    logger: o.logger,
    metrics: o.metrics,
    ...(o.reporter ? { reporter: o.reporter } : {}),
    ...(record ? { record } : {}),
  });
}
