/**
 * One pass, in two halves the agent calls in turn. `decide`: observe (fresh cgroup, statfs and
 * /proc numbers), list the runtime's pods, join them with their specs and cgroups, evaluate the
 * policy once and turn the evaluation into the ordered actions (policy/actions.ts). `act`: hand
 * those to the actuator. It owns the policy's state between passes and the last evaluation
 * (which the agent's admission and deadline timer read); it calls nothing above it.
 *
 * Runs on the main JS thread, one pass at a time (the controller guarantees it).
 */
import type { Logger } from 'pino';
import type { NodeReading } from '../node/observer';
import { decideActions, type Action } from '../policy/actions';
import type { ActiveBrake } from '../policy/brake';
import type { PolicyConfig } from '../policy/config';
import { assess, initialState, planEvictions, type Evaluation, type PolicyState } from '../policy/evaluate';
import { podFacts } from '../policy/pods';
import { decideOrders, type OrderConfirmation, type OrderDecision } from '../policy/standing-order';
import { needsContainerDiskUsage } from '../policy/signals';
import type { ContainerUsage } from '../policy/types';
import type { Actuator, PassStamps } from './actuator';
import { joinPods, type JoinedPod } from './active-pods';
import type { LastKnownPriorities } from './last-known-priorities';
import { msBetween } from './clock';
import type { PassResult, PassTrigger } from './controller';
import type { AgentMetrics } from './metrics';
import type { NodeView } from './node-view';
import type { PodListing } from './pod-listing';
import type { Clock, PodSpecSource, RuntimePort } from './ports';
import type { PendingConfirmation } from './order-book';
import type { VolumeUsageCache } from './volume-usage';
import type { MemoryPressureTracker } from './memory-pressure-tracker';
import type { MemoryPressureState } from '../policy/memory-pressure';

export interface PassOptions {
  policy: PolicyConfig;
  node: NodeView;
  runtime: RuntimePort;
  pods?: PodSpecSource;
  /** runtime-only specs read evictd.io/* sandbox annotations (see agent/active-pods.ts) */
  trustSandboxAnnotations?: boolean;
  /** what the pod source last said of each pod's priority (kept in the state dir) */
  lastKnown?: LastKnownPriorities;
  logger: Logger;
  metrics: AgentMetrics;
  listing: PodListing;
  actuator: Actuator;
  clock: Clock;
  /** the pods' emptyDir usage, measured in the background (local-storage limits, disk ranking) */
  volumes?: VolumeUsageCache;
  /** the memory brakes in force, when the brake is on */
  brakes?: { readonly active: ActiveBrake[] };
  /** KEP-5986's per-container memory pressure, when it is on */
  pressure?: Pick<MemoryPressureTracker, 'decide'>;
  /**
   * Standing orders, when they are on: the used orders to confirm this pass (their pods are left
   * out of the ranking), how long an order stands, and a pod cgroup path's directory (where an
   * order's kill is written) and its memory one (whose statistics the order's thread reads).
   */
  orders?: {
    pending(): PendingConfirmation[];
    ttlMs: number;
    cgroupDir(podPath: string): string;
    memoryDir?(podPath: string): string;
    flushUses?(): void;
  };
}

/** What `decide` found, for `act` and the agent. */
export interface Decision {
  observation: NodeReading;
  evaluation: Evaluation;
  actions: Action[];
  /** the pods the actions may name (pods being stopped left out) */
  pods: JoinedPod[];
  stamps: PassStamps;
  startedNs: bigint;
  /** standing orders for the hard memory lines (empty when they are off) */
  orders: OrderDecision[];
  /** the pods the policy ranked (pods being stopped or confirmed left out) */
  ranked: JoinedPod[];
  /** the runtime's ready pods this pass decided on */
  listedUids: Set<string>;
  /** what a recording of this pass needs beside the above (see src/sim/recording.ts) */
  given: {
    /** the policy's `now` (monotonic ns) */
    now: number;
    /** used standing orders this pass confirmed */
    confirming: OrderConfirmation[];
    /** the brakes in force as the pass decided (null: the brake is off) */
    brakes: ActiveBrake[] | null;
    /** every pod uid listed, the ranked ones included (the brake's `present`) */
    present: string[];
    /** KEP-5986's state after this pass's decision, before its relaxes (absent: it is off) */
    pressure?: MemoryPressureState;
  };
}

export class PassRunner {
  private state: PolicyState = initialState();
  private lastConditions = '';
  private readonly distrustLogged = new Set<string>();
  lastEvaluation: Evaluation | null = null;

  constructor(private readonly o: PassOptions) {}

  async decide(trigger: PassTrigger): Promise<Decision> {
    const o = this.o;
    const now = (): bigint => o.clock.now();
    const t0 = now();
    o.metrics.passes.inc();
    if (trigger.sources.start || trigger.sources.housekeeping) void o.node.refreshImageFs();
    const observedNs = now();
    const obs = o.node.observe();
    const podsNs = now();
    const runtimePods = await o.listing.forPass(obs, trigger);
    // Whether the runtime answered (or its listing is fresh enough to stand for it): a failed
    // listing says nothing about which pods run, so it must not make the agent forget any.
    const listed = o.listing.runtimeOk;
    const podsDoneNs = now();
    const all = joinPods(runtimePods, obs.pods, o.pods, {
      trustAnnotations: o.trustSandboxAnnotations === true,
      ...(o.lastKnown ? { lastKnownPriority: o.lastKnown.priorityOf } : {}),
    });
    this.logDistrusted(all);
    if (listed)
      o.lastKnown?.learn(
        all.map((j) => ({
          uid: j.runtime.uid,
          namespace: j.active.spec.namespace,
          name: j.active.spec.name,
          priority: j.active.spec.priority,
          fromSource: j.specSource === 'pod-source',
        })),
      );
    // Pods killed by a used standing order are confirmed, never ranked again (a second eviction).
    // An order used an instant ago (the line's own wake-up may be what started this pass) is
    // told of now, not on a later turn.
    o.orders?.flushUses?.();
    const confirming = o.orders?.pending() ?? [];
    const confirmingUids = new Set(confirming.map((c) => c.pod.runtime.uid));
    const joined = all.filter((j) => !o.actuator.isInFlight(j.runtime.uid) && !confirmingUids.has(j.runtime.uid));
    // An order's crossing is a threshold met, as the kubelet would have seen it: the node
    // condition and minimum reclaim follow from it, though the memory may be back by now.
    const crossed = confirming.filter((c) => !c.confirmation.reported).map((c) => c.confirmation.order.threshold);
    const input = { now: Number(now()), node: obs.node, layout: obs.layout, crossed };
    const assessed = assess(o.policy, this.state, input);
    this.addVolumeUsage(joined);
    // The pods' container disk usage costs a runtime call per container, so it is read only
    // when it decides something: a disk threshold is met (the ranking uses it), or, on the
    // kubelet's own cadence (housekeeping), a pod has a local-storage limit to check.
    const diskMet = assessed.thresholdsMet.some((t) => needsContainerDiskUsage(t.signal));
    const routine = trigger.sources.housekeeping !== undefined || trigger.sources.start !== undefined;
    if (diskMet || (routine && joined.some((j) => hasLocalStorageLimit(j)))) await this.addDiskUsage(joined);
    // After the disk usage (which rewrites the containers' entries): each container's signals.
    const pressure = o.pressure ? await o.pressure.decide(joined, input.now, listed) : undefined;
    const active = joined.map((j) => j.active);
    const ev = planEvictions(o.policy, assessed, active, obs.layout);
    const brakes = o.brakes
      ? { now: input.now, layout: obs.layout, pods: active, present: new Set(all.map((j) => j.runtime.uid)), active: o.brakes.active }
      : undefined;
    const actions = decideActions(
      o.policy,
      assessed,
      ev,
      brakes,
      confirming.map((c) => c.confirmation),
      pressure,
    );
    const orders = o.orders
      ? decideOrders(
          o.policy,
          assessed.obs,
          joined.map((j) => ({ pod: j.active, ...(j.cgroup ? orderDirs(o.orders!, j.cgroup.path) : {}) })),
          obs.layout,
          o.orders.ttlMs,
        )
      : [];
    const decisionNs = now();
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
          actions: actions.map((a) => a.type),
          orders: orders.map((d) => (d.order ? `${d.signal}[${d.thresholdIndex}]=${d.order.pod.name}` : `${d.signal}[${d.thresholdIndex}]:${d.why}`)),
        },
        'pass',
      );
    }
    this.state = ev.state;
    this.lastEvaluation = ev;
    o.metrics.observePass(obs.node, ev);
    this.logConditions(ev);
    return {
      observation: obs,
      evaluation: ev,
      actions,
      // A confirmation names its pod as the placing pass joined it: it may be gone from the listing.
      pods: [...joined, ...confirming.map((c) => c.pod)],
      stamps: { trigger, observedNs, decisionNs },
      startedNs: t0,
      orders,
      ranked: joined,
      listedUids: new Set(runtimePods.filter((p) => p.ready).map((p) => p.uid)),
      // copies: acting marks a confirmation reported, and the recording needs it as this pass took it
      given: {
        now: input.now,
        confirming: confirming.map((c) => ({ ...c.confirmation })),
        brakes: o.brakes ? [...o.brakes.active] : null,
        present: all.map((j) => j.runtime.uid),
        ...(pressure ? { pressure: pressure.state } : {}),
      },
    };
  }

  /** Carries out what `decide` found; the pass's duration is observed either way. */
  async act(d: Decision): Promise<PassResult> {
    try {
      return await this.o.actuator.execute(d.actions, d.pods, d.stamps);
    } finally {
      this.o.metrics.passDuration.observe(msBetween(d.startedNs, this.o.clock.now()) / 1000);
    }
  }

  /** One log line when the node conditions change. */
  /** A pod source's spec the join refused (a forged mirror claim), said once per pod. */
  private logDistrusted(all: readonly JoinedPod[]): void {
    for (const j of all) {
      if (!j.distrusted || this.distrustLogged.has(j.runtime.uid)) continue;
      if (this.distrustLogged.size > 10_000) this.distrustLogged.clear();
      this.distrustLogged.add(j.runtime.uid);
      this.o.logger.warn(
        { pod: `${j.runtime.namespace}/${j.runtime.name}`, uid: j.runtime.uid, reason: j.distrusted },
        "pod source's spec not believed; the sandbox's own is used",
      );
    }
  }

  private logConditions(ev: Evaluation): void {
    const key = ev.conditions.join(',');
    if (key === this.lastConditions) return;
    this.o.logger.info({ conditions: ev.conditions, thresholdsMet: ev.thresholdsMet }, 'node conditions changed');
    this.lastConditions = key;
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

/** Where an order on the pod is written (its cgroup.kill) and, where known, where its statistics are read. */
function orderDirs(orders: NonNullable<PassOptions['orders']>, podPath: string): { cgroupDir: string; memoryDir?: string } {
  return { cgroupDir: orders.cgroupDir(podPath), ...(orders.memoryDir ? { memoryDir: orders.memoryDir(podPath) } : {}) };
}
