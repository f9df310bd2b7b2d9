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
import type { ActiveBrake } from '../policy/brake';
import type { EvictionConfig, PolicyConfig, Threshold } from '../policy/config';
import { formatDuration } from '../policy/duration';
import { EVICTION_FIELDS } from '../policy/kubelet-configuration';
import type { PolicyState, ThresholdStatus } from '../policy/evaluate';
import { thresholdsForLayout } from '../policy/thresholds';
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../policy/pods';
import type { OrderConfirmation, OrderDecision } from '../policy/standing-order';
import type {
  ActivePod,
  ContainerSpec,
  ContainerUsage,
  FilesystemLayout,
  NodeCondition,
  NodeStats,
  PodSpec,
  ResourceList,
  Toleration,
  VolumeSpec,
} from '../policy/types';

/** The header's marker and version: a reader that sees another version refuses the file. */
export const RECORDING_VERSION = 1;

/** The KubeletConfiguration fields a recording keeps: the eviction ones, nothing else of the file. */
const CONFIG_FIELDS = [...EVICTION_FIELDS, 'systemReservedCgroup', 'kubeReservedCgroup', 'cgroupsPerQOS'] as const;

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
}

export function recordedState(policy: PolicyConfig, layout: FilesystemLayout, s: PolicyState, startNs: number): RecordedState {
  const all = thresholdsForLayout(policy.thresholds, layout);
  return {
    firstObservedAt: [...s.firstObservedAt].map(([t, at]) => [all.indexOf(t), formatDuration(at - startNs)]),
    conditionLastObservedAt: [...s.conditionLastObservedAt].map(([c, at]) => [c, formatDuration(at - startNs)]),
    thresholdsMet: s.thresholdsMet.map((t) => all.indexOf(t)),
    conditions: [...s.conditions],
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

const resources = (r: ResourceList): Record<string, string> | undefined => {
  const out: Record<string, string> = {};
  for (const [k, q] of Object.entries(r)) if (q) out[k] = q.toString();
  return Object.keys(out).length ? out : undefined;
};

/** A container's stats in the scenario's words, in the order written: [scenario field, ContainerUsage field]. */
export const USAGE_FIELDS = [
  ['memory', 'memoryBytes'],
  ['rootfs', 'rootfsBytes'],
  ['logs', 'logsBytes'],
  ['inodes', 'rootfsInodes'],
  ['logsInodes', 'logsInodes'],
] as const;

/** A container's stats in the scenario's words (fields left out where the agent had no number). */
function usageFields(u: ContainerUsage): Record<string, number> {
  const usage: Record<string, number> = {};
  for (const [key, field] of USAGE_FIELDS) if (u[field] !== undefined) usage[key] = u[field];
  return usage;
}

/** The spec's container names in the order a scenario's reader lists them: app containers, then init ones. */
export const containerNames = (s: PodSpec): string[] => [...s.containers, ...(s.initContainers ?? [])].map((c) => c.name);

/** Whether stats[from..] hold a container of that name (a loop: this runs for every pod of every recorded pass). */
function hasStats(stats: readonly ContainerUsage[], name: string, from = 0): boolean {
  for (let i = from; i < stats.length; i++) if (stats[i]!.name === name) return true;
  return false;
}

/**
 * Where a pod's stats go in its line. `onContainers`: each container's stats, by its place among
 * the spec's containers (app, then init), or null when they go as the `containerUsage` list.
 * `emptyOnFirst`: a pod with stats but none on its app containers, no process count and no
 * volume stats says so by `usage: {}` on its first container.
 */
export interface UsagePlacement {
  readonly onContainers: readonly (ContainerUsage | undefined)[] | null;
  readonly emptyOnFirst: boolean;
}

const NO_STATS: UsagePlacement = { onContainers: [], emptyOnFirst: false };
const AS_LIST: UsagePlacement = { onContainers: null, emptyOnFirst: false };

/**
 * The stats go each on its container when they sit one to one on the containers, in the order a
 * scenario's reader lists them (app containers, then init ones). Otherwise (a container twice, as
 * memory and disk stats are read apart; a name the spec lacks, as a pod known from its sandbox
 * alone has) they go as the pod's `containerUsage` list, as they are.
 */
export function placeUsage(p: ActivePod, specNames: readonly string[]): UsagePlacement {
  const u = p.usage;
  if (!u) return NO_STATS;
  const stats = u.containers;
  for (let i = 0; i < stats.length; i++) if (hasStats(stats, stats[i]!.name, i + 1)) return AS_LIST;
  // The spec's names that have stats, in the spec's order, are the stats' names: the next stats
  // go on the container that carries their name.
  const onContainers: (ContainerUsage | undefined)[] = [];
  const apps = p.spec.containers.length;
  let k = 0;
  let onApps = false;
  for (let i = 0; i < specNames.length; i++) {
    const c = stats[k];
    const mine = c !== undefined && c.name === specNames[i];
    if (!mine && hasStats(stats, specNames[i]!)) return AS_LIST;
    onContainers.push(mine ? c : undefined);
    if (mine) k++;
    if (mine && i < apps) onApps = true;
  }
  if (k !== stats.length) return AS_LIST;
  return { onContainers, emptyOnFirst: apps > 0 && !onApps && u.processes === undefined && u.volumes.length === 0 };
}

/** A pod's own fields, before its containers. */
export function specHead(s: PodSpec): Record<string, unknown> {
  const out: Record<string, unknown> = { name: s.name, namespace: s.namespace, uid: s.uid };
  if (s.priority !== 0) out.priority = s.priority;
  if (s.terminationGracePeriodSeconds !== undefined) out.terminationGracePeriodSeconds = s.terminationGracePeriodSeconds;
  // Only what makes a pod static or mirror (critical): every other annotation may hold anything.
  const annotations: Record<string, string> = {};
  for (const k of [CONFIG_SOURCE_ANNOTATION, CONFIG_MIRROR_ANNOTATION]) if (s.annotations[k] !== undefined) annotations[k] = s.annotations[k];
  if (Object.keys(annotations).length) out.annotations = annotations;
  return out;
}

/** A container as its spec has it; its `usage` goes last. */
export function specContainer(c: ContainerSpec, init: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { name: c.name };
  const req = resources(c.requests);
  const lim = resources(c.limits);
  if (req) out.requests = req;
  if (lim) out.limits = lim;
  if (init && c.restartPolicy) out.restartPolicy = c.restartPolicy;
  return out;
}

/** A volume as its spec has it; its `usage` and `inodes` go last. */
export function specVolume(v: VolumeSpec): Record<string, unknown> {
  const vol: Record<string, unknown> = { name: v.name };
  if (v.emptyDir) {
    const ed: Record<string, unknown> = {};
    if (v.emptyDir.sizeLimit) ed.sizeLimit = v.emptyDir.sizeLimit.toString();
    if (v.emptyDir.medium) ed.medium = v.emptyDir.medium;
    vol.emptyDir = ed;
  }
  if (v.source) vol.source = v.source;
  return vol;
}

/** A pod in the scenario format, with the fields the policy reads and nothing else. */
export function recordedPod(p: ActivePod): Record<string, unknown> {
  const s = p.spec;
  const place = placeUsage(p, containerNames(s));
  const container = (c: ContainerSpec, i: number, init: boolean) => {
    const out = specContainer(c, init);
    const u = place.onContainers?.[i];
    if (u) out.usage = usageFields(u);
    else if (i === 0 && place.emptyOnFirst) out.usage = {};
    return out;
  };
  const out = specHead(s);
  out.containers = s.containers.map((c, i) => container(c, i, false));
  if (s.initContainers?.length) out.initContainers = s.initContainers.map((c, i) => container(c, s.containers.length + i, true));
  if (p.usage && !place.onContainers) out.containerUsage = p.usage.containers.map((c) => ({ name: c.name, ...usageFields(c) }));
  if (s.volumes.length) {
    out.volumes = s.volumes.map((v) => {
      const vol = specVolume(v);
      const u = p.usage?.volumes.find((x) => x.name === v.name);
      if (u) {
        vol.usage = u.usedBytes;
        if (u.inodesUsed !== undefined) vol.inodes = u.inodesUsed;
      }
      return vol;
    });
  }
  if (p.usage?.processes !== undefined) out.processes = p.usage.processes;
  return out;
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
  /** the pass's own timings: kernel event to pass start, and pass start to decision, ms */
  wakeMs?: number;
  decideMs: number;
}

const rel = (ns: number | bigint, startNs: number): string => formatDuration(Math.max(0, Number(ns) - startNs));
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
      if (Number(c.crossedNs) >= p.startNs) out.crossedAt = rel(c.crossedNs, p.startNs);
      if (Number(c.killedNs) >= p.startNs) out.killedAt = rel(c.killedNs, p.startNs);
      if (c.reported) out.reported = true;
      return out;
    });
  }
  if (p.brakes) {
    tail.brakes = p.brakes.map((b) => ({ uid: b.uid, since: rel(b.since, p.startNs), ...(b.signal ? { signal: b.signal } : {}) }));
    if (p.otherUids.length) tail.otherUids = p.otherUids;
  }
  tail.ms = { ...(p.wakeMs !== undefined ? { wake: round3(p.wakeMs) } : {}), decide: round3(p.decideMs) };
  tail.decided = decisionsOf(p.met, p.conditions, p.actions, p.orders);
  return { head, tail };
}

/** A toleration as admit() reads it (its key, operator, value and effect; empty ones left out). */
function recordedToleration(t: Toleration): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['key', 'operator', 'value', 'effect'] as const) if (t[k]) out[k] = t[k];
  return out;
}

/**
 * A pod offered to admission, with what admit() reads and nothing else: a pass's pod head
 * without its uid (a pod being created has none yet) or grace period, its containers' requests
 * and limits, and its tolerations (the memory-pressure taint's).
 */
export function admissionPod(s: PodSpec): Record<string, unknown> {
  const out = specHead(s);
  delete out.uid;
  delete out.terminationGracePeriodSeconds;
  out.containers = s.containers.map((c) => specContainer(c, false));
  if (s.initContainers?.length) out.initContainers = s.initContainers.map((c) => specContainer(c, true));
  if (s.tolerations?.length) out.tolerations = s.tolerations.map(recordedToleration);
  return out;
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
