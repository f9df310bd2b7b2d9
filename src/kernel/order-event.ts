import path from 'node:path';
import { parseCounters } from './counters';
import type { OrderEvent } from './types';

/**
 * A standing order's use as the addon reports it (the tripwire's order thread and the memcg v1
 * eventfd's share the fields: usage_bytes, line_bytes, charge_began_ns, fired_ns, killed_ns,
 * placed_ns, errno, signalled), for the kill file it wrote: the order used, which may not be the
 * latest placed.
 */
export function orderEventOf(text: string, killPath: string): OrderEvent {
  const c = parseCounters(text);
  const ns = (k: string) => BigInt(Math.round(c[k] ?? 0));
  return {
    podCgroupDir: path.dirname(killPath),
    usageBytes: c.usage_bytes ?? 0,
    lineBytes: c.line_bytes ?? 0,
    chargeBeganNs: ns('charge_began_ns'),
    firedNs: ns('fired_ns'),
    killedNs: ns('killed_ns'),
    placedNs: ns('placed_ns'),
    errno: c.errno ?? 0,
    signalledInCharge: (c.signalled ?? 0) === 1,
  };
}
