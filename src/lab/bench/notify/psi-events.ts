/** The PSI and cgroup.events rows of `evictd bench notify`. */
import os from 'node:os';
import type { CgroupLayout } from '../../../node/cgroups';
import { memhogPath } from '../../workload';
import { watchCgroupEvents } from '../../../kernel/cgroup-events';
import { watchPsi } from '../../../kernel/psi';
import type { Watcher } from '../../../kernel/types';
import { Memhog, onRamFilesystem, ScratchCgroup, spawnInCgroups, thrashFile } from '../../workload';
import { MiB, nextEvent, record, sleep } from './line';
import { usOf, type Series } from './stats';

/** PSI: a trigger on the workload's cgroup2 memory.pressure, page-cache thrash in a full 64 MiB memcg. */
export async function benchPsi(
  layout: CgroupLayout,
  samples: number,
  progress: (s: string) => void,
): Promise<{ series: Series; trigger: string } | { skipped: string }> {
  if (layout.unifiedMount === null) return { skipped: 'no cgroup2 mount' };
  const dir = os.tmpdir();
  if (onRamFilesystem(dir)) return { skipped: `${dir} is tmpfs: page-cache thrash needs a disk filesystem` };
  const file = thrashFile(dir, 256 * MiB);
  const unified = ScratchCgroup.create(layout.unifiedMount, 'notify', 2);
  const memcg = layout.memoryVersion === 1 ? ScratchCgroup.create(layout.memoryMount, 'notify', 1) : null;
  let watcher: Watcher | undefined;
  try {
    if (memcg !== null) memcg.write('memory.limit_in_bytes', 64 * MiB);
    else unified.write('memory.max', 64 * MiB);
    const cgroups = memcg !== null ? [memcg.dir, unified.dir] : [unified.dir];
    const trigger = { kind: 'some' as const, stallUs: 20_000, windowUs: 2_000_000 };
    const thrash = async (seconds: number, keep: boolean) => {
      const child = spawnInCgroups(cgroups, [memhogPath, 'thrash', file, String(seconds), ...(keep ? ['keep'] : [])]);
      const startNs = await new Promise<bigint>((resolve, reject) => {
        let out = '';
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (d: string) => {
          out += d;
          const m = /^start (\d+)/m.exec(out);
          if (m) resolve(BigInt(m[1]));
        });
        child.on('exit', () => reject(new Error(`thrash exited before it started: ${out}`)));
      });
      return { child, startNs, exited: new Promise((r) => child.on('exit', r)) };
    };
    // Fill the memcg with the file's pages first, so every sample starts at the limit.
    await (
      await thrash(1, false)
    ).exited;
    let triggerText = '';
    const series: Series = { mechanism: 'psi', method: 'measured', how: '', latenciesUs: [] };
    for (let i = 0; i < samples; i++) {
      // A fresh trigger per sample: its window starts now, so earlier stalls do not count and the
      // one-event-per-window limit does not hold the next sample back.
      const psi = watchPsi(unified.file('memory.pressure'), trigger);
      watcher = psi;
      triggerText = psi.trigger;
      const events = record(psi);
      const run = await thrash(20, true);
      const e = await nextEvent(events, 0, () => true, 20_000);
      run.child.kill('SIGKILL');
      await run.exited;
      await psi.close();
      if (e !== null) series.latenciesUs.push(usOf(e.monotonicNs - run.startNs));
      progress(`psi: ${i + 1}/${samples}`);
    }
    series.how = `trigger "${triggerText}"; from the start of page-cache thrash in a 64 MiB memcg already full`;
    return { series, trigger: triggerText };
  } finally {
    await watcher?.close();
    await unified.remove();
    await memcg?.remove();
  }
}

/** cgroup.events: the kernfs notification when the workload exits and its cgroup empties. */
export async function benchEvents(layout: CgroupLayout, samples: number, progress: (s: string) => void): Promise<Series | { skipped: string }> {
  if (layout.unifiedMount === null) return { skipped: 'no cgroup2 mount' };
  const cg = ScratchCgroup.create(layout.unifiedMount, 'notify', 2);
  let watcher: Watcher | undefined;
  try {
    const w = watchCgroupEvents(cg.file('cgroup.events'));
    watcher = w;
    const events = record(w);
    const series: Series = {
      mechanism: 'cgroup-events',
      method: 'measured',
      how: "kernfs notification of cgroup.events (populated 1 -> 0) from the workload's exit",
      latenciesUs: [],
    };
    for (let i = 0; i < samples; i++) {
      const hog = await Memhog.start([cg.dir]);
      // cgroup_file_notify() sends at most one notification per 10 ms per file and defers the
      // rest: let the one for the workload joining pass first.
      await sleep(30);
      const n0 = events.length;
      const exitNs = await hog.exit();
      const e = await nextEvent(events, n0, (ev) => ev.counters?.populated === 0, 2000);
      await hog.exited;
      if (e !== null) series.latenciesUs.push(usOf(e.monotonicNs - exitNs));
      if (i % 20 === 19) progress(`cgroup-events: ${i + 1}/${samples}`);
    }
    return series;
  } finally {
    await watcher?.close();
    await cg.remove();
  }
}
