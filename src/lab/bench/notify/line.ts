/** The memory line a bench workload crosses, the kernel mechanism that reports it, and event helpers. */
import type { CgroupLayout } from '../../../node/cgroups';
import { watchCgroupEvents } from '../../../kernel/cgroup-events';
import { parseCounters } from '../../../kernel/counters';
import { watchMemcgThreshold } from '../../../kernel/memcg';
import type { KernelEvent, Watcher } from '../../../kernel/types';
import { ScratchCgroup } from '../../workload';

export const MiB = 1024 * 1024;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits for the first event at index >= from that matches; null on timeout. */
export async function nextEvent(events: KernelEvent[], from: number, match: (e: KernelEvent) => boolean, timeoutMs: number): Promise<KernelEvent | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const e = events.slice(from).find(match);
    if (e) return e;
    if (Date.now() > deadline) return null;
    await sleep(1);
  }
}

/** Collects a watcher's events; a failure is reported and its samples count as missed. */
export function record(w: Watcher): KernelEvent[] {
  const events: KernelEvent[] = [];
  w.on('event', (e: KernelEvent) => events.push(e));
  w.on('error', (err: Error) => process.stderr.write(`  ${w.kind} watcher failed: ${err.message}\n`));
  return events;
}

/** The line the workload crosses, and the kernel mechanism that reports it. */
export interface Line {
  cg: ScratchCgroup;
  usageFile: string;
  bytes: number;
  /** Bytes each step touches: past the line (for memory.high, not so far that throttling drags). */
  stepBytes: number;
  watcher: Watcher;
  how: string;
  /** Reports the crossing upward (`before`: the counters read before the step). */
  isUp(e: KernelEvent, before: Record<string, number>): boolean;
  /** Reports the way back down; null: the mechanism has none. */
  isDown: ((e: KernelEvent) => boolean) | null;
  overshoot(e: KernelEvent): number | null;
  countersBefore(): Record<string, number>;
}

/**
 * cgroup v1: a memcg usage threshold 8 MiB above idle, 16 MiB steps. Pure cgroup v2 has no usage
 * threshold notifier: memory.high 15.5 MiB above idle and memory.events' "high" counter, with
 * 16 MiB steps (a small overage keeps the kernel's over-high throttling short). The v2 path
 * could not be run on the hybrid host it was written on.
 */
export function openLine(layout: CgroupLayout): Line {
  if (layout.memoryVersion === 1) {
    const cg = ScratchCgroup.create(layout.memoryMount, 'notify', 1);
    const bytes = Number(cg.read('memory.usage_in_bytes')) + 8 * MiB;
    const watcher = watchMemcgThreshold(cg.dir, bytes);
    const usage = (e: KernelEvent) => e.counters?.usage_in_bytes;
    return {
      cg,
      usageFile: cg.file('memory.usage_in_bytes'),
      bytes,
      stepBytes: 16 * MiB,
      watcher,
      how: 'eventfd via cgroup.event_control; native callback stamp minus the allocator stamp',
      isUp: (e) => (usage(e) ?? 0) >= bytes,
      isDown: (e) => (usage(e) ?? Infinity) < bytes,
      overshoot: (e) => (usage(e) ?? bytes) - bytes,
      countersBefore: () => ({}),
    };
  }
  const cg = ScratchCgroup.create(layout.memoryMount, 'notify', 2);
  const bytes = Math.round(Number(cg.read('memory.current')) + 15.5 * MiB);
  cg.write('memory.high', bytes);
  const watcher = watchCgroupEvents(cg.file('memory.events'));
  return {
    cg,
    usageFile: cg.file('memory.current'),
    bytes,
    stepBytes: 16 * MiB,
    watcher,
    how: 'kernfs notification of memory.events ("high" counter) when usage passes memory.high',
    isUp: (e, before) => (e.counters?.high ?? 0) > (before.high ?? 0),
    isDown: null,
    overshoot: () => null,
    countersBefore: () => parseCounters(cg.read('memory.events')),
  };
}

