/**
 * Decide once: one evaluation (and, when the memory brake is on, the brakes in force) turned
 * into the ordered list of actions the kubelet would take, each a plain value. The agent carries
 * them out through its effects (src/agent/actuator.ts), the simulator through its assumptions
 * (src/sim/run.ts): both read this one order, so a scenario and a live pass cannot disagree on
 * what comes next.
 *
 * The order (kubelet's synchronize(), plus evictd's standing orders and brake ahead of it):
 *   0. standing orders the kernel side used since the last pass, confirmed: those pods are
 *      already killed, so their stops and reports come before anything decided on numbers
 *      read while their memory was still coming back (when one is confirmed, the pass ends);
 *   1. brakes released (pod gone, or the pressure is over), then a new brake;
 *   2. pods braked past the bound stopped at once; when one stopped, the pass ends there, since
 *      everything after was decided on numbers from before that stop;
 *   3. local-storage limits: every pod over its limit is evicted, and nothing else this pass;
 *   3b. per-container memory pressure (KEP-5986, when on): stage-1 relaxes, then a stage-2
 *      eviction, after which nothing else is evicted this pass (the KEP runs it after local
 *      storage and before the signals, and skips signal eviction in a cycle where it evicted);
 *   4. otherwise, for the first due threshold: node-level reclaim, which ends the pass when a
 *      fresh look finds the pressure resolved;
 *   5. then the ranked candidates, of which the first that stops is the one evicted.
 * Pure: no I/O, no clock.
 */
import {
  brakeBoundEviction,
  decideBrakes,
  killedAtOnce,
  nextBrakeDeadline,
  type ActiveBrake,
  type BrakeApply,
  type BrakeInput,
  type BrakeRelease,
} from './brake';
import type { PolicyConfig } from './config';
import type { Assessment, Evaluation, Eviction, ThresholdStatus } from './evaluate';
import type { MemoryPressureDecision, Relax } from './memory-pressure';
import { confirmedEviction, type OrderConfirmation } from './standing-order';
import type { NodeReclaimFunction, Signal } from './types';

export type Action =
  /** a standing order was used (the kernel side killed the pod): stop its sandbox and report it; the pass ends when one is confirmed */
  | { type: 'confirm-order'; eviction: Eviction; threshold: ThresholdStatus; confirmation: OrderConfirmation }
  | { type: 'release-brake'; uid: string; why: BrakeRelease['why'] }
  | { type: 'brake'; brake: BrakeApply }
  /** pods braked past the bound, each stopped with grace 0; the pass ends when any stopped */
  | { type: 'stop-braked'; evictions: Eviction[] }
  /** local-storage limits: every one evicted (grace 0); nothing else this pass */
  | { type: 'evict-all'; evictions: Eviction[] }
  /** KEP-5986 stage 1: these containers' memory.high raised to memory.max */
  | { type: 'relax-memory-high'; relax: Relax[] }
  /** KEP-5986 stage 2: the pod evicted for its containers' memory pressure; nothing else this pass */
  | { type: 'evict-pressured'; eviction: Eviction }
  /** node-level reclaim; the pass ends when a fresh look finds no threshold met */
  | { type: 'reclaim'; signal: Signal; functions: NodeReclaimFunction[] }
  /** the ranked candidates (critical pods left out): the first that stops is evicted, one per pass */
  | { type: 'evict-one'; signal: Signal; hard: boolean; threshold: ThresholdStatus | null; candidates: Eviction[] };

export type ActionType = Action['type'];

/** The brake's view of the node when it is on (see decideBrakes); `killing` is derived here. */
export type BrakeView = Omit<BrakeInput, 'killing'>;

export function decideActions(
  config: PolicyConfig,
  a: Assessment,
  ev: Evaluation,
  brakes?: BrakeView,
  used: readonly OrderConfirmation[] = [],
  pressure?: MemoryPressureDecision,
): Action[] {
  const actions: Action[] = [];
  for (const c of used) actions.push({ type: 'confirm-order', ...confirmedEviction(config, c), confirmation: c });
  if (brakes && config.memoryBrake) {
    const d = decideBrakes(config, a, { ...brakes, killing: killedAtOnce(ev) });
    for (const r of d.release) actions.push({ type: 'release-brake', uid: r.uid, why: r.why });
    if (d.apply) actions.push({ type: 'brake', brake: d.apply });
    const evictions: Eviction[] = [];
    for (const s of d.stop) {
      const pod = brakes.pods.find((p) => p.spec.uid === s.uid);
      const signal = brakes.active.find((b) => b.uid === s.uid)?.signal;
      if (pod) evictions.push(brakeBoundEviction(config.memoryBrake, s, { namespace: pod.spec.namespace, name: pod.spec.name, uid: s.uid }, signal));
    }
    if (evictions.length > 0) actions.push({ type: 'stop-braked', evictions });
  }
  if (ev.localStorageEvictions.length > 0) {
    actions.push({ type: 'evict-all', evictions: ev.localStorageEvictions });
    return actions;
  }
  if (pressure && pressure.relax.length > 0) actions.push({ type: 'relax-memory-high', relax: pressure.relax });
  if (pressure?.eviction) {
    actions.push({ type: 'evict-pressured', eviction: pressure.eviction });
    return actions;
  }
  if (ev.reclaim && ev.reclaim.functions.length > 0) actions.push({ type: 'reclaim', signal: ev.reclaim.signal, functions: ev.reclaim.functions });
  const plan = ev.plan;
  if (plan) {
    const threshold = ev.thresholdsMet.find((t) => t.signal === plan.signal && t.gracePeriodMet) ?? null;
    actions.push({ type: 'evict-one', signal: plan.signal, hard: plan.hard, threshold, candidates: plan.candidates });
  }
  return actions;
}

/**
 * When the loop must look again though nothing else wakes it (monotonic ns), and why, or null:
 * the earliest soft threshold's grace period ending, or the earliest brake reaching its bound.
 */
export function nextDeadline(
  config: PolicyConfig,
  ev: Evaluation,
  brakes: readonly ActiveBrake[],
  now: number,
): { atNs: number; source: 'grace-period' | 'memory-brake' } | null {
  let grace = Infinity;
  for (const [t, at] of ev.state.firstObservedAt) {
    const due = at + t.gracePeriodNs;
    if (t.gracePeriodNs > 0 && due > now) grace = Math.min(grace, due);
  }
  const bound = nextBrakeDeadline(config, brakes) ?? Infinity;
  if (grace === Infinity && bound === Infinity) return null;
  return grace <= bound ? { atNs: grace, source: 'grace-period' } : { atNs: bound, source: 'memory-brake' };
}
