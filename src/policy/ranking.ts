/**
 * Eviction ranking, as the kubelet's rank functions order pods today: a chain of comparators,
 * the first that tells two pods apart decides. Each pod's numbers are computed once (the chain
 * runs O(n log n) times), and every pod carries the reasons that placed it, for the logs.
 */
import { podFacts, type PodFacts } from './pods';
import { Quantity } from './quantity';
import { SIGNAL_TABLE, type PodFsUsage } from './signals';
import type { ActivePod, FilesystemLayout, PodSpec, PodUsage, Signal } from './types';

export interface RankedPod {
  pod: ActivePod;
  /** why the pod sits where it does (built on first read: formatting is costly at scale) */
  readonly reasons: string[];
}

/** Which of a pod's usage counts against a disk signal on a layout (its record's ranking, kubelet's buildSignalToRankFunc). */
function fsPartsFor(signal: Signal, layout: FilesystemLayout): readonly PodFsUsage[] {
  const ranking = SIGNAL_TABLE[signal].ranking;
  return ranking.by === 'disk' ? ranking.usage[layout] : [];
}

// Usage from an embedder may be fractional; the kubelet's int64 amounts truncate.
const bytes = (n: number) => Quantity.fromNumber(Math.trunc(n), 'BinarySI').toString();

export function podMemoryUsage(usage: PodUsage): number {
  let total = 0;
  for (const c of usage.containers) total += c.memoryBytes ?? 0;
  return total;
}

/**
 * helpers.go podDiskUsage: the containers' parts the layout counts, plus, where it counts
 * volumes, those of localVolumeNames (hostPath and IsLocalEphemeralVolume: a Memory or HugePages
 * emptyDir is not on the disk under pressure, whatever its usage).
 */
export function podDiskUsage(pod: PodSpec, usage: PodUsage, parts: readonly PodFsUsage[], inodes: boolean, facts: PodFacts = podFacts(pod)): number {
  let total = 0;
  for (const c of usage.containers) {
    if (parts.includes('root')) total += (inodes ? c.rootfsInodes : c.rootfsBytes) ?? 0;
    if (parts.includes('logs')) total += (inodes ? c.logsInodes : c.logsBytes) ?? 0;
  }
  if (parts.includes('volumes')) {
    for (const v of usage.volumes) if (facts.localVolumes.has(v.name)) total += (inodes ? v.inodesUsed : v.usedBytes) ?? 0;
  }
  return total;
}

type Measure = 'memory' | 'pids' | 'disk' | 'inodes';

/**
 * One pod's sort keys, and the pod in the ranking. Reasons are formatted from the stored numbers
 * only when read: one plain object per pod keeps a 10,000-pod pass light on the collector.
 */
class Ranked implements RankedPod {
  constructor(
    readonly pod: ActivePod,
    readonly index: number,
    readonly measure: Measure,
    /** memory, disk bytes, inodes or processes */
    readonly usage: number,
    /** the request that usage is held against (0 for pids and inodes) */
    readonly request: number,
    readonly exceeds: boolean,
    /** the last comparator's key: larger is evicted first */
    readonly amount: number,
    readonly parts: readonly PodFsUsage[] = [],
  ) {}

  get reasons(): string[] {
    const { pod, usage, request } = this;
    const priority = `priority ${pod.spec.priority}`;
    if (!pod.usage) return this.measure === 'pids' ? [priority, 'no stats (first within its priority)'] : ['no stats (ranked first)', priority];
    const over = this.exceeds ? 'exceeds' : 'within';
    switch (this.measure) {
      case 'memory':
        return [`memory usage ${bytes(usage)} ${over} request ${bytes(request)}`, priority, `usage above request ${bytes(usage - request)}`];
      case 'pids':
        return [priority, `${usage} processes`];
      case 'disk':
        return [`disk usage ${bytes(usage)} (${this.parts.join('+') || 'nothing'}) ${over} request ${bytes(request)}`, priority];
      case 'inodes':
        return [`inode usage ${usage} (${this.parts.join('+') || 'nothing'}) ${over} request 0`, priority];
    }
  }
}

/**
 * Memory and disk (useExceeds): pods without stats first, then exceeding their request, lower
 * priority, larger amount: the kubelet's first comparator (exceedMemoryRequests,
 * exceedDiskRequests) is the one that puts pods without stats first. PIDs: lower priority, then
 * pods without stats, then more processes: there priority comes first and the stats test lives
 * in the second comparator (process).
 *
 * A pod whose stats were not found (statsFunc's !found) has no usage at all, not a usage of 0:
 * every stats comparator returns cmpBool(!p1Found, !p2Found), so two such pods tie on all of
 * them and only priority tells them apart (a request does not: memory() and disk() never
 * subtract it without stats).
 */
function order(ranked: Ranked[], useExceeds: boolean): RankedPod[] {
  return ranked.sort((a, b) => {
    const aStats = a.pod.usage !== undefined;
    const s = aStats === (b.pod.usage !== undefined) ? 0 : aStats ? 1 : -1;
    if (useExceeds) {
      if (s !== 0) return s;
      if (aStats && a.exceeds !== b.exceeds) return a.exceeds ? -1 : 1;
    }
    const ap = a.pod.spec.priority;
    const bp = b.pod.spec.priority;
    if (ap !== bp) return ap - bp;
    if (s !== 0) return s;
    if (aStats && a.amount !== b.amount) return b.amount - a.amount;
    return a.index - b.index; // stable: keep the input order for ties
  });
}

const factsOf = (pods: readonly ActivePod[]) => pods.map((p) => podFacts(p.spec));

/** Memory: usage above request first, then priority, then usage above request (kubelet's rankMemoryPressure). */
export function rankMemory(pods: readonly ActivePod[], facts: readonly PodFacts[] = factsOf(pods)): RankedPod[] {
  const ranked: Ranked[] = new Array(pods.length);
  for (let i = 0; i < pods.length; i++) {
    const pod = pods[i];
    const request = facts[i].memoryRequest;
    const usage = pod.usage ? podMemoryUsage(pod.usage) : 0;
    ranked[i] = new Ranked(pod, i, 'memory', usage, request, usage > request, usage - request);
  }
  return order(ranked, true);
}

/** PIDs: priority, then process count (kubelet's rankPIDPressure). */
export function rankPids(pods: readonly ActivePod[]): RankedPod[] {
  const ranked: Ranked[] = new Array(pods.length);
  for (let i = 0; i < pods.length; i++) {
    const processes = pods[i].usage?.processes ?? 0;
    ranked[i] = new Ranked(pods[i], i, 'pids', processes, 0, false, processes);
  }
  return order(ranked, false);
}

/**
 * Disk and inodes: usage over request first, then priority, then usage minus the
 * ephemeral-storage request (the kubelet subtracts that request for inodes too).
 */
export function rankDisk(pods: readonly ActivePod[], signal: Signal, layout: FilesystemLayout, facts: readonly PodFacts[] = factsOf(pods)): RankedPod[] {
  const parts = fsPartsFor(signal, layout);
  const inodes = SIGNAL_TABLE[signal].resource === 'inodes';
  const ranked: Ranked[] = new Array(pods.length);
  for (let i = 0; i < pods.length; i++) {
    const pod = pods[i];
    const usage = pod.usage ? podDiskUsage(pod.spec, pod.usage, parts, inodes, facts[i]) : 0;
    const storageRequest = facts[i].storageRequest;
    const request = inodes ? 0 : storageRequest;
    ranked[i] = new Ranked(pod, i, inodes ? 'inodes' : 'disk', usage, request, usage > request, usage - storageRequest, parts);
  }
  return order(ranked, true);
}

/** The ranking the signal's record names. `facts[i]` are the derived facts of `pods[i]` (the caller has them already). */
export function rankFor(signal: Signal, layout: FilesystemLayout, pods: readonly ActivePod[], facts?: readonly PodFacts[]): RankedPod[] {
  switch (SIGNAL_TABLE[signal].ranking.by) {
    case 'memory':
      return rankMemory(pods, facts);
    case 'pids':
      return rankPids(pods);
    case 'disk':
      return rankDisk(pods, signal, layout, facts);
  }
}
