/**
 * Reads a simulate scenario (../shared/spec/simulate.md) into typed steps. Every problem is a
 * UsageError naming the field path and the value.
 */
import { badValue } from '../errors';
import { compileConfig, configFromKubeletConfiguration, type PolicyConfig } from '../policy/config';
import { DurationError, parseDuration } from '../policy/duration';
import { Quantity, QuantityError } from '../policy/quantity';
import type { ActivePod, ContainerSpec, ContainerUsage, FilesystemLayout, FsStats, NodeStats, PodSpec, ResourceList, Toleration, VolumeSpec, VolumeUsage } from '../policy/types';

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

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(field: string, v: unknown): Obj {
  if (!isObj(v)) throw badValue(field, v, 'must be a map');
  return v;
}

function list(field: string, v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw badValue(field, v, 'must be a list');
  return v;
}

function str(field: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') throw badValue(field, v, 'must be a non-empty string');
  return v;
}

function quantity(field: string, v: unknown): Quantity {
  if (typeof v !== 'string' && typeof v !== 'number') throw badValue(field, v, 'must be a quantity such as "100Mi"');
  try {
    return Quantity.parse(v);
  } catch (e) {
    if (e instanceof QuantityError) throw badValue(field, v, e.message);
    throw e;
  }
}

/** A byte or count amount: a quantity rounded up to an integer, as Quantity.Value() does. */
function amount(field: string, v: unknown): number {
  return quantity(field, v).value();
}

function optAmount(field: string, v: unknown): number | undefined {
  return v === undefined || v === null ? undefined : amount(field, v);
}

function integer(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw badValue(field, v, 'must be a whole number');
  return v;
}

function memory(field: string, v: unknown) {
  if (v === undefined || v === null) return undefined;
  const m = obj(field, v);
  const available = optAmount(`${field}.availableBytes`, m.availableBytes);
  const workingSet = optAmount(`${field}.workingSetBytes`, m.workingSetBytes);
  // the kubelet observes memory only when both numbers are there
  return available === undefined || workingSet === undefined ? undefined : { availableBytes: available, workingSetBytes: workingSet };
}

function fs(field: string, v: unknown): FsStats | undefined {
  if (v === undefined || v === null) return undefined;
  const m = obj(field, v);
  return {
    availableBytes: optAmount(`${field}.availableBytes`, m.availableBytes),
    capacityBytes: optAmount(`${field}.capacityBytes`, m.capacityBytes),
    inodesFree: optAmount(`${field}.inodesFree`, m.inodesFree),
    inodes: optAmount(`${field}.inodes`, m.inodes),
  };
}

const NODE_KEYS = ['memory', 'allocatableMemory', 'nodefs', 'imagefs', 'containerfs', 'pid'];

function node(field: string, v: unknown): NodeStats {
  if (v === undefined || v === null) return {};
  const m = obj(field, v);
  for (const k of Object.keys(m)) if (!NODE_KEYS.includes(k)) throw badValue(`${field}.${k}`, m[k], `unknown part (one of ${NODE_KEYS.join(', ')})`);
  const out: NodeStats = {};
  const mem = memory(`${field}.memory`, m.memory);
  if (mem) out.memory = mem;
  const alloc = memory(`${field}.allocatableMemory`, m.allocatableMemory);
  if (alloc) out.allocatableMemory = alloc;
  for (const k of ['nodefs', 'imagefs', 'containerfs'] as const) {
    const f = fs(`${field}.${k}`, m[k]);
    if (f) out[k] = f;
  }
  if (m.pid !== undefined && m.pid !== null) {
    const p = obj(`${field}.pid`, m.pid);
    const maxPID = optAmount(`${field}.pid.maxPID`, p.maxPID);
    const running = optAmount(`${field}.pid.running`, p.running);
    if (maxPID !== undefined && running !== undefined) out.pid = { maxPID, running };
  }
  return out;
}

function resources(field: string, v: unknown): ResourceList {
  if (v === undefined || v === null) return {};
  const out: ResourceList = {};
  for (const [k, x] of Object.entries(obj(field, v))) out[k] = quantity(`${field}.${k}`, x);
  return out;
}

function stringMap(field: string, v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(obj(field, v))) {
    if (typeof x !== 'string') throw badValue(`${field}.${k}`, x, 'must be a string');
    out[k] = x;
  }
  return out;
}

interface ParsedPod {
  spec: PodSpec;
  usage: { containers: ContainerUsage[]; volumes: VolumeUsage[]; processes?: number };
}

function container(field: string, v: unknown): { spec: ContainerSpec; usage: ContainerUsage } {
  const c = obj(field, v);
  const name = str(`${field}.name`, c.name);
  const spec = { name, requests: resources(`${field}.requests`, c.requests), limits: resources(`${field}.limits`, c.limits) };
  const usage: ContainerUsage = { name };
  if (c.usage !== undefined && c.usage !== null) {
    const u = obj(`${field}.usage`, c.usage);
    usage.memoryBytes = optAmount(`${field}.usage.memory`, u.memory);
    usage.rootfsBytes = optAmount(`${field}.usage.rootfs`, u.rootfs);
    usage.logsBytes = optAmount(`${field}.usage.logs`, u.logs);
    usage.rootfsInodes = optAmount(`${field}.usage.inodes`, u.inodes);
  }
  return { spec, usage };
}

function pod(field: string, v: unknown): ParsedPod {
  const p = obj(field, v);
  const name = str(`${field}.name`, p.name);
  const containers = list(`${field}.containers`, p.containers).map((c, i) => container(`${field}.containers[${i}]`, c));
  const initContainers = list(`${field}.initContainers`, p.initContainers).map((c, i) => container(`${field}.initContainers[${i}]`, c).spec);
  const volumes: VolumeSpec[] = [];
  const volumeUsage: VolumeUsage[] = [];
  list(`${field}.volumes`, p.volumes).forEach((x, i) => {
    const vf = `${field}.volumes[${i}]`;
    const vol = obj(vf, x);
    const vname = str(`${vf}.name`, vol.name);
    const spec: VolumeSpec = { name: vname };
    if (vol.emptyDir !== undefined && vol.emptyDir !== null) {
      const ed = obj(`${vf}.emptyDir`, vol.emptyDir);
      spec.emptyDir = {};
      if (ed.sizeLimit !== undefined && ed.sizeLimit !== null) spec.emptyDir.sizeLimit = quantity(`${vf}.emptyDir.sizeLimit`, ed.sizeLimit);
      if (typeof ed.medium === 'string') spec.emptyDir.medium = ed.medium;
    }
    volumes.push(spec);
    if (vol.usage !== undefined && vol.usage !== null) {
      volumeUsage.push({ name: vname, usedBytes: amount(`${vf}.usage`, vol.usage), inodesUsed: optAmount(`${vf}.inodes`, vol.inodes) });
    }
  });
  const tolerations = list(`${field}.tolerations`, p.tolerations).map((t, i) => obj(`${field}.tolerations[${i}]`, t) as Toleration);
  const spec: PodSpec = {
    namespace: p.namespace === undefined ? 'default' : str(`${field}.namespace`, p.namespace),
    name,
    uid: p.uid === undefined ? name : str(`${field}.uid`, p.uid),
    priority: p.priority === undefined || p.priority === null ? 0 : integer(`${field}.priority`, p.priority),
    annotations: stringMap(`${field}.annotations`, p.annotations),
    containers: containers.map((c) => c.spec),
    volumes,
  };
  if (initContainers.length > 0) spec.initContainers = initContainers;
  if (tolerations.length > 0) spec.tolerations = tolerations;
  if (p.terminationGracePeriodSeconds !== undefined && p.terminationGracePeriodSeconds !== null) {
    const g = integer(`${field}.terminationGracePeriodSeconds`, p.terminationGracePeriodSeconds);
    if (g < 0) throw badValue(`${field}.terminationGracePeriodSeconds`, g, 'must be >= 0');
    spec.terminationGracePeriodSeconds = g;
  }
  const usage: ParsedPod['usage'] = { containers: containers.map((c) => c.usage), volumes: volumeUsage };
  if (p.processes !== undefined && p.processes !== null) usage.processes = amount(`${field}.processes`, p.processes);
  return { spec, usage };
}

const LAYOUTS: FilesystemLayout[] = ['single', 'dedicated-imagefs', 'split'];

/** Overlays the parts given in `after` on `base` (afterReclaim may give only what changed). */
function overlay(base: NodeStats, after: NodeStats): NodeStats {
  return { ...base, ...after };
}

export function readScenario(doc: unknown): Scenario {
  const d = obj('scenario', doc);
  const config = compileConfig(configFromKubeletConfiguration(d.config, 'config.'));
  const layout = (d.filesystems ?? 'single') as FilesystemLayout;
  if (!LAYOUTS.includes(layout)) throw badValue('filesystems', d.filesystems, `must be one of ${LAYOUTS.join(', ')}`);
  let last = 0;
  const steps = list('steps', d.steps).map((x, i): Step => {
    const f = `steps[${i}]`;
    const s = obj(f, x);
    let at: number;
    try {
      at = parseDuration(str(`${f}.at`, s.at ?? '0s'));
    } catch (e) {
      if (e instanceof DurationError) throw badValue(`${f}.at`, s.at, e.message);
      throw e;
    }
    if (at < 0) throw badValue(`${f}.at`, s.at, 'must not be negative');
    if (at < last) throw badValue(`${f}.at`, s.at, 'steps must not go back in time');
    last = at;
    const n = node(`${f}.node`, s.node);
    const pods = list(`${f}.pods`, s.pods).map((p, j) => pod(`${f}.pods[${j}]`, p));
    const step: Step = { at, node: n, pods: pods.map((p) => ({ spec: p.spec, usage: p.usage })), admit: list(`${f}.admit`, s.admit).map((p, j) => pod(`${f}.admit[${j}]`, p).spec) };
    if (s.afterReclaim !== undefined && s.afterReclaim !== null) step.afterReclaim = overlay(n, node(`${f}.afterReclaim`, s.afterReclaim));
    return step;
  });
  return { config, layout, steps };
}
