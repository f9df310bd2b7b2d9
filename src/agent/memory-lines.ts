/**
 * Where the memory lines are, and what they are called. A line is a working set at which the
 * kubelet's memory signal is met; its key names the signal's cgroup (`node` for memory.available,
 * `pods` for allocatableMemory.available) and the threshold's index among that signal's
 * thresholds: `node:line0`. A hard line's near-zone edge, where standing orders are placed, is
 * `node:near0`.
 */
import type { MemoryReading } from '../node/memory';
import type { PolicyConfig } from '../policy/config';
import { isHard, nearMarginBytes, type LineSignal } from '../policy/standing-order';
import { thresholdAmount } from '../policy/thresholds';

type Scope = 'node' | 'pods';
export type LineKey = `${Scope}:line${number}` | `${Scope}:near${number}`;

const scopeOf = (signal: LineSignal): Scope => (signal === 'memory.available' ? 'node' : 'pods');

/** The key of a memory signal's line. */
export function lineKey(signal: LineSignal, thresholdIndex: number): LineKey {
  return `${scopeOf(signal)}:line${thresholdIndex}`;
}

/** The key of a hard line's near-zone edge. */
export function nearKey(signal: LineSignal, thresholdIndex: number): LineKey {
  return `${scopeOf(signal)}:near${thresholdIndex}`;
}

/** The signal a line (by its key, as the mechanism names it) stands for. */
export function signalOfLine(line: string): LineSignal {
  return line.startsWith('pods:') ? 'allocatableMemory.available' : 'memory.available';
}

/**
 * The near-zone edges of a memory signal's hard lines in working-set terms (capacity - threshold
 * - the zone's margin), by the threshold's index among the signal's thresholds.
 */
export function nearLines(policy: PolicyConfig, signal: LineSignal, m: MemoryReading): [number, number][] {
  const out: [number, number][] = [];
  let i = 0;
  for (const t of policy.thresholds) {
    if (t.signal !== signal) continue;
    const amount = thresholdAmount(t.value, m.capacityBytes);
    if (isHard(t)) out.push([i, Math.max(0, m.capacityBytes - amount - nearMarginBytes(amount))]);
    i++;
  }
  return out;
}

/**
 * The lines for a memory signal in working-set terms, from this pass's numbers: the first
 * working set at which the kubelet's signal is met. Every mechanism fires at value >= line,
 * and the kubelet's threshold is met at available < amount, that is working set > capacity -
 * amount: so the line is one byte past capacity - amount (the tripwire rounds it up to the next
 * page). At capacity - amount itself, available equals the threshold and nothing is met.
 */
export function workingSetLines(policy: PolicyConfig, signal: LineSignal, m: MemoryReading): number[] {
  const out: number[] = [];
  for (const t of policy.thresholds) {
    if (t.signal !== signal) continue;
    out.push(Math.max(0, m.capacityBytes - thresholdAmount(t.value, m.capacityBytes)) + 1);
  }
  return out;
}
