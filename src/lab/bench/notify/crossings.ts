/** The crossing bench: the kernel mechanism and a real 100 ms poller on the same memory crossings. */
import path from 'node:path';
import type { CgroupLayout } from '../../../node/cgroups';
import { pollMemoryUsage } from '../../../kernel/polling';
import type { Watcher } from '../../../kernel/types';
import { Memhog } from '../../workload';
import { nextEvent, openLine, record, sleep } from './line';
import { readCostUs, rng, usOf, type Series } from './stats';

export interface CrossingResult {
  native: Series;
  nativeToJs: number[];
  /** usage read at the event minus the line (bytes): how far the workload got before JS heard */
  overshootBytes: number[];
  poll100: Series;
  crossingsNs: bigint[];
  readUs: number;
  missed: number;
}

/** The kernel mechanism and a real poll-100ms poller on the same crossings. */
export async function benchCrossings(layout: CgroupLayout, samples: number, progress: (s: string) => void): Promise<CrossingResult> {
  const line = openLine(layout);
  const { cg, usageFile, bytes, watcher: native } = line;
  const watchers: Watcher[] = [native];
  try {
    const hog = await Memhog.start([cg.dir]);
    try {
      const poller = pollMemoryUsage(cg.dir, bytes, 100);
      watchers.push(poller);
      // First listener: the moment JS code sees the event.
      const nativeJs: bigint[] = [];
      native.on('event', () => nativeJs.push(process.hrtime.bigint()));
      const nativeEvents = record(native);
      const pollEvents = record(poller);
      await native.ready();

      const result: CrossingResult = {
        native: { mechanism: native.kind, method: 'measured', how: line.how, latenciesUs: [] },
        nativeToJs: [],
        overshootBytes: [],
        poll100: { mechanism: 'poll-100ms', method: 'measured', how: `a real setInterval(100 ms) reading ${path.basename(usageFile)} beside it, same crossings`, latenciesUs: [] },
        crossingsNs: [],
        readUs: readCostUs(usageFile),
        missed: 0,
      };
      const random = rng(7);
      for (let i = 0; i < samples; i++) {
        // A random pause puts each crossing at a random phase of the 100 ms poller; without it
        // every step would start right after the poller's previous tick.
        await sleep(random() * 100);
        const n0 = nativeEvents.length;
        const p0 = pollEvents.length;
        const before = line.countersBefore();
        const step = await hog.alloc(line.stepBytes, usageFile, bytes);
        const up = await nextEvent(nativeEvents, n0, (e) => line.isUp(e, before), 2000);
        const pollUp = await nextEvent(pollEvents, p0, () => true, 2000);
        if (step.crossNs === 0n || up === null || pollUp === null) {
          result.missed++;
        } else {
          result.crossingsNs.push(step.crossNs);
          result.native.latenciesUs.push(usOf(up.monotonicNs - step.crossNs));
          result.nativeToJs.push(usOf(nativeJs[nativeEvents.indexOf(up)] - up.monotonicNs));
          const over = line.overshoot(up);
          if (over !== null) result.overshootBytes.push(over);
          result.poll100.latenciesUs.push(usOf(pollUp.monotonicNs - step.crossNs));
        }
        const n1 = nativeEvents.length;
        const p1 = pollEvents.length;
        await hog.free();
        // Both see the way down before the next step, so every step is a fresh crossing.
        const isDown = line.isDown;
        if (isDown !== null) await nextEvent(nativeEvents, n1, isDown, 2000);
        await nextEvent(pollEvents, p1, () => true, 2000);
        if (i % 20 === 19) progress(`${native.kind}: ${i + 1}/${samples}`);
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
