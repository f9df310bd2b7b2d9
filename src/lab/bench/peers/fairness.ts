/**
 * "What favours whom", stated from the cells of the run rather than asserted: the bench prints
 * these beside the tables, and docs/benchmarks.md quotes them.
 */
import { summarize } from './median-interval';
import type { Scheduling } from './contender';
import { formatMs, type Cell } from './report';

const medianOf = (xs: (number | null)[]): number | null => summarize(xs.filter((x): x is number => x !== null && Number.isFinite(x)))?.median ?? null;

function byContender(cells: Cell[], pick: (c: Cell) => number | null): Map<string, number | null> {
  const out = new Map<string, number | null>();
  for (const name of [...new Set(cells.filter((c) => !c.notRun).map((c) => c.contender))])
    out.set(name, medianOf(cells.filter((c) => c.contender === name && !c.notRun).map(pick)));
  return out;
}

function list(m: Map<string, number | null>, unit: string, names?: string[]): string {
  return (
    [...m]
      .filter(([n, v]) => v !== null && (!names || names.includes(n)))
      .map(([n, v]) => `${n} ${formatMs(v)}${unit}`)
      .join(', ') || 'not measured'
  );
}

/**
 * Where evictd's line sat against where it had to: per rate, its line (or the range of lines its
 * trials ran with, when the line moved with the cell: line-tracker.ts) and the kubelet's number
 * in each trial (every contender's) where MemAvailable first fell below the common line. The
 * kernel's memory outside anon and file moves from ramp to ramp, so even a line on the true
 * median leaves half the trials early and half late: the spread says by how much.
 */
export function calibrationCheck(cells: Cell[]): string | null {
  const parts = [...new Set(cells.map((c) => c.rateMiBs))].flatMap((rate) => {
    const e = cells.find((c) => c.contender === 'evictd' && c.rateMiBs === rate);
    const lines = e?.ownLinesMiB?.length
      ? e.ownLinesMiB
      : [Number(/memory\.available < (\d+(?:\.\d+)?) MiB/.exec(e?.ownLine ?? '')?.[1] ?? NaN)].filter(Number.isFinite);
    const xs = cells.filter((c) => c.rateMiBs === rate).flatMap((c) => c.kubeletAtCommonMiB ?? []);
    const s = summarize(xs);
    const at = summarize(lines);
    if (!s || !at) return [];
    const off = at.median - s.median;
    const line =
      new Set(lines).size > 1 ? `lines ${Math.min(...lines)}-${Math.max(...lines)} MiB (median over its trials ${at.median})` : `line ${at.median} MiB`;
    return [
      `at ${rate} MiB/s asked, evictd's ${line} against a median of ${s.median.toFixed(1)} MiB (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}, ${xs.length} trials): ${Math.abs(off) < 1 ? 'on it' : `${Math.abs(off).toFixed(1)} MiB ${off > 0 ? 'high (it acts early)' : 'low (it acts late)'}`}`,
    ];
  });
  return parts.length
    ? `Calibration check: where MemAvailable first fell below the common line, the kubelet's memory.available read, ${parts.join('; ')}.`
    : null;
}

/** One sentence per thing that favours a contender, with this run's numbers (medians over its rates). */
export function whatFavoursWhom(cells: Cell[], scheduling?: Scheduling): string[] {
  const lead = byContender(cells, (c) => c.ownLeadMs);
  const windowMs = medianOf(cells.map((c) => c.windowMs));
  const exit = byContender(cells, (c) => c.exitAfterKillMs);
  const rss = byContender(cells, (c) => c.rssMiB);
  const faults = byContender(cells, (c) => c.majorFaults?.median ?? null);
  const inferred = cells.reduce((s, c) => s + (c.contender === 'evictd' ? c.inferred : 0), 0);
  const evictdTrials = cells.reduce((s, c) => s + (c.contender === 'evictd' ? c.trials : 0), 0);
  const check = calibrationCheck(cells);
  return [
    ...(check ? [check] : []),
    `Own lines: evictd's and the kubelet's line is on memory.available, oomd's on MemFree, both calibrated to cross where MemAvailable crosses the common line; measured, each own line was crossed before the common one by (ms, median; negative = after): ${list(lead, ' ms', ['evictd', 'kubelet', 'oomd'])}. An earlier own line leaves more time before the end of memory (it favours that contender in "stopped" and "left at kill"), not in its own-line reaction.`,
    `The crossing stamp is the start of the MiB (near the lines, the 64 KiB chunk) whose reading fell below the line; that chunk's touch and reading took ${windowMs === null ? 'an unmeasured time' : `a median of ${formatMs(windowMs)} ms`}, so every reaction is an upper bound by at most that much, for every row alike (it weighs most on the fastest). evictd's own crossing was inferred (the hog killed inside that chunk, before it could read) in ${inferred} of its ${evictdTrials} trials.`,
    `The kill is the send (signal_generate). What follows is not in the reaction: send -> hog exited, median ms: ${list(exit, ' ms')}. A SIGTERM (earlyoom, nohang) runs the hog's handler; a SIGKILL (evictd's cgroup.kill, oomd, the kernel) does not.`,
    scheduling === 'normal'
      ? `Scheduling (--scheduling normal): every contender at normal scheduling: evictd --realtime-priority=0, earlyoom without -p, nohang SCHED_OTHER nice 0; oomd has no setting; the kubelet and kernel rows are the same in both variants. On the lab's 2 emulated CPUs the hog, the probe, the bench and containerd compete with every contender.`
      : scheduling === 'tight'
        ? `Scheduling (--scheduling tight): each at its tightest documented setting: evictd as shipped with --realtime-priority=10 (its kill thread SCHED_FIFO 10), earlyoom -p (nice -20), nohang SCHED_RR 1 (its unit's documented CPUSchedulingPolicy=rr); oomd has none; the kubelet and kernel rows are the same in both variants. On the lab's 2 emulated CPUs the hog, the probe, the bench and containerd compete with every contender.`
        : `Scheduling: not recorded (a run before the variants: evictd --realtime-priority=10, earlyoom -p, nohang and oomd at normal priority).`,
    `Memory back is stamped the same way for everyone: by the probe in the Guaranteed pod, its first reading at or above the common line after the kill's send; a SIGTERM (earlyoom, nohang) lets the hog run its handler and exit, a SIGKILL does not wait, and either way the memory is back only when the hog's pages are freed. Each contender runs through the cell, warmed by a throwaway ramp, frozen (cgroup.freeze) while the others' trials run and given 2 s after thawing before its ramp.`,
    `Memory each contender takes from the node (VmRSS at the ramp's start, MiB): ${list(rss, '')}.`,
    `Paged out near the end of memory: each contender's major page faults during a ramp (median): ${list(faults, '')}. A fault is a page of its own code or files read back from a disk that reclaim keeps busy; evictd locks its code (--lock-memory, as shipped), earlyoom and nohang lock themselves (mlockall).`,
    `Stop path: evictd and the kubelet row stop the pod through CRI (fast kill of the pod cgroup, then StopPodSandbox: Kubernetes sees an eviction); earlyoom, nohang and oomd kill a process and the sandbox stays up (Kubernetes sees a crash and restarts the hog).`,
  ];
}
