/**
 * One pass, start to end: observe (fresh cgroup, statfs and /proc numbers), list the runtime's
 * pods, join them with their specs and cgroups, evaluate the policy once, then hand the result to
 * the actuator. It owns the policy's state between passes and the last evaluation (which the
 * agent's admission and grace-period timer read).
 *
 * Runs on the main JS thread, one pass at a time (the controller guarantees it).
 */
import type { Logger } from 'pino';
import type { NodeObserver, Observation } from '../node/observer';
import type { PolicyConfig } from '../policy/config';
import { decideBrakes, killedAtOnce } from '../policy/brake';
import { formatDuration } from '../policy/duration';
import { assess, initialState, planEvictions, type Assessment, type Evaluation, type PolicyState } from '../policy/evaluate';
import { podFacts } from '../policy/pods';
import { isMemorySignal } from '../policy/signals';
import type { ContainerUsage, FilesystemLayout } from '../policy/types';
import type { Actuator, PassStamps } from './actuator';
import type { MemoryBrakes } from './brake';
import { joinPods, type JoinedPod } from './active-pods';
import type { PassResult, PassTrigger } from './controller';
import type { AgentMetrics } from './metrics';
import type { PodListing } from './pod-listing';
import type { PodSpecSource, RuntimePort } from './ports';
import type { VolumeUsageCache } from './volume-usage';

export interface PassOptions {
  policy: PolicyConfig;
  observer: NodeObserver;
  runtime: RuntimePort;
  pods?: PodSpecSource;
  logger: Logger;
  metrics: AgentMetrics;
  listing: PodListing;
  actuator: Actuator;
  /** the pods' emptyDir usage, measured in the background (local-storage limits, disk ranking) */
  volumes?: VolumeUsageCache;
  /** the memory brake, when it is on */
  brakes?: MemoryBrakes;
  /** the evaluation is known (before acting): the agent schedules its grace-period timer */
  onEvaluation(ev: Evaluation): void;
  /** after acting, with the pass's observation: the agent moves its notification lines */
  afterAct(obs: Observation): void;
}

const ns = (): bigint => process.hrtime.bigint();
const msBetween = (a: bigint, b: bigint): number => Number(b - a) / 1e6;

export class PassRunner {
  private state: PolicyState = initialState();
  private imagefsPath: string | undefined;
  private lastConditions = '';
  lastEvaluation: Evaluation | null = null;

  constructor(private readonly o: PassOptions) {}

  /** A fresh observation (the image filesystem as last reported by the runtime). */
  observe(): Observation {
    return this.o.observer.observe(this.imagefsPath);
  }

  async run(trigger: PassTrigger): Promise<PassResult> {
    const o = this.o;
    const t0 = ns();
    o.metrics.passes.inc();
    // In the background: the mountpoint only decides the filesystem layout, it may lag a pass.
    if (trigger.sources.start || trigger.sources.housekeeping) void this.refreshImageFs();
    const observedNs = ns();
    const obs = this.observe();
    const podsNs = ns();
    const runtimePods = await o.listing.forPass(obs, trigger);
    const podsDoneNs = ns();
    const all = joinPods(runtimePods, obs.pods, o.pods);
    const joined = all.filter((j) => !o.actuator.isInFlight(j.runtime.uid));
    const input = { now: Number(ns()), node: obs.node, layout: obs.layout };
    const assessed = assess(o.policy, this.state, input);
    this.addVolumeUsage(joined);
    // The pods' container disk usage costs a runtime call per container, so it is read only
    // when it decides something: a disk threshold is met (the ranking uses it), or, on the
    // kubelet's own cadence (housekeeping), a pod has a local-storage limit to check.
    const diskMet = assessed.thresholdsMet.some((t) => !isMemorySignal(t.signal) && t.signal !== 'pid.available');
    const routine = trigger.sources.housekeeping !== undefined || trigger.sources.start !== undefined;
    if (diskMet || (routine && joined.some((j) => hasLocalStorageLimit(j)))) await this.addDiskUsage(joined);
    const ev = planEvictions(o.policy, assessed, joined.map((j) => j.active), obs.layout);
    const decisionNs = ns();
    if (o.logger.isLevelEnabled('debug')) {
      o.logger.debug(
        {
          sources: trigger.sources,
          wakeToPassMs: trigger.firstEventNs !== null ? msBetween(trigger.firstEventNs, t0) : undefined,
          observeMs: msBetween(observedNs, podsNs),
          podsMs: msBetween(podsNs, podsDoneNs),
          evaluateMs: msBetween(podsDoneNs, decisionNs),
          cachedPods: o.listing.usedCache,
          memoryAvailable: obs.node.memory?.availableBytes,
          pods: joined.length,
          thresholdsMet: ev.thresholdsMet.length,
        },
        'pass',
      );
    }
    this.state = ev.state;
    this.lastEvaluation = ev;
    o.metrics.observePass(obs.node, ev);
    this.logConditions(ev);
    o.onEvaluation(ev);
    const stamps = { trigger, observedNs, decisionNs };
    try {
      // Before acting: a soft eviction's stop can take the pod's whole termination grace period,
      // and the brake is what holds the pod while it waits.
      if (o.brakes && (await this.brake(o.brakes, assessed, ev, { now: input.now, layout: obs.layout }, all, joined, stamps))) return { again: true };
      return await o.actuator.act(ev, joined, stamps);
    } finally {
      // After acting: moving a line can block for an RCU grace period (see arming.ts), which
      // must not sit between a decision and its kill.
      o.afterAct(obs);
      o.metrics.passDuration.observe(msBetween(t0, ns()) / 1000);
    }
  }

  /**
   * The memory brake's part of the pass: releases, a new brake, and stops of pods braked past
   * the bound. True when such a stop happened: the plan was made before it, so the pass ends
   * there and the next one decides on fresh numbers.
   */
  private async brake(
    brakes: MemoryBrakes,
    assessed: Assessment,
    ev: Evaluation,
    at: { now: number; layout: FilesystemLayout },
    all: JoinedPod[],
    joined: JoinedPod[],
    stamps: PassStamps,
  ): Promise<boolean> {
    const o = this.o;
    const d = decideBrakes(o.policy, assessed, {
      ...at,
      pods: joined.map((j) => j.active),
      present: new Set(all.map((j) => j.runtime.uid)),
      active: brakes.active,
      killing: killedAtOnce(ev),
    });
    for (const r of d.release) brakes.release(r.uid, r.why);
    if (d.apply) {
      const j = joined.find((x) => x.runtime.uid === d.apply!.pod.uid);
      if (j?.cgroup) brakes.apply(d.apply, j.cgroup.path, process.hrtime.bigint());
    }
    let stopped = false;
    for (const s of d.stop) {
      const j = joined.find((x) => x.runtime.uid === s.uid);
      const entry = brakes.entry(s.uid);
      if (!j || !entry) continue;
      const bound = formatDuration(o.policy.memoryBrake!.maxDurationNs);
      const why = `held by the memory brake for ${formatDuration(Math.round(s.brakedNs / 1e6) * 1e6)}, past its bound of ${bound}`;
      o.logger.warn({ pod: `${entry.pod.namespace}/${entry.pod.name}`, uid: s.uid, brakedMs: s.brakedNs / 1e6, bound }, 'memory brake: pod braked too long; stopping it');
      o.metrics.brakeStops.inc();
      const rec = await o.actuator.stopBraked(
        j,
        { pod: entry.pod, signal: entry.signal, gracePeriodSeconds: 0, message: `The node was low on resource: memory. The pod was ${why}.`, annotations: {}, reasons: [why] },
        stamps,
      );
      stopped ||= rec.ok;
    }
    return stopped;
  }

  /** One log line when the node conditions change. */
  private logConditions(ev: Evaluation): void {
    const key = ev.conditions.join(',');
    if (key === this.lastConditions) return;
    this.o.logger.info({ conditions: ev.conditions, thresholdsMet: ev.thresholdsMet }, 'node conditions changed');
    this.lastConditions = key;
  }

  private async refreshImageFs(): Promise<void> {
    try {
      this.imagefsPath = (await this.o.runtime.imageFsInfo())?.mountpoint || undefined;
    } catch (err) {
      this.o.metrics.runtimeErrors.inc({ call: 'imageFsInfo' });
      this.o.logger.debug({ err }, 'ImageFsInfo failed');
    }
  }

  /** The last emptyDir measurement onto the pods, and a new one started when it is due. */
  private addVolumeUsage(joined: JoinedPod[]): void {
    const volumes = this.o.volumes;
    if (!volumes) return;
    volumes.refresh(joined.map((j) => ({ uid: j.runtime.uid, spec: j.active.spec })));
    for (const j of joined) {
      const used = volumes.get(j.runtime.uid);
      if (used.length > 0) (j.active.usage ??= { containers: [], volumes: [] }).volumes = used;
    }
  }

  /** Adds writable-layer and log usage to the pods; without it (the runtime cannot tell) the ranking goes on. */
  private async addDiskUsage(joined: JoinedPod[]): Promise<void> {
    if (!this.o.runtime.containerDiskUsage) return;
    let usage: Map<string, ContainerUsage[]>;
    try {
      usage = await this.o.runtime.containerDiskUsage();
    } catch (err) {
      this.o.metrics.runtimeErrors.inc({ call: 'containerDiskUsage' });
      this.o.logger.warn({ err }, 'container disk usage unavailable; ranking without it');
      return;
    }
    for (const j of joined) {
      const disk = usage.get(j.runtime.uid);
      if (!disk) continue;
      const u = (j.active.usage ??= { containers: [], volumes: [] });
      // The pod-level memory entry stays; disk entries are per container.
      u.containers = [...u.containers.filter((c) => c.memoryBytes !== undefined).map((c) => ({ name: c.name, memoryBytes: c.memoryBytes! })), ...disk];
    }
  }
}

/** An emptyDir sizeLimit or an ephemeral-storage limit: what the kubelet's localStorageEviction checks. */
function hasLocalStorageLimit(j: JoinedPod): boolean {
  const f = podFacts(j.active.spec);
  return f.emptyDirLimits.size > 0 || f.storageLimit !== undefined || f.containerStorageLimits.size > 0;
}
