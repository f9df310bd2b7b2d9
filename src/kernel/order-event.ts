import path from 'node:path';
import { addon, nativeAvailable } from './addon';
import { parseCounters } from './counters';
import type { OrderEvent } from './types';

/**
 * A standing order's use as the addon reports it (the tripwire's order thread and the memcg v1
 * eventfd's share the fields: usage_bytes, line_bytes, charge_began_ns, fired_ns, killed_ns,
 * placed_ns, errno, unlisted_bytes; usage_bytes and line_bytes are the kubelet's working set read
 * at the kill, less the unlisted usage, and the order's line), for the kill file it wrote: the
 * order used, which may not be the latest placed.
 */
export function orderEventOf(text: string, killPath: string): OrderEvent {
  const c = parseCounters(text);
  const ns = (k: string) => BigInt(Math.round(c[k] ?? 0));
  return {
    podCgroupDir: path.dirname(killPath),
    usageBytes: c.usage_bytes ?? 0,
    lineBytes: c.line_bytes ?? 0,
    unlistedBytes: c.unlisted_bytes ?? 0,
    chargeBeganNs: ns('charge_began_ns'),
    firedNs: ns('fired_ns'),
    killedNs: ns('killed_ns'),
    placedNs: ns('placed_ns'),
    errno: c.errno ?? 0,
    checkNs: ns('check_ns'),
    logErrno: c.log_errno ?? 0,
  };
}

/**
 * Delivers, now, the standing orders' uses that the addon's threads have written but the loop has
 * not yet been told of (their wake-up runs on a later turn): each line's 'order' is emitted
 * before this returns. A pass calls it before deciding, so that a pod an order killed an
 * instant ago is confirmed, never evicted a second time by the same pass.
 */
export function flushOrderUses(): void {
  if (nativeAvailable()) addon().flushOrderUses?.();
}

/**
 * Where the order threads note each use before its kill (native/use_log.h), or null to stop.
 * Throws when the file cannot be opened; without the addon there are no order threads to tell.
 */
export function setOrderUseLog(file: string | null): void {
  if (nativeAvailable()) addon().setOrderUseLog?.(file);
}

/** What the standing orders' threads did in this process, per mechanism (all 0 without the addon). */
export interface OrderCounts {
  /** kills written */
  used: number;
  /** crossings where the kubelet's working set, read fresh at the kill, was below the line: no kill */
  refused: number;
}

/** The memcg v1 order thread's and the tripwire's counts (each since its thread started). */
export function orderCounts(): { eventfd: OrderCounts; tripwire: OrderCounts & { dropped: number; full: number } } {
  const none = { used: 0, refused: 0 };
  if (!nativeAvailable()) return { eventfd: none, tripwire: { ...none, dropped: 0, full: 0 } };
  const a = addon();
  const s = a.tripwireStatus();
  return {
    eventfd: a.eventfdOrderStats?.() ?? none,
    tripwire: { used: s.ordersUsed ?? 0, refused: s.ordersRefused ?? 0, dropped: s.ordersDropped ?? 0, full: s.ordersFull ?? 0 },
  };
}
