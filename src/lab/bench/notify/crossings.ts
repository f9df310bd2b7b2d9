/**
 * The crossing bench: the line mechanism the agent runs, the adaptive poller and a real 100 ms
 * poller, all on the same memory crossings, at several ramp rates.
 *
 * One crossing stamp for every row of a run. Where the tripwire runs, its program stamps the
 * start of the charge that takes the counter across the line, in the kernel: that is the
 * crossing for all three rows (the pollers read the same counter, which cannot show the new
 * value before that charge began). Elsewhere the workload stamps it: as its usage nears the
 * line it reads the counter every 16 pages, and the crossing is the start of the last read that
 * still saw it below (native/tools/memhog.c). Counting touched bytes instead is wrong: memcg
 * charges 64 pages per CPU at a time (512 for a THP fault), so the counter runs ahead of the
 * touches, and a poller reading it beside them showed negative latencies.
 */
import path from 'node:path';
import type { CgroupLayout } from '../../../node/cgroups';
import { watchAdaptivePoll } from '../../../kernel/adaptive-poller';
import { pollMemoryUsage } from '../../../kernel/polling';
import { watchWorkingSetThreshold } from '../../../kernel/select';
import type { KernelEvent, ThresholdWatcher, Watcher } from '../../../kernel/types';
import { measureReader } from '../../../kernel/working-set';
import { Memhog } from '../../workload';
import { nextEvent, openLine, record, sleep, usageOf, MiB } from './line';
import { readCostUs, rng, usOf, type Series } from './stats';

/** Ramp rates of the steps, in turn: how far past the line each mechanism sees usage depends on them. */
export const RAMP_RATES: Array<{ label: string; bytesPerSec: number }> = [
  { label: '256MiB/s', bytesPerSec: 256 * MiB },
  { label: '2GiB/s', bytesPerSec: 2048 * MiB },
  { label: 'unpaced', bytesPerSec: 0 },
];

export interface CrossingResult {
  native: Series;
  /** the same crossings to the first JS listener of the line's watcher: what the agent's code sees */
  nativeJs: Series;
  adaptive: Series | null;
  poll100: Series;
  /** native callback -> first JS listener (us) */
  nativeToJs: number[];
  /**
   * The tripwire only: its program's stamp as the crossing charge ends -> the native callback
   * (us). The kernel waking the agent's thread, where under emulation the tail is.
   */
  wakeUs: number[];
  /** per mechanism, per ramp rate: usage past the line in the event (bytes) */
  granularity: Record<string, Record<string, number[]>>;
  crossingsNs: bigint[];
  readUs: number;
  missed: number;
  /** 'kernel' (the tripwire's stamp) or 'workload' (memhog's) */
  stamp: 'kernel' | 'workload';
}

/** A latency that is negative means the crossing stamp is wrong: stop the bench, loudly. */
function latencyUs(mechanism: string, eventNs: bigint, crossNs: bigint): number {
  const us = usOf(eventNs - crossNs);
  if (us < 0)
    throw new Error(`bench notify: ${mechanism} reported ${us.toFixed(1)} us BEFORE the crossing: the crossing stamp is wrong, refusing to report percentiles`);
  return us;
}

/**
 * Lines on the kubelet's own signal beside the usage line, where a mechanism computes it
 * (watchWorkingSetThreshold: the tripwire or the adaptive poller; none on v1): the cgroup's
 * working set (the pods line's measure) and the node's (the v2 root's memory.stat anon + file -
 * inactive_file). Each sits 8 MiB above its measure before every step; the step's 16 MiB of
 * anonymous memory crosses both. Their granularity is the measure the event carries past the line.
 */
interface SignalLine {
  name: string;
  dir: string;
  watcher: ThresholdWatcher;
  events: KernelEvent[];
  read: () => number;
}

function openSignalLines(cgDir: string, nodeDir: string | null): SignalLine[] {
  const out: SignalLine[] = [];
  for (const [name, dir] of [
    ['cgroup working set', cgDir],
    ['node working set', nodeDir],
  ] as const) {
    if (dir === null) continue;
    const read = measureReader(dir, 'working-set').read;
    const watcher = watchWorkingSetThreshold(dir, read() + 8 * MiB, { intervalMs: 100 });
    if (watcher === null) continue;
    out.push({ name: `${watcher.lineMechanism} ${name}`, dir, watcher, events: record(watcher), read });
  }
  return out;
}

export async function benchCrossings(layout: CgroupLayout, samples: number, progress: (s: string) => void): Promise<CrossingResult> {
  const line = openLine(layout);
  const { cg, usageFile, bytes, watcher: native } = line;
  const watchers: Watcher[] = [native];
  try {
    const hog = await Memhog.start([cg.dir]);
    try {
      // The node's working set is the v2 root's (a hybrid host's root has no such line: v1).
      const signals = openSignalLines(cg.dir, layout.memoryVersion === 2 ? layout.memoryMount : null);
      watchers.push(...signals.map((l) => l.watcher));
      const poller = pollMemoryUsage(cg.dir, bytes, 100);
      watchers.push(poller);
      const adaptive = native.lineMechanism === 'adaptive-poll' ? null : watchAdaptivePoll(cg.dir, bytes);
      if (adaptive) watchers.push(adaptive);
      // First listener: the moment JS code sees the event.
      const nativeJs: bigint[] = [];
      native.on('event', () => nativeJs.push(process.hrtime.bigint()));
      const nativeEvents = record(native);
      const pollEvents = record(poller);
      const adaptiveEvents = adaptive ? record(adaptive) : [];
      await native.ready();

      const tripwire = native.lineMechanism === 'bpf-tripwire';
      const result: CrossingResult = {
        native: { mechanism: line.mechanism, method: 'measured', how: line.how, latenciesUs: [] },
        nativeJs: {
          mechanism: `${line.mechanism}-js`,
          method: 'measured',
          how: `as ${line.mechanism}, to the first JS listener of the event (the callback the agent runs; the pollers' rows are stamped in JS too)`,
          latenciesUs: [],
        },
        adaptive: adaptive
          ? {
              mechanism: 'adaptive-poll',
              method: 'measured',
              how: `the adaptive poller (fallback where BPF cannot load) reading ${path.basename(usageFile)} beside it, same crossings`,
              latenciesUs: [],
            }
          : null,
        poll100: {
          mechanism: 'poll-100ms',
          method: 'measured',
          how: `a real setInterval(100 ms) reading ${path.basename(usageFile)} beside it, same crossings`,
          latenciesUs: [],
        },
        nativeToJs: [],
        wakeUs: [],
        granularity: {},
        crossingsNs: [],
        readUs: readCostUs(usageFile),
        missed: 0,
        stamp: tripwire ? 'kernel' : 'workload',
      };
      const past = (mechanism: string, rate: string, e: KernelEvent) => {
        const u = usageOf(e);
        if (u === undefined) return;
        ((result.granularity[mechanism] ??= {})[rate] ??= []).push(u - bytes);
      };
      const random = rng(7);
      for (let i = 0; i < samples; i++) {
        // A random pause puts each crossing at a random phase of the 100 ms poller; without it
        // every step would start right after the poller's previous tick.
        await sleep(random() * 100);
        const rate = RAMP_RATES[i % RAMP_RATES.length];
        const n0 = nativeEvents.length;
        const p0 = pollEvents.length;
        const a0 = adaptiveEvents.length;
        const s0 = signals.map((l) => {
          const at = l.read() + 8 * MiB;
          void l.watcher.rearm(at);
          return { at, from: l.events.length };
        });
        const step = await hog.alloc(line.stepBytes, usageFile, bytes, rate.bytesPerSec);
        const up = await nextEvent(nativeEvents, n0, (e) => (usageOf(e) ?? 0) >= bytes, 2000);
        const pollUp = await nextEvent(pollEvents, p0, () => true, 2000);
        const adUp = adaptive ? await nextEvent(adaptiveEvents, a0, () => true, 2000) : null;
        const crossNs = up !== null ? (line.kernelCrossNs(up) ?? step.crossNs) : 0n;
        if (crossNs === 0n || up === null || pollUp === null || (adaptive !== null && adUp === null)) {
          result.missed++;
        } else {
          result.crossingsNs.push(crossNs);
          result.native.latenciesUs.push(latencyUs(line.mechanism, up.monotonicNs, crossNs));
          const jsNs = nativeJs[nativeEvents.indexOf(up)];
          result.nativeJs.latenciesUs.push(latencyUs(`${line.mechanism}-js`, jsNs, crossNs));
          result.nativeToJs.push(usOf(jsNs - up.monotonicNs));
          const fired = up.counters?.fired_ns;
          if (tripwire && fired !== undefined) result.wakeUs.push(usOf(up.monotonicNs - BigInt(fired)));
          result.poll100.latenciesUs.push(latencyUs('poll-100ms', pollUp.monotonicNs, crossNs));
          past(line.mechanism, rate.label, up);
          past('poll-100ms', rate.label, pollUp);
          if (adUp !== null && result.adaptive !== null) {
            result.adaptive.latenciesUs.push(latencyUs('adaptive-poll', adUp.monotonicNs, crossNs));
            past('adaptive-poll', rate.label, adUp);
          }
        }
        for (const [k, l] of signals.entries()) {
          const e = await nextEvent(l.events, s0[k].from, (x) => x.counters?.above === 1, 2000);
          const u = e === null ? undefined : usageOf(e);
          if (u !== undefined) ((result.granularity[l.name] ??= {})[rate.label] ??= []).push(u - s0[k].at);
        }
        const n1 = nativeEvents.length;
        const p1 = pollEvents.length;
        const a1 = adaptiveEvents.length;
        const s1 = signals.map((l) => l.events.length);
        await hog.free();
        // Every watcher sees the way down before the next step, so every step is a fresh crossing.
        for (const [k, l] of signals.entries()) await nextEvent(l.events, s1[k], (x) => x.counters?.above === 0, 2000);
        await nextEvent(nativeEvents, n1, (e) => (usageOf(e) ?? Infinity) < bytes, 2000);
        await nextEvent(pollEvents, p1, () => true, 2000);
        if (adaptive) await nextEvent(adaptiveEvents, a1, () => true, 2000);
        if (i % 20 === 19) progress(`${line.mechanism}: ${i + 1}/${samples}`);
      }
      return result;
    } finally {
      hog.kill();
    }
  } finally {
    await Promise.all(watchers.map((w) => w.close()));
    await cg.remove();
  }
}
