/** Signal observations and threshold arithmetic (kubelet's thresholdsMet and friends). */
import type { Threshold, ThresholdValue } from './config';
import { SIGNAL_TABLE, observeSignal, type Observation } from './signals';
import { SIGNALS, type FilesystemLayout, type NodeCondition, type NodeStats, type Signal } from './types';

export type { Observation };
export type Observations = Partial<Record<Signal, Observation>>;

/** Turns node numbers into signal observations, each as its record reads it; a signal whose numbers are missing is not observed. */
export function makeObservations(node: NodeStats): Observations {
  const obs: Observations = {};
  for (const s of SIGNALS) {
    const o = observeSignal(s, node);
    if (o) obs[s] = o;
  }
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
    const c = SIGNAL_TABLE[t.signal].condition;
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

/** The signals whose thresholds are copies (containerfs.*). */
const DERIVED = SIGNALS.filter((s) => SIGNAL_TABLE[s].derivedFrom);

const layoutCache = new WeakMap<readonly Threshold[], Map<FilesystemLayout, Threshold[]>>();

/**
 * The thresholds in force for a filesystem layout. The kubelet never takes containerfs
 * thresholds from the user: it derives them (UpdateContainerFsThresholds) from nodefs when the
 * writable layers share the node filesystem (single, split) and from imagefs when they live with
 * the images (dedicated-imagefs): the record's derivedFrom. Memoized so threshold identity is
 * stable across passes.
 */
export function thresholdsForLayout(thresholds: readonly Threshold[], layout: FilesystemLayout): Threshold[] {
  let byLayout = layoutCache.get(thresholds);
  if (!byLayout) layoutCache.set(thresholds, (byLayout = new Map()));
  const cached = byLayout.get(layout);
  if (cached) return cached;
  const kept = thresholds.filter((t) => !SIGNAL_TABLE[t.signal].derivedFrom);
  const derived: Threshold[] = [];
  for (const t of kept) {
    for (const d of DERIVED) if (SIGNAL_TABLE[d].derivedFrom![layout] === t.signal) derived.push({ ...t, signal: d });
  }
  const result = [...kept, ...derived];
  byLayout.set(layout, result);
  return result;
}
