/**
 * One evaluation pass of the eviction policy (the pure heart of the kubelet's synchronize()).
 * No I/O, no clock: the caller passes `now` and the observations, gets back the new state and
 * what to do. Node-level reclaim is the caller's I/O: it runs `reclaim.functions`, observes
 * again and asks `resolvedByReclaim` before acting on `plan`.
 */
import type { PolicyConfig, Threshold, ThresholdKind } from './config';
import { evictionMessage } from './messages';
import { podFacts } from './pods';
import { rankFor, type RankedPod } from './ranking';
import { nodeReclaimFunctions } from './reclaim';
import { SIGNAL_RESOURCE, isMemorySignal } from './signals';
import { conditionsOf, makeObservations, mergeThresholds, thresholdsForLayout, thresholdsMet, type Observation, type Observations } from './thresholds';
import {
  SIGNALS,
  type ActivePod,
  type FilesystemLayout,
  type NodeCondition,
  type NodeReclaimFunction,
  type NodeStats,
  type PodRef,
  type Signal,
} from './types';
import { localStorageViolations } from './local-storage';

export interface PolicyState {
  /** when each currently-met threshold was first seen met (ns) */
  readonly firstObservedAt: ReadonlyMap<Threshold, number>;
  /** when each node condition was last seen (ns) */
  readonly conditionLastObservedAt: ReadonlyMap<NodeCondition, number>;
  /** thresholds that met their grace period last pass: held until minimum reclaim is satisfied */
  readonly thresholdsMet: readonly Threshold[];
  /** conditions reported last pass (for admission) */
  readonly conditions: readonly NodeCondition[];
}

export function initialState(): PolicyState {
  return { firstObservedAt: new Map(), conditionLastObservedAt: new Map(), thresholdsMet: [], conditions: [] };
}

export interface PassInput {
  /** monotonic time, nanoseconds */
  now: number;
  node: NodeStats;
  pods: readonly ActivePod[];
  layout: FilesystemLayout;
  /**
   * Thresholds seen crossed since the last pass by a standing order's mechanism, which killed
   * the pod at the crossing: met in this pass as the kubelet would have observed them (the node
   * condition, minimum reclaim), though the memory may be back by now.
   */
  crossed?: readonly Threshold[];
}

export interface ThresholdStatus {
  signal: Signal;
  kind: ThresholdKind;
  /** as configured, e.g. "1Gi" or "10%" */
  quantity: string;
  gracePeriodMet: boolean;
  observed: Observation;
}

export interface Eviction {
  pod: PodRef;
  signal: string;
  gracePeriodSeconds: number;
  message: string;
  annotations: Record<string, string>;
  /** why this pod was ranked where it was, for the logs */
  reasons: string[];
}

export interface EvictionPlan {
  signal: Signal;
  resource: string;
  /** a zero-grace-period threshold: evict at once */
  hard: boolean;
  /** ranked, critical pods left out: evict the first one that stops, at most one per pass */
  candidates: Eviction[];
}

export interface Evaluation {
  state: PolicyState;
  thresholdsMet: ThresholdStatus[];
  conditions: NodeCondition[];
  /** evict all of these (grace 0); when there are any, nothing else is evicted this pass */
  localStorageEvictions: Eviction[];
  /** node-level reclaim to try before evicting for `plan` (functions may be empty) */
  reclaim: { signal: Signal; resource: string; functions: NodeReclaimFunction[] } | null;
  plan: EvictionPlan | null;
}

const signalOrder = new Map<Signal, number>(SIGNALS.map((s, i) => [s, i]));

/**
 * Which met threshold to reclaim first: memory signals first (kubelet's byEvictionPriority), then a
 * fixed signal order, hard before soft. The kubelet's own order among non-memory signals comes
 * from map iteration and is random; a fixed one makes decisions reproducible.
 */
export function byEvictionPriority(a: Threshold, b: Threshold): number {
  const am = isMemorySignal(a.signal) ? 0 : 1;
  const bm = isMemorySignal(b.signal) ? 0 : 1;
  if (am !== bm) return am - bm;
  const so = signalOrder.get(a.signal)! - signalOrder.get(b.signal)!;
  if (so !== 0) return so;
  return (a.kind === 'hard' ? 0 : 1) - (b.kind === 'hard' ? 0 : 1);
}

/** The API server's default terminationGracePeriodSeconds (core/v1 SetDefaults_PodSpec). */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;

/**
 * The grace period of a threshold eviction (kubelet's synchronize, v1.34+): a hard threshold (a
 * zero grace period) evicts at once; a soft one gives min(evictionMaxPodGracePeriod, the pod's
 * terminationGracePeriodSeconds). A pod never lacks the latter in the kubelet, because the API
 * server defaults it to 30: a spec without one is taken to say 30. With no max pod grace period
 * (0) the spec's fixed rule is 0.
 */
export function evictionGracePeriod(config: PolicyConfig, threshold: Threshold, pod: ActivePod): number {
  if (threshold.gracePeriodNs === 0 || config.maxPodGracePeriodSeconds <= 0) return 0;
  const own = pod.spec.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  return Math.min(config.maxPodGracePeriodSeconds, own);
}

/** What every candidate of one plan shares. */
interface PlanContext {
  config: PolicyConfig;
  threshold: Threshold;
  resource: string;
  ordered: readonly Threshold[];
  obs: Observations;
}

/**
 * An Eviction computed on first read: a plan ranks every pod, but the agent reads one or two
 * candidates, so at 10,000 pods each candidate is just two references until someone looks.
 */
class LazyEviction implements Eviction {
  private text: { message: string; annotations: Record<string, string> } | undefined;
  constructor(
    private readonly ctx: PlanContext,
    private readonly ranked: RankedPod,
  ) {}
  get pod(): PodRef {
    return ref(this.ranked.pod);
  }
  get signal(): Signal {
    return this.ctx.threshold.signal;
  }
  get gracePeriodSeconds(): number {
    return evictionGracePeriod(this.ctx.config, this.ctx.threshold, this.ranked.pod);
  }
  private get built() {
    const { resource, ordered, obs } = this.ctx;
    return (this.text ??= evictionMessage(resource, this.ranked.pod.spec, this.ranked.pod.usage, ordered, obs));
  }
  get message(): string {
    return this.built.message;
  }
  get annotations(): Record<string, string> {
    return this.built.annotations;
  }
  get reasons(): string[] {
    return this.ranked.reasons;
  }
  toJSON(): Eviction {
    return {
      pod: this.pod,
      signal: this.signal,
      gracePeriodSeconds: this.gracePeriodSeconds,
      message: this.message,
      annotations: this.annotations,
      reasons: this.reasons,
    };
  }
}

function ref(pod: ActivePod): PodRef {
  return { namespace: pod.spec.namespace, name: pod.spec.name, uid: pod.spec.uid };
}

function status(t: Threshold, obs: Observations, gracePeriodMet: boolean): ThresholdStatus {
  return { signal: t.signal, kind: t.kind, quantity: t.value.text, gracePeriodMet, observed: obs[t.signal]! };
}

/** The thresholds and conditions of one pass: everything `evaluate` decides before it looks at pods. */
export interface Assessment {
  state: PolicyState;
  thresholdsMet: ThresholdStatus[];
  conditions: NodeCondition[];
  /** met thresholds whose grace period is over, in the order they are reclaimed */
  due: readonly Threshold[];
  obs: Observations;
}

/**
 * The first half of a pass, on node numbers alone. The agent calls it, reads what only the met
 * signals need (per-container disk usage when a disk threshold is met: a runtime call per
 * container), then finishes the same pass with `planEvictions`. `evaluate` is the two in one.
 */
export function assess(config: PolicyConfig, state: PolicyState, input: Omit<PassInput, 'pods'>): Assessment {
  const { now, layout } = input;
  const all = thresholdsForLayout(config.thresholds, layout);
  const obs = makeObservations(input.node);

  // Met now, plus those met last pass whose minimum reclaim is not yet satisfied.
  let met = thresholdsMet(all, obs, false);
  if (state.thresholdsMet.length > 0) met = mergeThresholds(met, thresholdsMet(state.thresholdsMet, obs, true));
  if (input.crossed?.length)
    met = mergeThresholds(
      met,
      input.crossed.filter((t) => all.includes(t)),
    );

  const firstObservedAt = new Map<Threshold, number>();
  for (const t of met) firstObservedAt.set(t, state.firstObservedAt.get(t) ?? now);

  // A condition holds while any of its thresholds was seen within the transition period.
  const conditionLastObservedAt = new Map(state.conditionLastObservedAt);
  for (const c of conditionsOf(met)) conditionLastObservedAt.set(c, now);
  const conditions = [...conditionLastObservedAt]
    .filter(([, at]) => now - at < config.pressureTransitionPeriodNs)
    .map(([c]) => c)
    .sort();

  const graceMet = met.filter((t) => now - firstObservedAt.get(t)! >= t.gracePeriodNs);
  const newState: PolicyState = { firstObservedAt, conditionLastObservedAt, thresholdsMet: graceMet, conditions };

  const thresholdStatus = met
    .map((t) => status(t, obs, graceMet.includes(t)))
    .sort((a, b) => (a.signal < b.signal ? -1 : a.signal > b.signal ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));

  return { state: newState, thresholdsMet: thresholdStatus, conditions, due: [...graceMet].sort(byEvictionPriority), obs };
}

/** The second half of a pass: local-storage limits, node-level reclaim and the ranked plan. */
export function planEvictions(config: PolicyConfig, a: Assessment, pods: readonly ActivePod[], layout: FilesystemLayout): Evaluation {
  const result: Evaluation = { state: a.state, thresholdsMet: a.thresholdsMet, conditions: a.conditions, localStorageEvictions: [], reclaim: null, plan: null };

  // One lookup of each pod's derived facts per pass, shared by every step below.
  const facts = pods.map((p) => podFacts(p.spec));
  const violations = localStorageViolations(pods, layout, facts);
  if (violations.length > 0) {
    result.localStorageEvictions = violations.map((v) => ({
      pod: ref(v.pod),
      signal: v.signal,
      gracePeriodSeconds: 0,
      message: v.message,
      annotations: {},
      reasons: [`over its ${v.signal} limit`],
    }));
    return result;
  }

  if (a.due.length === 0) return result;
  const ordered = a.due;
  const threshold = ordered[0];
  const resource = SIGNAL_RESOURCE[threshold.signal];
  result.reclaim = { signal: threshold.signal, resource, functions: nodeReclaimFunctions(threshold.signal, layout) };
  if (pods.length === 0) return result;

  // Messages and reasons are built only for the candidates someone looks at: at 10,000 pods,
  // formatting them all would cost more than the ranking itself.
  const candidates: Eviction[] = [];
  const ctx: PlanContext = { config, threshold, resource, ordered, obs: a.obs };
  const critical = new Set(pods.filter((_, i) => facts[i].critical));
  for (const ranked of rankFor(threshold.signal, layout, pods, facts)) {
    if (critical.has(ranked.pod)) continue; // the kubelet refuses to evict these and tries the next
    candidates.push(new LazyEviction(ctx, ranked));
  }
  result.plan = { signal: threshold.signal, resource, hard: threshold.gracePeriodNs === 0, candidates };
  return result;
}

export function evaluate(config: PolicyConfig, state: PolicyState, input: PassInput): Evaluation {
  return planEvictions(config, assess(config, state, input), input.pods, input.layout);
}

/**
 * After node-level reclaim: true when, on fresh numbers, no threshold (grace periods ignored,
 * minimum reclaim enforced) is met any more, so no pod needs to go this pass.
 */
export function resolvedByReclaim(config: PolicyConfig, layout: FilesystemLayout, nodeAfter: NodeStats): boolean {
  return thresholdsMet(thresholdsForLayout(config.thresholds, layout), makeObservations(nodeAfter), true).length === 0;
}
