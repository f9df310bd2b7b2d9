/**
 * Reads a simulate scenario (docs/scenarios.md) into typed steps. Every problem is a UsageError
 * naming the field path and the value: unknown fields (typos), negative amounts, an available
 * amount above its capacity, two pods with one namespace/name, amounts too large to be exact.
 */
import { badValue } from '../errors';
import { compileConfig, configFromKubeletConfiguration, type PolicyConfig } from '../policy/config';
import { DurationError, formatDuration, parseDuration } from '../policy/duration';
import { Quantity, QuantityError } from '../policy/quantity';
import { adjustForHugePages } from '../policy/hugepages';
import { hugePagesCapacity } from './node-capacity';
import { amount, child, fields, integer, list, MAX_AMOUNT, obj, optAmount, quantity, str } from './scenario-fields';
import { NODE_PARTS, OBSERVED_PARTS } from '../policy/signals';
import type {
  ActivePod,
  ContainerSpec,
  ContainerUsage,
  FilesystemLayout,
  NodeStats,
  PodSpec,
  ResourceList,
  Toleration,
  VolumeSource,
  VolumeSpec,
  VolumeUsage,
} from '../policy/types';

/** A volume's source other than emptyDir, as far as local storage goes (policy/types.ts VolumeSpec). */
const VOLUME_SOURCES: VolumeSource[] = ['configMap', 'gitRepo', 'hostPath', 'other'];

export interface Step {
  /** nanoseconds since scenario start */
  at: number;
  node: NodeStats;
  pods: ActivePod[];
  afterReclaim?: NodeStats;
  admit: PodSpec[];
}

export interface Scenario {
  config: PolicyConfig;
  layout: FilesystemLayout;
  steps: Step[];
}

/** `available` above `capacity` is not a reading any node gives: refused, naming the available field. */
function notAbove(field: string, available: number | undefined, capacityField: string, capacity: number | undefined, raw: unknown): void {
  if (available !== undefined && capacity !== undefined && available > capacity) throw badValue(field, raw, `above ${capacityField} (${capacity})`);
}

/**
 * One part of the node's numbers, read as its shape in the signal records says: its fields, the
 * bounds a real node never breaks, and whether a part missing a number is observed at all.
 */
type PartShape = { fields: readonly string[]; whole: boolean; notAbove: readonly (readonly [string, string])[] };
/** The summary's SwapStats (swapAvailableBytes = the swap limit - usage). */
const SWAP_SHAPE: PartShape = { fields: ['swapAvailableBytes', 'swapUsageBytes'], whole: false, notAbove: [] };

function nodePart(field: string, shape: PartShape, v: unknown): Record<string, number | undefined> | undefined {
  if (v === undefined || v === null) return undefined;
  const m = fields(field, v, shape.fields);
  const out: Record<string, number | undefined> = {};
  for (const k of shape.fields) out[k] = optAmount(`${field}.${k}`, m[k]);
  for (const [k, cap] of shape.notAbove) notAbove(`${field}.${k}`, out[k], cap, out[cap], m[k]);
  // e.g. the kubelet observes memory only when both numbers are there
  if (shape.whole && shape.fields.some((k) => out[k] === undefined)) return undefined;
  return out;
}

function node(field: string, v: unknown): NodeStats {
  if (v === undefined || v === null) return {};
  const m = fields(field, v, [...OBSERVED_PARTS, 'swap']);
  // The summary's node swap stats: no signal reads them (kubelet v1.34 to v1.37; swap-aware
  // eviction, kubernetes #129578, was closed): checked and dropped.
  if (m.swap !== undefined && m.swap !== null) nodePart(`${field}.swap`, SWAP_SHAPE, m.swap);
  const out: Record<string, unknown> = {};
  for (const part of OBSERVED_PARTS) {
    const p = nodePart(`${field}.${part}`, NODE_PARTS[part], m[part]);
    if (p) out[part] = p;
  }
  // each part has its shape's fields, each a number or absent
  return out as NodeStats;
}

/** "__proto__" cannot be a key of a plain object (it would set the prototype): no resource or annotation is named so. */
function refuseProtoKey(field: string, k: string, x: unknown): void {
  if (k === '__proto__') throw badValue(field, x, 'not a valid key');
}

function resources(field: string, v: unknown): ResourceList {
  if (v === undefined || v === null) return {};
  const out: ResourceList = {};
  for (const [k, x] of Object.entries(obj(field, v))) {
    refuseProtoKey(child(field, k), k, x);
    out[k] = quantity(child(field, k), x);
  }
  return out;
}

function stringMap(field: string, v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(obj(field, v))) {
    refuseProtoKey(child(field, k), k, x);
    if (typeof x !== 'string') throw badValue(child(field, k), x, 'must be a string');
    out[k] = x;
  }
  return out;
}

interface ParsedPod {
  spec: PodSpec;
  /** absent: a pod the kubelet's summary has not reported yet (no stats) */
  usage?: { containers: ContainerUsage[]; volumes: VolumeUsage[]; processes?: number };
}

/**
 * allocatedResources (status.containerStatuses[].allocatedResources of a resized pod) is read and
 * checked, and decides nothing: the eviction manager ranks and words by the spec (pods.ts podRequest).
 */
const CONTAINER_KEYS = ['name', 'requests', 'limits', 'usage', 'allocatedResources'];

/**
 * A container's spec, and its usage when it carries one (a container the summary reports: an app
 * container, or an init container that is running, such as a sidecar). An init container may be
 * a sidecar (restartPolicy Always, the only value the API server takes on one).
 */
function container(field: string, v: unknown, init: boolean): { spec: ContainerSpec; usage?: ContainerUsage } {
  const c = fields(field, v, init ? [...CONTAINER_KEYS, 'restartPolicy'] : CONTAINER_KEYS);
  const name = str(`${field}.name`, c.name);
  const spec: ContainerSpec = { name, requests: resources(`${field}.requests`, c.requests), limits: resources(`${field}.limits`, c.limits) };
  resources(`${field}.allocatedResources`, c.allocatedResources);
  if (c.restartPolicy !== undefined && c.restartPolicy !== null) {
    if (c.restartPolicy !== 'Always') throw badValue(`${field}.restartPolicy`, c.restartPolicy, 'must be Always (a sidecar) or absent');
    spec.restartPolicy = 'Always';
  }
  if (c.usage === undefined || c.usage === null) return { spec };
  return { spec, usage: containerUsage(`${field}.usage`, name, c.usage) };
}

const USAGE_KEYS = ['memory', 'rootfs', 'logs', 'inodes', 'logsInodes', 'swap', 'memoryEvents', 'memoryPressure'];

/** A container's stats: `usage` of a container, or one entry of a pod's `containerUsage`. */
function containerUsage(field: string, name: string, v: unknown): ContainerUsage {
  // swap: the summary's per-container swap usage, which no eviction rule reads (checked, dropped)
  const u = fields(field, v, USAGE_KEYS);
  optAmount(`${field}.swap`, u.swap);
  const usage: ContainerUsage = { name };
  usage.memoryBytes = optAmount(`${field}.memory`, u.memory);
  usage.rootfsBytes = optAmount(`${field}.rootfs`, u.rootfs);
  usage.logsBytes = optAmount(`${field}.logs`, u.logs);
  usage.rootfsInodes = optAmount(`${field}.inodes`, u.inodes);
  usage.logsInodes = optAmount(`${field}.logsInodes`, u.logsInodes);
  // KEP-5986's per-container signals: memory.events counters (cumulative) and memory.pressure
  if (u.memoryEvents !== undefined && u.memoryEvents !== null) {
    const ev = fields(`${field}.memoryEvents`, u.memoryEvents, ['high', 'max']);
    usage.memoryEvents = { high: optAmount(`${field}.memoryEvents.high`, ev.high) ?? 0, max: optAmount(`${field}.memoryEvents.max`, ev.max) ?? 0 };
  }
  if (u.memoryPressure !== undefined && u.memoryPressure !== null) {
    const mp = fields(`${field}.memoryPressure`, u.memoryPressure, ['someAvg10']);
    const avg = mp.someAvg10;
    if (typeof avg !== 'number' || !(avg >= 0 && avg <= 100)) throw badValue(`${field}.memoryPressure.someAvg10`, avg, 'must be a percentage from 0 to 100');
    usage.memoryPressureSomeAvg10 = avg;
  }
  return usage;
}

/**
 * An emptyDir medium the kubelet's emptyDir plugin mounts: Memory (tmpfs), HugePages or
 * HugePages-<page size> (hugetlbfs; IsHugePageMedium, HugePageSizeFromMedium). Any other medium
 * fails the volume's setup, so no running pod has it.
 */
function medium(field: string, v: unknown): string {
  if (v === 'Memory' || v === 'HugePages') return v;
  if (typeof v === 'string' && v.startsWith('HugePages-')) {
    let size: Quantity | undefined;
    try {
      size = Quantity.parse(v.slice('HugePages-'.length));
    } catch (e) {
      if (!(e instanceof QuantityError)) throw e;
    }
    if (size && size.sign() > 0) return v;
  }
  throw badValue(field, v, 'must be "", Memory, HugePages or HugePages-<page size> (e.g. HugePages-2Mi)');
}

const POD_KEYS = [
  'name',
  'namespace',
  'uid',
  'priority',
  'terminationGracePeriodSeconds',
  'annotations',
  'containers',
  'initContainers',
  'volumes',
  'tolerations',
  'processes',
  'containerUsage',
  'resources',
  'overhead',
];
const TOLERATION_OPERATORS = ['Exists', 'Equal'];
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** A toleration as the API server validates it (ValidateTolerations): what admission may see. */
function toleration(field: string, v: unknown): Toleration {
  const t = fields(field, v, ['key', 'operator', 'value', 'effect', 'tolerationSeconds']);
  const opt = (k: string): string | undefined => {
    const x = t[k];
    if (x === undefined || x === null || x === '') return undefined;
    if (typeof x !== 'string') throw badValue(child(field, k), x, 'must be a string');
    return x;
  };
  const out: Toleration = {};
  const key = opt('key');
  const operator = opt('operator');
  const value = opt('value');
  const effect = opt('effect');
  if (operator !== undefined && !TOLERATION_OPERATORS.includes(operator))
    throw badValue(`${field}.operator`, operator, `must be one of ${TOLERATION_OPERATORS.join(', ')}`);
  if (effect !== undefined && !TAINT_EFFECTS.includes(effect)) throw badValue(`${field}.effect`, effect, `must be one of ${TAINT_EFFECTS.join(', ')}`);
  if (key === undefined && operator !== 'Exists') throw badValue(`${field}.operator`, operator ?? '', 'must be Exists when key is empty');
  if (operator === 'Exists' && value !== undefined) throw badValue(`${field}.value`, value, 'must be empty when operator is Exists');
  if (key !== undefined) out.key = key;
  if (operator !== undefined) out.operator = operator as Toleration['operator'];
  if (value !== undefined) out.value = value;
  if (effect !== undefined) out.effect = effect;
  return out;
}

/** Names that must be unique in a list (containers of a pod, volumes, pods of a step). */
function unique(field: (i: number) => string, names: readonly string[], what: string): void {
  const seen = new Map<string, number>();
  names.forEach((n, i) => {
    const first = seen.get(n);
    if (first !== undefined) throw badValue(field(i), n, `${what} already given at ${field(first)}`);
    seen.set(n, i);
  });
}

function pod(field: string, v: unknown): ParsedPod {
  const p = fields(field, v, POD_KEYS);
  const name = str(`${field}.name`, p.name);
  const containers = list(`${field}.containers`, p.containers).map((c, i) => container(`${field}.containers[${i}]`, c, false));
  const inits = list(`${field}.initContainers`, p.initContainers).map((c, i) => container(`${field}.initContainers[${i}]`, c, true));
  const initContainers = inits.map((c) => c.spec);
  const volumes: VolumeSpec[] = [];
  const volumeUsage: VolumeUsage[] = [];
  list(`${field}.volumes`, p.volumes).forEach((x, i) => {
    const vf = `${field}.volumes[${i}]`;
    const vol = fields(vf, x, ['name', 'emptyDir', 'source', 'usage', 'inodes']);
    const vname = str(`${vf}.name`, vol.name);
    const spec: VolumeSpec = { name: vname };
    if (vol.source !== undefined && vol.source !== null) {
      if (!(VOLUME_SOURCES as unknown[]).includes(vol.source)) throw badValue(`${vf}.source`, vol.source, `must be one of ${VOLUME_SOURCES.join(', ')}`);
      spec.source = vol.source as VolumeSource;
    }
    if (vol.emptyDir !== undefined && vol.emptyDir !== null) {
      const ed = fields(`${vf}.emptyDir`, vol.emptyDir, ['sizeLimit', 'medium']);
      spec.emptyDir = {};
      if (ed.sizeLimit !== undefined && ed.sizeLimit !== null) spec.emptyDir.sizeLimit = quantity(`${vf}.emptyDir.sizeLimit`, ed.sizeLimit);
      if (ed.medium !== undefined && ed.medium !== null && ed.medium !== '') spec.emptyDir.medium = medium(`${vf}.emptyDir.medium`, ed.medium);
    }
    volumes.push(spec);
    if (vol.usage !== undefined && vol.usage !== null) {
      volumeUsage.push({ name: vname, usedBytes: amount(`${vf}.usage`, vol.usage), inodesUsed: optAmount(`${vf}.inodes`, vol.inodes) });
    }
  });
  unique(
    (i) => `${field}.volumes[${i}].name`,
    volumes.map((x) => x.name),
    'volume name',
  );
  const allContainers = [...containers.map((c) => c.spec.name), ...initContainers.map((c) => c.name)];
  unique(
    (i) => (i < containers.length ? `${field}.containers[${i}].name` : `${field}.initContainers[${i - containers.length}].name`),
    allContainers,
    'container name',
  );
  const tolerations = list(`${field}.tolerations`, p.tolerations).map((t, i) => toleration(`${field}.tolerations[${i}]`, t));
  const spec: PodSpec = {
    namespace: p.namespace === undefined ? 'default' : str(`${field}.namespace`, p.namespace),
    name,
    uid: p.uid === undefined ? name : str(`${field}.uid`, p.uid),
    // int32 in the API
    priority: p.priority === undefined || p.priority === null ? 0 : integer(`${field}.priority`, p.priority, -2147483648, 2147483647),
    annotations: stringMap(`${field}.annotations`, p.annotations),
    containers: containers.map((c) => c.spec),
    volumes,
  };
  if (initContainers.length > 0) spec.initContainers = initContainers;
  if (tolerations.length > 0) spec.tolerations = tolerations;
  if (p.resources !== undefined && p.resources !== null) {
    const r = fields(`${field}.resources`, p.resources, ['requests', 'limits']);
    spec.resources = { requests: resources(`${field}.resources.requests`, r.requests), limits: resources(`${field}.resources.limits`, r.limits) };
  }
  if (p.overhead !== undefined && p.overhead !== null) spec.overhead = resources(`${field}.overhead`, p.overhead);
  if (p.terminationGracePeriodSeconds !== undefined && p.terminationGracePeriodSeconds !== null) {
    spec.terminationGracePeriodSeconds = integer(`${field}.terminationGracePeriodSeconds`, p.terminationGracePeriodSeconds, 0, MAX_AMOUNT);
  }
  // App containers always have an entry (as before: a container without numbers blames nothing);
  // init containers only when running (they carry usage). Stats list app containers first, then
  // init ones, the order of the kubelet's own list in evictionMessage (its summary's is the
  // runtime's, not fixed).
  let stats = containers.map((c) => c.usage ?? { name: c.spec.name });
  for (const c of inits) if (c.usage) stats.push(c.usage);
  // A recording's pod: its stats as the agent had them, in their order (a container twice, or
  // one its spec does not name, as a pod known only from its sandbox has).
  const listed = p.containerUsage === undefined || p.containerUsage === null ? null : list(`${field}.containerUsage`, p.containerUsage);
  if (listed) {
    if ([...containers, ...inits].some((c) => c.usage))
      throw badValue(`${field}.containerUsage`, '[...]', "takes the place of the containers' usage: give one or the other");
    stats = listed.map((x, i) => {
      const f = `${field}.containerUsage[${i}]`;
      const { name: n, ...rest } = fields(f, x, ['name', ...USAGE_KEYS]);
      return containerUsage(f, str(`${f}.name`, n), rest);
    });
  }
  const processes = p.processes === undefined || p.processes === null ? undefined : amount(`${field}.processes`, p.processes);
  // No usage on any container (init ones included), no processes, no volume usage: the summary
  // has not reported this pod yet, and the kubelet ranks and words it as a pod without stats. A
  // measured volume is a stat too: the summary reports a pod's volumes with its containers.
  const reported = listed !== null || [...containers, ...inits].some((c) => c.usage) || processes !== undefined || volumeUsage.length > 0;
  if (!reported) return { spec };
  const usage: NonNullable<ParsedPod['usage']> = { containers: stats, volumes: volumeUsage };
  if (processes !== undefined) usage.processes = processes;
  return { spec, usage };
}

export const LAYOUTS: FilesystemLayout[] = ['single', 'dedicated-imagefs', 'split'];

/** Overlays the parts given in `after` on `base` (afterReclaim may give only what changed). */
function overlay(base: NodeStats, after: NodeStats): NodeStats {
  return { ...base, ...after };
}

export function readScenario(doc: unknown): Scenario {
  const d = fields('scenario', doc, ['config', 'filesystems', 'capacity', 'steps']);
  const config = compileConfig(configFromKubeletConfiguration(d.config, 'config.'));
  // The node's memory as the summary reports it: huge pages out of it (HugepageAwareEviction).
  const reserved = hugePagesCapacity('capacity', d.capacity); // checked with the gate off too
  const hugePages = config.hugepageAwareEviction ? reserved : 0;
  const summary = (n: NodeStats): NodeStats => (hugePages > 0 && n.memory ? { ...n, memory: adjustForHugePages(n.memory, hugePages) } : n);
  const layout = (d.filesystems ?? 'single') as FilesystemLayout;
  if (!LAYOUTS.includes(layout)) throw badValue('filesystems', d.filesystems, `must be one of ${LAYOUTS.join(', ')}`);
  let last = 0;
  const steps = list('steps', d.steps).map((x, i): Step => {
    const f = `steps[${i}]`;
    const s = fields(f, x, ['at', 'node', 'pods', 'afterReclaim', 'admit']);
    let at: number;
    try {
      at = parseDuration(str(`${f}.at`, s.at ?? '0s'));
    } catch (e) {
      if (e instanceof DurationError) throw badValue(`${f}.at`, s.at, e.message);
      throw e;
    }
    // an absent `at` is "0s": name that value, not undefined
    if (at < 0) throw badValue(`${f}.at`, s.at ?? '0s', 'must not be negative');
    if (at < last) throw badValue(`${f}.at`, s.at ?? '0s', `steps must not go back in time (the step before is at ${formatDuration(last)})`);
    last = at;
    const n = summary(node(`${f}.node`, s.node));
    const pods = list(`${f}.pods`, s.pods).map((p, j) => pod(`${f}.pods[${j}]`, p));
    const admit = list(`${f}.admit`, s.admit).map((p, j) => pod(`${f}.admit[${j}]`, p).spec);
    unique(
      (j) => `${f}.pods[${j}]`,
      pods.map((p) => `${p.spec.namespace}/${p.spec.name}`),
      'pod namespace/name',
    );
    unique(
      (j) => `${f}.admit[${j}]`,
      admit.map((p) => `${p.namespace}/${p.name}`),
      'pod namespace/name',
    );
    const step: Step = { at, node: n, pods: pods.map((p): ActivePod => (p.usage ? { spec: p.spec, usage: p.usage } : { spec: p.spec })), admit };
    if (s.afterReclaim !== undefined && s.afterReclaim !== null) step.afterReclaim = overlay(n, summary(node(`${f}.afterReclaim`, s.afterReclaim)));
    return step;
  });
  return { config, layout, steps };
}

/** A pod as a scenario's `pods` or `admit` list gives it: its spec (a recording's admission line holds one). */
export function readPodSpec(field: string, v: unknown): PodSpec {
  return pod(field, v).spec;
}
