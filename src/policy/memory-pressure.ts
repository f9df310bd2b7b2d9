/**
 * Per-container memory pressure eviction, as KEP-5986 (`MemoryHighEviction`, kubernetes/enhancements
 * PR #6141, unmerged: alpha was meant for v1.37 and missed it) describes it, decided on every pass
 * instead of the kubelet's 10 s loop. Pure: the pass hands in each container's counters and PSI
 * read now; this returns what to relax, whom to evict and the new state.
 *
 * The KEP's rules:
 * - three signals per container, each off at 0: the rate of memory.events `high` and of `max`
 *   (events per second) and memory.pressure `some avg10` (percent); a signal is active when its
 *   value is above its threshold (the KEP says "exceeds");
 * - one grace period per pod, shared by the signals: it starts when any signal of any of its
 *   containers is active and resets only when none is;
 * - at the end of the grace period, stage 1 for each container whose `high` signal is active
 *   and was not relaxed yet: memory.high raised to memory.max (the agent's CRI
 *   UpdateContainerResources); otherwise stage 2, eviction, ranked BestEffort before Burstable,
 *   then lowest priority, then the highest ratio of an active signal to its threshold;
 * - Guaranteed pods (MemoryQoS sets no memory.high on them) and static pods are left out; so
 *   are mirror and system-critical pods, which the kubelet's evictPod refuses.
 *
 * evictd's own choices where the KEP is silent or tied to its 10 s loop (docs/scenarios.md):
 * - a rate is the counter's average growth per second since the last sample at or before
 *   RATE_WINDOW_NS ago (the kubelet's cycle), over that span and never less than the window;
 *   while a container is younger than the window it counts from its first sample, over the
 *   whole window. Passes are frequent here (every kernel notification, and the fallback every
 *   10 s), so the span is the window or a little more, and a pass woken by the kernel sees the
 *   rate cross as soon as the events are there, where the kubelet waits for its next cycle;
 * - a counter that goes down is a restarted container: its history starts over (the KEP's
 *   "resetting the stored baseline");
 * - after a relax the pod's grace period starts again and the relaxed container's rates count
 *   from the relax, so that stage 2 follows only if the pressure outlives a whole grace period
 *   with memory.high out of the way (the KEP's "next cycle" is 10 s later; here the next pass
 *   may be a millisecond later, and a window of events from before the relax would call for
 *   stage 2 whatever the relax did);
 * - a relax the runtime refused counts as done-and-failed: that container goes to stage 2;
 * - one eviction per pass (the ranking's first), with min(evictionMaxPodGracePeriod, the pod's
 *   own) as a soft threshold gives; the pass evicts nothing for node pressure after it.
 */
import { formatDuration } from './duration';
import type { Eviction } from './evaluate';
import type { MemoryPressureConfig } from './eviction-config';
import { isCritical, qosClass } from './pods';
import type { ActivePod, PodRef } from './types';

/** The KEP's rate is a delta over one kubelet cycle (housekeeping, 10 s by default). */
export const RATE_WINDOW_NS = 10e9;
/** The signal name stage 2 reports (the KEP's `kubelet_evictions{eviction_signal}`). */
export const MEMORY_PRESSURE_SIGNAL = 'memory.high.pressure';
/** The pod condition stage 1 sets, and its reason. */
export const CONTAINER_MEMORY_PRESSURE = 'ContainerMemoryPressure';
export const MEMORY_HIGH_RELAXED = 'MemoryHighRelaxed';

type SignalName = 'high' | 'max' | 'psi';

export interface Sample {
  atNs: number;
  high: number;
  max: number;
}

export interface ContainerTrack {
  /** oldest first; the first is at or before now - RATE_WINDOW_NS once the container is that old */
  samples: readonly Sample[];
  relax?: 'done' | 'failed';
  /** when a relax was done (ns) */
  relaxedNs?: number;
}

export interface MemoryPressureState {
  /** by `${uid}/${container}` */
  readonly containers: ReadonlyMap<string, ContainerTrack>;
  /** by pod uid: when its grace period started */
  readonly graceSince: ReadonlyMap<string, number>;
}

export const initialMemoryPressureState = (): MemoryPressureState => ({ containers: new Map(), graceSince: new Map() });

/** One container's signals now: each value, and whether it is above its threshold. */
export interface ContainerPressure {
  container: string;
  highRate: number;
  maxRate: number;
  psiSomeAvg10: number;
  active: SignalName[];
  /** the highest value / threshold among its active signals (0 when none is) */
  ratio: number;
}

export interface Relax {
  pod: PodRef;
  container: string;
  /** the container's signals at the decision */
  pressure: ContainerPressure;
}

export interface MemoryPressureDecision {
  state: MemoryPressureState;
  /** stage 1: raise these containers' memory.high to memory.max */
  relax: Relax[];
  /** stage 2: the ranking's first pod, evicted this pass; null: none due */
  eviction: Eviction | null;
  /**
   * pods whose ContainerMemoryPressure condition is set: a container relaxed, and the pod still
   * under pressure or relaxed less than a kubelet cycle ago (see conditionHeld)
   */
  conditions: PodRef[];
  /** pods under pressure now, with the grace period's end (ns): for the logs and the next wake-up */
  pressured: { pod: PodRef; dueNs: number; containers: ContainerPressure[] }[];
}

const ref = (p: ActivePod): PodRef => ({ namespace: p.spec.namespace, name: p.spec.name, uid: p.spec.uid });

/** Whether the KEP's rules ever look at this pod. */
export function pressureExempt(p: ActivePod): boolean {
  return isCritical(p.spec) || qosClass(p.spec) === 'Guaranteed';
}

/** The counter's average growth per second back to the window's base sample (see the header). */
function rate(samples: readonly Sample[], now: Sample, key: 'high' | 'max'): number {
  let base = samples[0];
  if (base === undefined) return 0;
  for (const s of samples) if (s.atNs <= now.atNs - RATE_WINDOW_NS) base = s;
  return Math.max(0, now[key] - base[key]) / (Math.max(RATE_WINDOW_NS, now.atNs - base.atNs) / 1e9);
}

/** The samples kept for the next pass: the last at or before now - window, and everything after. */
function keep(samples: readonly Sample[], now: Sample): Sample[] {
  const all = [...samples, now];
  let first = 0;
  for (let i = 0; i < all.length; i++) if (all[i]!.atNs <= now.atNs - RATE_WINDOW_NS) first = i;
  return all.slice(first);
}

/**
 * Whether the counters a container shows now put one of its rate signals above its threshold,
 * on the history the last pass kept: the agent asks it when the container's memory.events
 * changes, to wake a pass only when the pass could find something new.
 */
export function rateAboveThreshold(cfg: MemoryPressureConfig, state: MemoryPressureState, uid: string, container: string, now: Sample): boolean {
  const history = state.containers.get(`${uid}/${container}`)?.samples ?? [];
  const last = history.at(-1);
  if (last !== undefined && (now.high < last.high || now.max < last.max)) return false; // restarted: no rate yet
  return (cfg.highThreshold > 0 && rate(history, now, 'high') > cfg.highThreshold) || (cfg.maxThreshold > 0 && rate(history, now, 'max') > cfg.maxThreshold);
}

export function decideMemoryPressure(
  cfg: MemoryPressureConfig,
  maxPodGracePeriodSeconds: number,
  state: MemoryPressureState,
  nowNs: number,
  pods: readonly ActivePod[],
): MemoryPressureDecision {
  const containers = new Map<string, ContainerTrack>();
  const graceSince = new Map<string, number>();
  const relax: Relax[] = [];
  const conditions: PodRef[] = [];
  const pressured: MemoryPressureDecision['pressured'] = [];
  const due: { pod: ActivePod; readings: ContainerPressure[]; ratio: number }[] = [];
  for (const pod of pods) {
    if (pressureExempt(pod) || !pod.usage) continue;
    const uid = pod.spec.uid;
    const readings: ContainerPressure[] = [];
    for (const c of pod.usage.containers) {
      if (c.memoryEvents === undefined && c.memoryPressureSomeAvg10 === undefined) continue;
      const key = `${uid}/${c.name}`;
      const before = state.containers.get(key);
      const sample: Sample = { atNs: nowNs, high: c.memoryEvents?.high ?? 0, max: c.memoryEvents?.max ?? 0 };
      const last = before?.samples.at(-1);
      // a counter that went down: the container restarted, its history (and its relax) is gone
      const restarted = last !== undefined && (sample.high < last.high || sample.max < last.max);
      const history = restarted || !before ? [] : before.samples;
      const r: ContainerPressure = {
        container: c.name,
        highRate: rate(history, sample, 'high'),
        maxRate: rate(history, sample, 'max'),
        psiSomeAvg10: c.memoryPressureSomeAvg10 ?? 0,
        active: [],
        ratio: 0,
      };
      for (const [name, value, threshold] of [
        ['high', r.highRate, cfg.highThreshold],
        ['max', r.maxRate, cfg.maxThreshold],
        ['psi', r.psiSomeAvg10, cfg.psiThreshold],
      ] as const) {
        if (threshold > 0 && value > threshold) {
          r.active.push(name);
          r.ratio = Math.max(r.ratio, value / threshold);
        }
      }
      const track: ContainerTrack = { samples: keep(history, sample) };
      if (before?.relax && !restarted) containers.set(key, { ...track, relax: before.relax, relaxedNs: before.relaxedNs });
      else containers.set(key, track);
      readings.push(r);
    }
    const active = readings.filter((r) => r.active.length > 0);
    const relaxedNs = readings.map((r) => containers.get(`${uid}/${r.container}`)).flatMap((t) => (t?.relax === 'done' ? [t.relaxedNs ?? nowNs] : []));
    if (relaxedNs.length > 0 && conditionHeld(active.length > 0, Math.max(...relaxedNs), nowNs)) conditions.push(ref(pod));
    if (active.length === 0) continue; // the grace period resets only when no signal is active
    const since = state.graceSince.get(uid) ?? nowNs;
    graceSince.set(uid, since);
    const dueNs = since + cfg.gracePeriodNs;
    pressured.push({ pod: ref(pod), dueNs, containers: active });
    if (nowNs < dueNs) continue;
    const toRelax = active.filter((r) => r.active.includes('high') && containers.get(`${uid}/${r.container}`)?.relax === undefined);
    if (toRelax.length > 0) {
      for (const r of toRelax) {
        relax.push({ pod: ref(pod), container: r.container, pressure: r });
        // Its rates count from here: the events before were memory.high's doing, and the question
        // now is whether the pressure goes on without it.
        const track = containers.get(`${uid}/${r.container}`)!;
        containers.set(`${uid}/${r.container}`, { samples: track.samples.slice(-1), relax: 'done', relaxedNs: nowNs });
      }
      graceSince.set(uid, nowNs); // a whole grace period again, memory.high out of the way
      if (!conditions.some((c) => c.uid === uid)) conditions.push(ref(pod));
      continue;
    }
    due.push({ pod, readings: active, ratio: Math.max(...active.map((r) => r.ratio)) });
  }
  const first = rankPressured(due)[0];
  return {
    state: { containers, graceSince },
    relax,
    eviction: first ? pressureEviction(cfg, maxPodGracePeriodSeconds, first.pod, first.readings) : null,
    conditions,
    pressured,
  };
}

/**
 * The ContainerMemoryPressure condition stays while the pod is under pressure. The KEP clears it
 * when the pressure is no longer detected, at the kubelet's next look, ten seconds on; a pass here
 * can come a millisecond after the relax, when the rates (counted from it) cannot show pressure
 * yet, and would clear what it just set. So it stays a kubelet cycle (the rate window) at least.
 */
function conditionHeld(underPressure: boolean, relaxedNs: number, nowNs: number): boolean {
  return underPressure || nowNs - relaxedNs < RATE_WINDOW_NS;
}

/** Stage 2's order: BestEffort before Burstable, then lowest priority, then the highest ratio. */
function rankPressured<T extends { pod: ActivePod; ratio: number }>(due: readonly T[]): T[] {
  const qos = (p: ActivePod) => (qosClass(p.spec) === 'BestEffort' ? 0 : 1);
  return [...due].sort((a, b) => qos(a.pod) - qos(b.pod) || a.pod.spec.priority - b.pod.spec.priority || b.ratio - a.ratio);
}

/** What became of one relax, for relaxOutcome (and the recording, which replays it). */
export interface RelaxResult {
  uid: string;
  container: string;
  ok: boolean;
  after?: Sample;
}

/**
 * The runtime answered a relax. A refusal sends that container to stage 2 at its next due pass.
 * A relax done, with the counters read once it was (`after`): the container's rates and the pod's
 * grace period start there, since the events between the decision and the runtime's write (a few
 * hundred ms of a throttled container) were still memory.high's doing.
 */
export function relaxOutcome(state: MemoryPressureState, uid: string, container: string, ok: boolean, after?: Sample): MemoryPressureState {
  const key = `${uid}/${container}`;
  const track = state.containers.get(key);
  if (!track || (ok && !after)) return state;
  const containers = new Map(state.containers);
  if (!ok) {
    containers.set(key, { ...track, relax: 'failed' });
    return { ...state, containers };
  }
  containers.set(key, { samples: [after!], relax: 'done', relaxedNs: after!.atNs });
  const graceSince = new Map(state.graceSince);
  if (graceSince.has(uid)) graceSince.set(uid, after!.atNs);
  return { containers, graceSince };
}

/** A pass's relaxes, as the runtime answered them, applied in their order (the agent's, and the replay's). */
export function afterRelaxes(state: MemoryPressureState, relaxed: readonly RelaxResult[]): MemoryPressureState {
  return relaxed.reduce((st, r) => relaxOutcome(st, r.uid, r.container, r.ok, r.after), state);
}

const SIGNAL_WORDS: Record<SignalName, string> = {
  high: 'memory.high throttle threshold',
  max: 'memory.max event threshold',
  psi: 'memory pressure (PSI some avg10) threshold',
};

function pressureEviction(cfg: MemoryPressureConfig, maxPodGrace: number, pod: ActivePod, readings: readonly ContainerPressure[]): Eviction {
  // The KEP's example message: "Container foo exceeded memory.high throttle threshold".
  const message = readings.map((r) => `Container ${r.container} exceeded ${r.active.map((s) => SIGNAL_WORDS[s]).join(' and ')}. `).join('');
  const own = pod.spec.terminationGracePeriodSeconds ?? 30;
  return {
    pod: ref(pod),
    signal: MEMORY_PRESSURE_SIGNAL,
    gracePeriodSeconds: maxPodGrace > 0 ? Math.min(maxPodGrace, own) : 0,
    message,
    annotations: { offending_containers: readings.map((r) => r.container).join(','), starved_resource: 'memory' },
    reasons: [
      `${qosClass(pod.spec)}, priority ${pod.spec.priority}`,
      ...readings.map(
        (r) =>
          `${r.container}: ${r.active.join('+')} (high ${r.highRate.toFixed(1)}/s, max ${r.maxRate.toFixed(1)}/s, psi some avg10 ${r.psiSomeAvg10}%; ratio ${r.ratio.toFixed(2)}), grace ${formatDuration(cfg.gracePeriodNs)} over`,
      ),
    ],
  };
}
