/**
 * Eviction ranking, as the kubelet's rank functions order pods today: a chain of comparators,
 * the first that tells two pods apart decides. Each pod's numbers are computed once (the chain
 * runs O(n log n) times), and every pod carries the reasons that placed it, for the logs.
 */
import { podRequest } from './pods';
import { Quantity } from './quantity';
import type { ActivePod, FilesystemLayout, PodSpec, PodUsage, Signal } from './types';

export interface RankedPod {
  pod: ActivePod;
  /** why the pod sits where it does (built on first read: formatting is costly at scale) */
  readonly reasons: string[];
}

type FsPart = 'root' | 'logs' | 'volumes';

/** Which of a pod's usage counts against each filesystem signal, per layout (kubelet's buildSignalToRankFunc). */
function fsPartsFor(signal: Signal, layout: FilesystemLayout): FsPart[] {
  const fs = signal.split('.')[0];
  if (layout === 'single') return ['root', 'logs', 'volumes'];
  if (layout === 'dedicated-imagefs') return fs === 'nodefs' ? ['logs', 'volumes'] : ['root']; // imagefs and containerfs: writable layers (+ images)
  // split: writable layers sit on the node filesystem with logs and volumes; imagefs holds only images
  return fs === 'imagefs' ? [] : ['root', 'logs', 'volumes'];
}

const bytes = (n: number) => Quantity.fromNumber(n, 'BinarySI').toString();

/** Volumes that consume local disk: everything but memory-backed emptyDirs. */
function isLocalDiskVolume(pod: PodSpec, name: string): boolean {
  const v = pod.volumes.find((x) => x.name === name);
  return !(v?.emptyDir?.medium === 'Memory');
}

export function podMemoryUsage(usage: PodUsage): number {
  let total = 0;
  for (const c of usage.containers) total += c.memoryBytes ?? 0;
  return total;
}

export function podDiskUsage(pod: PodSpec, usage: PodUsage, parts: readonly FsPart[], inodes: boolean): number {
  let total = 0;
  for (const c of usage.containers) {
    if (parts.includes('root')) total += (inodes ? c.rootfsInodes : c.rootfsBytes) ?? 0;
    if (parts.includes('logs')) total += (inodes ? c.logsInodes : c.logsBytes) ?? 0;
  }
  if (parts.includes('volumes')) {
    for (const v of usage.volumes) if (isLocalDiskVolume(pod, v.name)) total += (inodes ? v.inodesUsed : v.usedBytes) ?? 0;
  }
  return total;
}

class Ranked implements RankedPod {
  private cached: string[] | undefined;
  constructor(
    readonly pod: ActivePod,
    private readonly explain: () => string[],
  ) {}
  get reasons(): string[] {
    return (this.cached ??= this.explain());
  }
}

interface Keys {
  pod: ActivePod;
  index: number;
  hasStats: boolean;
  exceeds: boolean;
  priority: number;
  /** the last comparator's key: larger is evicted first */
  amount: number;
  reasons: () => string[];
}

/** Orders by: pods without stats first, then exceeding their request, lower priority, larger amount. */
function order(keys: Keys[], useExceeds: boolean): RankedPod[] {
  keys.sort((a, b) => {
    if (a.hasStats !== b.hasStats) return a.hasStats ? 1 : -1;
    if (useExceeds && a.exceeds !== b.exceeds) return a.exceeds ? -1 : 1;
    if (a.priority !== b.priority) return a.priority - b.priority;
    if (a.amount !== b.amount) return b.amount - a.amount;
    return a.index - b.index; // stable: keep the input order for ties
  });
  return keys.map((k) => new Ranked(k.pod, k.reasons));
}

/** Memory: usage above request first, then priority, then usage above request (kubelet's rankMemoryPressure). */
export function rankMemory(pods: readonly ActivePod[]): RankedPod[] {
  return order(
    pods.map((pod, index) => {
      const request = podRequest(pod.spec, 'memory');
      const usage = pod.usage ? podMemoryUsage(pod.usage) : 0;
      const exceeds = usage > request;
      return {
        pod,
        index,
        hasStats: pod.usage !== undefined,
        exceeds,
        priority: pod.spec.priority,
        amount: usage - request,
        reasons: () => pod.usage
          ? [`memory usage ${bytes(usage)} ${exceeds ? 'exceeds' : 'within'} request ${bytes(request)}`, `priority ${pod.spec.priority}`, `usage above request ${bytes(usage - request)}`]
          : ['no usage stats (ranked first)'],
      };
    }),
    true,
  );
}

/** PIDs: priority, then process count (kubelet's rankPIDPressure). */
export function rankPids(pods: readonly ActivePod[]): RankedPod[] {
  return order(
    pods.map((pod, index) => {
      const processes = pod.usage?.processes ?? 0;
      return {
        pod,
        index,
        hasStats: pod.usage !== undefined,
        exceeds: false,
        priority: pod.spec.priority,
        amount: processes,
        reasons: () => pod.usage ? [`priority ${pod.spec.priority}`, `${processes} processes`] : ['no usage stats (ranked first)'],
      };
    }),
    false,
  );
}

/**
 * Disk and inodes: usage over request first, then priority, then usage minus the
 * ephemeral-storage request (the kubelet subtracts that request for inodes too).
 */
export function rankDisk(pods: readonly ActivePod[], signal: Signal, layout: FilesystemLayout): RankedPod[] {
  const parts = fsPartsFor(signal, layout);
  const inodes = signal.endsWith('inodesFree');
  const unit = (n: number) => (inodes ? `${n} inodes` : bytes(n));
  return order(
    pods.map((pod, index) => {
      const usage = pod.usage ? podDiskUsage(pod.spec, pod.usage, parts, inodes) : 0;
      const storageRequest = podRequest(pod.spec, 'ephemeral-storage');
      const request = inodes ? 0 : storageRequest;
      const exceeds = usage > request;
      return {
        pod,
        index,
        hasStats: pod.usage !== undefined,
        exceeds,
        priority: pod.spec.priority,
        amount: usage - storageRequest,
        reasons: () => pod.usage
          ? [`${inodes ? 'inode' : 'disk'} usage ${unit(usage)} (${parts.join('+') || 'nothing'}) ${exceeds ? 'exceeds' : 'within'} request ${unit(request)}`, `priority ${pod.spec.priority}`]
          : ['no usage stats (ranked first)'],
      };
    }),
    true,
  );
}

export function rankFor(signal: Signal, layout: FilesystemLayout, pods: readonly ActivePod[]): RankedPod[] {
  if (signal === 'memory.available' || signal === 'allocatableMemory.available') return rankMemory(pods);
  if (signal === 'pid.available') return rankPids(pods);
  return rankDisk(pods, signal, layout);
}
