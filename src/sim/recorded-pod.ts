/**
 * A pod as the recording writes it (recording.ts): its spec's head, containers, volumes and
 * stats in the scenario's words, with what the policy reads and nothing else; and a pod offered
 * to admission, with what admit() reads.
 */
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../policy/pods';
import type { ActivePod, ContainerSpec, ContainerUsage, PodSpec, ResourceList, Toleration, VolumeSpec } from '../policy/types';
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
function usageFields(u: ContainerUsage): Record<string, unknown> {
  const usage: Record<string, unknown> = {};
  for (const [key, field] of USAGE_FIELDS) if (u[field] !== undefined) usage[key] = u[field];
  // KEP-5986's per-container signals, in the scenario's words
  if (u.memoryEvents) usage.memoryEvents = { ...u.memoryEvents };
  if (u.memoryPressureSomeAvg10 !== undefined) usage.memoryPressure = { someAvg10: u.memoryPressureSomeAvg10 };
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
  // Pod-level resources and the overhead: the pod's request (ranking, messages) and QoS read them.
  if (s.resources) out.resources = { ...optional('requests', resources(s.resources.requests)), ...optional('limits', resources(s.resources.limits)) };
  const overhead = s.overhead && resources(s.overhead);
  if (overhead) out.overhead = overhead;
  return out;
}

const optional = <T>(key: string, v: T | undefined): Record<string, T> => (v === undefined ? {} : { [key]: v });

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
