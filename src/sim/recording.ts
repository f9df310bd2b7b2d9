/**
 * The recording format (`evictd run --record FILE`): a scenario written one JSON line at a time,
 * so a file cut by a crash is whole up to its last newline. Line 1 is the header (the config in
 * force and the filesystem layout, the scenario's own top-level fields); every further line is
 * one pass: a scenario step (`at`, `node`, `pods`) plus what only a live pass has (the wake-up,
 * the lines a standing order saw crossed, the brakes in force) and what the pass decided; or one
 * admission answer (`{"admission": ...}`), given between passes.
 *
 * Pure: the agent's recorder (src/agent/recorder.ts) does the writing, the CLI the reading. What
 * goes in is numbers, names, namespaces and uids: no label, no annotation but the two the
 * policy reads (static and mirror pods), no environment, no image, no command line; of an
 * admitted pod's tolerations, what admission reads of them.
 */
import type { Action } from '../policy/actions';
import type { MemoryPressureState, RelaxResult } from '../policy/memory-pressure';
import type { ActiveBrake } from '../policy/brake';
import type { EvictionConfig, PolicyConfig, Threshold } from '../policy/config';
import { formatDuration } from '../policy/duration';
import { EVICTION_FIELDS } from '../policy/kubelet-configuration';
import type { PolicyState, ThresholdStatus } from '../policy/evaluate';
import { thresholdsForLayout } from '../policy/thresholds';
import type { OrderConfirmation, OrderDecision } from '../policy/standing-order';
import type { ActivePod, FilesystemLayout, NodeCondition, NodeStats, PodSpec } from '../policy/types';
import { admissionPod, recordedPod } from './recorded-pod';
import { recordedPressure, type RecordedPressure } from './recorded-pressure';
import { sinceStart } from './recording-fields';

/** The header's marker and version: a reader that sees another version refuses the file. */
export const RECORDING_VERSION = 1;

/** The KubeletConfiguration fields a recording keeps: the eviction ones, nothing else of the file. */
const CONFIG_FIELDS = [...EVICTION_FIELDS, 'systemReservedCgroup', 'kubeReservedCgroup', 'cgroupsPerQOS', 'featureGates'] as const;

export interface RecordingHeader {
  evictdRecording: number;
  /** the eviction config in force, as KubeletConfiguration fields (the scenario's `config`) */
  config: Record<string, unknown>;
  filesystems: FilesystemLayout;
  /** wall clock of the recording's start (passes carry `at`, time since it) */
  startedAt: string;
  /** whether the agent placed standing orders (the replay decides them only then) */
  standingOrders: boolean;
  /**
   * the pressure transition period in force: the file reader takes a zero one in `config` for
   * unset (5m, as the kubelet's defaulting does), while a zero flag is zero
   */
  pressureTransitionPeriod?: string;
  /** a file the size limit started afresh (2, 3, ...): `state` carries the policy's history into it */
  part?: number;
  state?: RecordedState;
}

/**
 * The policy's state between passes, by threshold index (among the layout's thresholds, derived
 * ones included) and time since the recording's start: what a part after the first needs to
 * replay exactly (a grace period that began in the part before, a condition still held).
 */
export interface RecordedState {
  firstObservedAt: [number, string][];
  conditionLastObservedAt: [NodeCondition, string][];
  thresholdsMet: number[];
  conditions: NodeCondition[];
  /** KEP-5986's state, when it is on and has seen a container (recorded-pressure.ts) */
  memoryPressure?: RecordedPressure;
}

export function recordedState(
  policy: PolicyConfig,
  layout: FilesystemLayout,
  s: PolicyState,
  startNs: number,
  pressure: MemoryPressureState | null = null,
): RecordedState {
  const all = thresholdsForLayout(policy.thresholds, layout);
  const memoryPressure = pressure ? recordedPressure(pressure, startNs) : null;
  return {
    firstObservedAt: [...s.firstObservedAt].map(([t, at]) => [all.indexOf(t), formatDuration(at - startNs)]),
    conditionLastObservedAt: [...s.conditionLastObservedAt].map(([c, at]) => [c, formatDuration(at - startNs)]),
    thresholdsMet: s.thresholdsMet.map((t) => all.indexOf(t)),
    conditions: [...s.conditions],
    ...(memoryPressure ? { memoryPressure } : {}),
  };
}

export function recordingHeader(
  cfg: EvictionConfig,
  layout: FilesystemLayout,
  o: { startedAt: Date; standingOrders: boolean; pressureTransitionNs: number; part?: number; state?: RecordedState },
): RecordingHeader {
  const config: Record<string, unknown> = {};
  for (const k of CONFIG_FIELDS) if (cfg[k] !== undefined) config[k] = cfg[k];
  const h: RecordingHeader = {
    evictdRecording: RECORDING_VERSION,
    config,
    filesystems: layout,
    startedAt: o.startedAt.toISOString(),
    standingOrders: o.standingOrders,
    pressureTransitionPeriod: formatDuration(o.pressureTransitionNs),
  };
  if (o.part) h.part = o.part;
  if (o.state) h.state = o.state;
  return h;
}

/**
 * What one pass decided, as short strings that compare and print as they are (the replay's
 * unit of comparison): the thresholds met, the node conditions, the actions in their order
 * and the standing orders placed.
 */
export interface Decisions {
  met: string[];
  conditions: NodeCondition[];
  actions: string[];
  orders: string[];
}

const podKey = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;

/** An action as one line: the decision it stands for, without the message text (it follows from it). */
export function actionText(a: Action): string {
  switch (a.type) {
    case 'confirm-order':
      return `confirm ${podKey(a.eviction.pod)} ${a.eviction.signal}`;
    case 'release-brake':
      return `release-brake ${a.uid} ${a.why}`;
    case 'brake':
      return `brake ${podKey(a.brake.pod)} ${a.brake.threshold.signal}`;
    case 'stop-braked':
      return `stop-braked ${a.evictions.map((e) => podKey(e.pod)).join(',')}`;
    case 'evict-all':
      return `evict-all ${a.evictions.map((e) => `${podKey(e.pod)} ${e.signal}`).join(',')}`;
    case 'relax-memory-high':
      return `relax-memory-high ${a.relax.map((r) => `${podKey(r.pod)}/${r.container}`).join(',')}`;
    case 'evict-pressured':
      return `evict ${podKey(a.eviction.pod)} ${a.eviction.signal} grace ${a.eviction.gracePeriodSeconds}s`;
    case 'reclaim':
      return `reclaim ${a.signal} ${a.functions.join(',')}`;
    case 'evict-one':
      // The first candidate is the decision; the rest are who goes if its stop fails.
      return a.candidates[0] ? `evict ${podKey(a.candidates[0].pod)} ${a.signal} grace ${a.candidates[0].gracePeriodSeconds}s` : `evict none ${a.signal}`;
  }
}

export function decisionsOf(
  met: readonly ThresholdStatus[],
  conditions: readonly NodeCondition[],
  actions: readonly Action[],
  orders: readonly OrderDecision[],
): Decisions {
  return {
    met: met.map((t) => `${t.signal} ${t.kind}${t.gracePeriodMet ? '' : ' (grace running)'}`),
    conditions: [...conditions],
    actions: actions.map(actionText),
    orders: orders.flatMap((d) => (d.order ? [`${d.signal}[${d.thresholdIndex}] ${podKey(d.order.pod)}`] : [])),
  };
}

/** Node numbers as the scenario writes them: the parts observed, absent numbers left out. */
function recordedNode(n: NodeStats): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [part, v] of Object.entries(n)) {
    if (!v) continue;
    const fields: Record<string, number> = {};
    for (const [k, x] of Object.entries(v as Record<string, number | undefined>)) if (x !== undefined) fields[k] = x;
    out[part] = fields;
  }
  return out;
}

/** A used standing order as the pass took it in: the line, the pod, the signal at the crossing. */
export interface RecordedConfirmation {
  line: string;
  pod: string;
  availableBytes: number;
  /** ns since the recording's start; absent when the crossing came before it */
  crossedAt?: string;
  /** when the mechanism's kill was written (crossing -> kill is the order's reaction) */
  killedAt?: string;
  reported?: boolean;
}

/**
 * A KEP-5986 stage-1 relax the pass carried out, as the runtime answered it: `ok` when memory.high
 * was read back raised, with the container's memory.events counters read once it was (`after`,
 * time since the recording's start). The replay applies it to its state as the agent did
 * (relaxOutcome): the rates count from `after`, and a refused relax sends the container to stage 2.
 */
export interface RecordedRelax {
  uid: string;
  container: string;
  ok: boolean;
  after?: { at: string; high: number; max: number };
}

/** Everything one live pass saw and did, before it is turned into a line. */
export interface PassInput {
  /** ns since the recording's start (the pass's `now`) */
  atNs: number;
  startNs: number;
  wake: Record<string, number>;
  node: NodeStats;
  /** the pass's filesystem layout; and the one the file's header says (a pass's own is written when they differ) */
  layout: FilesystemLayout;
  headerLayout: FilesystemLayout;
  pods: readonly ActivePod[];
  /** uids the runtime listed that the ranking did not see (being stopped, confirmed): the brake's `present` */
  otherUids: readonly string[];
  /** ranked pods without a pod cgroup (a standing order cannot name them) */
  noCgroup: readonly string[];
  crossed: readonly Threshold[];
  confirmations: readonly OrderConfirmation[];
  brakes: readonly ActiveBrake[] | null;
  policy: PolicyConfig;
  met: readonly ThresholdStatus[];
  conditions: readonly NodeCondition[];
  actions: readonly Action[];
  orders: readonly OrderDecision[];
  /** the KEP-5986 relaxes it carried out, with the runtime's answers (absent: none) */
  relaxed?: readonly RelaxResult[];
  /** the pass's own timings: kernel event to pass start, and pass start to decision, ms */
  wakeMs?: number;
  decideMs: number;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/** One pass as its line (an object; JSON.stringify makes it the line). */
export function passLine(p: PassInput): Record<string, unknown> {
  const { head, tail } = passLineParts(p);
  return { ...head, pods: p.pods.map(recordedPod), ...tail };
}

/**
 * A pass's line but its pods, in the line's order: what comes before the pods (`at`, `wake`,
 * `node`) and what after (never empty: `ms` and `decided` are always there).
 */
export function passLineParts(p: Omit<PassInput, 'pods'>): { head: Record<string, unknown>; tail: Record<string, unknown> } {
  const head = { at: formatDuration(p.atNs), wake: p.wake, node: recordedNode(p.node) };
  const tail: Record<string, unknown> = {};
  // The layout is observed each pass (the image filesystem becomes known after the first ones).
  // First in the tail: the recorder's text adds it there (recording-text.ts, lineEnds).
  if (p.layout !== p.headerLayout) tail.filesystems = p.layout;
  if (p.noCgroup.length) tail.noCgroup = p.noCgroup;
  if (p.crossed.length) {
    const all = thresholdsForLayout(p.policy.thresholds, p.layout);
    tail.crossed = p.crossed.map((t) => all.indexOf(t));
  }
  if (p.confirmations.length) {
    tail.confirmed = p.confirmations.map((c): RecordedConfirmation => {
      const out: RecordedConfirmation = { line: `${c.order.signal}[${c.order.thresholdIndex}]`, pod: podKey(c.order.pod), availableBytes: c.availableBytes };
      if (Number(c.crossedNs) >= p.startNs) out.crossedAt = sinceStart(c.crossedNs, p.startNs);
      if (Number(c.killedNs) >= p.startNs) out.killedAt = sinceStart(c.killedNs, p.startNs);
      if (c.reported) out.reported = true;
      return out;
    });
  }
  if (p.brakes) {
    tail.brakes = p.brakes.map((b) => ({ uid: b.uid, since: sinceStart(b.since, p.startNs), ...(b.signal ? { signal: b.signal } : {}) }));
    if (p.otherUids.length) tail.otherUids = p.otherUids;
  }
  if (p.relaxed?.length)
    tail.relaxed = p.relaxed.map((r): RecordedRelax => ({
      uid: r.uid,
      container: r.container,
      ok: r.ok,
      ...(r.after ? { after: { at: sinceStart(r.after.atNs, p.startNs), high: r.after.high, max: r.after.max } } : {}),
    }));
  tail.ms = { ...(p.wakeMs !== undefined ? { wake: round3(p.wakeMs) } : {}), decide: round3(p.decideMs) };
  tail.decided = decisionsOf(p.met, p.conditions, p.actions, p.orders);
  return { head, tail };
}

/** An admission answer as the recording has it: `{"admission": {...}}`, a line of its own. */
export interface RecordedAdmission {
  /** time since the recording's start, as a pass's `at` */
  at: string;
  pod: Record<string, unknown>;
  conditions: NodeCondition[];
  admit: boolean;
  reason?: string;
}

/**
 * One admission answer as its line (an object; JSON.stringify makes it the line). The message
 * is left out: it follows from the conditions, as an action's does from the action.
 */
export function admissionLine(
  atNs: number,
  pod: PodSpec,
  conditions: readonly NodeCondition[],
  decision: { admit: boolean; reason?: string },
): { admission: RecordedAdmission } {
  const a: RecordedAdmission = { at: formatDuration(atNs), pod: admissionPod(pod), conditions: [...conditions], admit: decision.admit };
  if (decision.reason !== undefined) a.reason = decision.reason;
  return { admission: a };
}
