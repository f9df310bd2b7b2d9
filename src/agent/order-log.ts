/**
 * The fields of the standing orders' log lines: one shape for an order placed, refreshed,
 * withdrawn or rehearsed, and one for an order used (what the mechanism measured at the kill).
 */
import type { OrderChoice } from '../policy/standing-order';
import type { OrderFired } from './ports';

/** An order: its line, its pod, and why the ranking chose it. */
export function orderFields(line: string, c: OrderChoice): Record<string, unknown> {
  return {
    line,
    signal: c.signal,
    pod: `${c.pod.namespace}/${c.pod.name}`,
    uid: c.pod.uid,
    podCgroupDir: c.podCgroupDir,
    availableBytes: c.availableBytes,
    lineBytes: c.lineBytes,
    ttlMs: c.ttlMs,
    reasons: c.reasons,
  };
}

/** An order used: `placed`, the order the agent knows for it (absent: none), and the kubelet's number at the crossing. */
export function usedFields(
  line: string,
  signal: string,
  f: OrderFired,
  placed: OrderChoice | undefined,
  availableBytes: number | undefined,
): Record<string, unknown> {
  return {
    line,
    signal,
    pod: placed ? `${placed.pod.namespace}/${placed.pod.name}` : undefined,
    uid: placed?.pod.uid,
    podCgroupDir: f.podCgroupDir,
    valueBytes: f.valueBytes,
    ...(f.unlistedBytes !== undefined ? { unlistedBytes: f.unlistedBytes } : {}),
    lineBytes: f.lineBytes,
    availableBytes,
    orderAgeMs: f.ageMs,
    crossedToKilledUs: Number(f.killedNs - f.crossedNs) / 1000,
    freshReadUs: f.checkUs,
    ...(f.useLogError ? { useLogError: f.useLogError } : {}),
    reasons: placed?.reasons,
  };
}
