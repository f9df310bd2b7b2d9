/** Signal observations and threshold arithmetic (kubelet's thresholdsMet and friends). */
import type { Threshold, ThresholdValue } from './config';
import { SIGNAL_CONDITION } from './signals';
import type { FilesystemLayout, FsStats, NodeCondition, NodeStats, Signal } from './types';

export interface Observation {
  available: number;
  capacity: number;
}
export type Observations = Partial<Record<Signal, Observation>>;

/** Turns node numbers into signal observations; a part with missing numbers is not observed. */
export function makeObservations(node: NodeStats): Observations {
  const obs: Observations = {};
  // capacity = available + working set, as the kubelet derives it from the summary API
  if (node.memory) obs['memory.available'] = { available: node.memory.availableBytes, capacity: node.memory.availableBytes + node.memory.workingSetBytes };
  if (node.allocatableMemory)
    obs['allocatableMemory.available'] = {
      available: node.allocatableMemory.availableBytes,
      capacity: node.allocatableMemory.availableBytes + node.allocatableMemory.workingSetBytes,
    };
  const fs = (fsStats: FsStats | undefined, bytes: Signal, inodes: Signal) => {
    if (!fsStats) return;
    if (fsStats.availableBytes !== undefined && fsStats.capacityBytes !== undefined)
      obs[bytes] = { available: fsStats.availableBytes, capacity: fsStats.capacityBytes };
    if (fsStats.inodesFree !== undefined && fsStats.inodes !== undefined) obs[inodes] = { available: fsStats.inodesFree, capacity: fsStats.inodes };
  };
  fs(node.nodefs, 'nodefs.available', 'nodefs.inodesFree');
  fs(node.imagefs, 'imagefs.available', 'imagefs.inodesFree');
  fs(node.containerfs, 'containerfs.available', 'containerfs.inodesFree');
  if (node.pid) obs['pid.available'] = { available: node.pid.maxPID - node.pid.running, capacity: node.pid.maxPID };
  return obs;
}

/** A threshold value in absolute units for a given capacity (kubelet's GetThresholdQuantity). */
export function thresholdAmount(value: ThresholdValue, capacity: number): number {
  if (value.quantity) return value.quantity.toNumber();
  // int64(float64(capacity) * float64(float32 percentage)): truncation toward zero
  return Math.trunc(capacity * (value.percentage ?? 0));
}

/**
 * The thresholds whose signal is below the line. With enforceMinReclaim the line is raised by the
 * minimum reclaim, which is how a threshold stays met until enough was reclaimed.
 */
export function thresholdsMet(thresholds: readonly Threshold[], obs: Observations, enforceMinReclaim: boolean): Threshold[] {
  const met: Threshold[] = [];
  for (const t of thresholds) {
    const o = obs[t.signal];
    if (!o) continue;
    let line = thresholdAmount(t.value, o.capacity);
    if (enforceMinReclaim && t.minReclaim) line += thresholdAmount(t.minReclaim, o.capacity);
    if (line > o.available) met.push(t);
  }
  return met;
}

/** Union of two threshold lists, by identity, keeping the first list's order. */
export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const out = [...a];
  for (const t of b) if (!out.includes(t)) out.push(t);
  return out;
}

export function conditionsOf(thresholds: readonly Threshold[]): NodeCondition[] {
  const out: NodeCondition[] = [];
  for (const t of thresholds) {
    const c = SIGNAL_CONDITION[t.signal];
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

const layoutCache = new WeakMap<readonly Threshold[], Map<FilesystemLayout, Threshold[]>>();

/**
 * The thresholds in force for a filesystem layout. The kubelet never takes containerfs
 * thresholds from the user: it derives them (UpdateContainerFsThresholds) from nodefs when the
 * writable layers share the node filesystem (single, split) and from imagefs when they live with
 * the images (dedicated-imagefs). Memoized so threshold identity is stable across passes.
 */
export function thresholdsForLayout(thresholds: readonly Threshold[], layout: FilesystemLayout): Threshold[] {
  let byLayout = layoutCache.get(thresholds);
  if (!byLayout) layoutCache.set(thresholds, (byLayout = new Map()));
  const cached = byLayout.get(layout);
  if (cached) return cached;
  const source = layout === 'dedicated-imagefs' ? 'imagefs' : 'nodefs';
  const kept = thresholds.filter((t) => !t.signal.startsWith('containerfs.'));
  const derived: Threshold[] = [];
  for (const t of kept) {
    if (t.signal === `${source}.available`) derived.push({ ...t, signal: 'containerfs.available' });
    if (t.signal === `${source}.inodesFree`) derived.push({ ...t, signal: 'containerfs.inodesFree' });
  }
  const result = [...kept, ...derived];
  byLayout.set(layout, result);
  return result;
}
