/** The memory line a bench workload crosses, the kernel mechanism that reports it, and event helpers. */
import path from 'node:path';
import type { CgroupLayout } from '../../../node/cgroups';
import { chooseLineMechanism, watchUsageThreshold } from '../../../kernel/select';
import type { KernelEvent, ThresholdWatcher, Watcher } from '../../../kernel/types';
import { ScratchCgroup } from '../../workload';

export const MiB = 1024 * 1024;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Who waits for the next event pushed into a recorded array (see record()). */
const arrivals = new WeakMap<KernelEvent[], Set<() => void>>();

/**
 * Waits for the first event at index >= from that matches; null on timeout. Woken by the
 * arrival itself, not by a 1 ms timer: a polling wait would keep the JS thread busy and delay
 * the very callbacks being measured (under emulation, by a good part of a millisecond).
 */
export async function nextEvent(events: KernelEvent[], from: number, match: (e: KernelEvent) => boolean, timeoutMs: number): Promise<KernelEvent | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const e = events.slice(from).find(match);
    if (e) return e;
    const left = deadline - Date.now();
    if (left <= 0) return null;
    const waiters = arrivals.get(events);
    if (waiters === undefined) {
      await sleep(Math.min(left, 1));
      continue;
    }
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, left);
      waiters.add(wake);
    });
  }
}

/** Collects a watcher's events; a failure is reported and its samples count as missed. */
export function record(w: Watcher): KernelEvent[] {
  const events: KernelEvent[] = [];
  const waiters = new Set<() => void>();
  arrivals.set(events, waiters);
  w.on('event', (e: KernelEvent) => {
    events.push(e);
    for (const wake of [...waiters]) wake();
  });
  w.on('error', (err: Error) => process.stderr.write(`  ${w.kind} watcher failed: ${err.message}\n`));
  return events;
}

/** The usage a line event carries: usage_bytes (tripwire, adaptive poller), usage_in_bytes (v1), current (fixed poller). */
export function usageOf(e: KernelEvent): number | undefined {
  const c = e.counters ?? {};
  return c.usage_bytes ?? c.usage_in_bytes ?? c.current;
}

/** The line the workload crosses, and the mechanism the agent runs for it. */
export interface Line {
  cg: ScratchCgroup;
  usageFile: string;
  bytes: number;
  /** Bytes each step touches past the line. */
  stepBytes: number;
  watcher: ThresholdWatcher;
  /** The row name: the line's mechanism (bpf-tripwire, memcg-threshold-eventfd, adaptive-poll). */
  mechanism: string;
  how: string;
  /**
   * The crossing, as the kernel saw it, when the mechanism knows it: the tripwire's programs
   * run at the start and the end of the charge that crosses and stamp its start
   * (bpf_ktime_get_ns, CLOCK_MONOTONIC). Null: use the workload's stamp.
   */
  kernelCrossNs(e: KernelEvent): bigint | null;
}

/**
 * A line 8 MiB above the idle usage of a scratch cgroup, watched by what `evictd run` selects
 * for it (src/kernel/select.ts): the memcg v1 threshold eventfd on v1; on pure cgroup v2 the
 * eBPF tripwire, or the adaptive poller where BPF cannot load.
 */
export function openLine(layout: CgroupLayout): Line {
  const version = layout.memoryVersion;
  const cg = ScratchCgroup.create(layout.memoryMount, 'notify', version);
  const usageFile = cg.file(version === 1 ? 'memory.usage_in_bytes' : 'memory.current');
  const bytes = Number(cg.read(path.basename(usageFile))) + 8 * MiB;
  const choice = chooseLineMechanism(cg.dir);
  const watcher = watchUsageThreshold(cg.dir, bytes, { intervalMs: 100 });
  const tripwire = watcher.lineMechanism === 'bpf-tripwire';
  const how = {
    'bpf-tripwire': 'eBPF fentry/fexit on the page counters, ring buffer; from the start of the crossing charge (fentry stamp) to the native callback',
    'memcg-threshold-eventfd': 'eventfd via cgroup.event_control; native callback stamp minus the allocator stamp',
    'adaptive-poll': 'the adaptive poller (no kernel mechanism here)',
    'fixed-poll': 'a fixed poller',
  }[watcher.lineMechanism];
  return {
    cg,
    usageFile,
    bytes,
    stepBytes: 16 * MiB,
    watcher,
    mechanism: watcher.lineMechanism,
    how: choice.fallbacks.length > 0 ? `${how} (fallback: ${choice.fallbacks.join('; ')})` : how,
    // The start of the crossing charge, not the program's own stamp at its end: the counter
    // moves inside the charge, so a poller on another CPU may read it past the line before the
    // program runs (measured: tens of microseconds under emulation, a negative latency).
    kernelCrossNs: (e) => (tripwire && e.counters?.charge_began_ns !== undefined ? BigInt(e.counters.charge_began_ns) : null),
  };
}
