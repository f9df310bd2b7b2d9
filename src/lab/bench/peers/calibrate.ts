/**
 * One line for everyone, on three signals. earlyoom and nohang act on MemAvailable; oomd on
 * MemFree (usage = MemTotal - MemFree); evictd and the kubelet on memory.available =
 * MemTotal - (anon + file - inactive_file) (reaction.ts signalMiB). Under an anonymous ramp the kernel cannot drop all of
 * Inactive(file) in time (in the lab VM the kubelet's signal still read about 80-100 MiB when the
 * kernel OOM-killed the hog): a 32Mi line on it is never crossed. This is the kubelet's own
 * weakness (kubernetes #43916), and admins answer it with a higher line. The bench does the same,
 * measured rather than guessed: ramps stopped by the bench itself when MemAvailable falls below
 * the line, where the hog's own reading (the first below the line) says what memory.available
 * and MemFree read at that moment; the median over the ramps, rounded up, is evictd's line and
 * oomd's. Taken near the end of memory, where the contenders act, not at idle: there the
 * MemFree - MemAvailable gap is about 60 MiB, at idle 39.
 *
 * Two sets of ramps, the same count: first with no agent, then as an evictd trial finds the node:
 * evictd running with --dry-run (its line meanwhile the no-agent median), the contenders on other
 * signals started and frozen. What runs and what is resident moves MemAvailable against
 * memory.available (locked code: evictd's, and the peers' mlockall), so the second set's median
 * is the line of evictd, of the kubelet's row and of oomd. Both sets are printed and recorded
 * (the second as `withEvictd`).
 */
import type { NodeLab } from '../../node-lab';
import type { RunningContender } from './contender';
import { kernel } from './kernel';
import type { ProtectedPods } from './pods';
import { signalMiB, type Step } from './reaction';
import type { SignalTrace } from './signal-trace';
import { runTrial, settle } from './trial';
import { meminfo } from './meminfo';
import { summarize } from './median-interval';

/** What the hog read where MemAvailable crossed the line, per ramp, MiB. */
export interface CalibrationSet {
  kubeletMiB: number[];
  freeMiB: number[];
  /** ramps discarded (a kernel OOM kill, no reading) */
  discarded: number;
}

export interface Calibration {
  evictdLineMiB: number;
  oomdFreeLineMiB: number;
  /** how the values were found, printed with the configuration */
  note: string;
  noAgent?: CalibrationSet;
  withEvictd?: CalibrationSet;
}

/** What the hog read when MemAvailable first fell below the line (or its last reading, if the bench's kill came first). */
export function readingAtLine(steps: readonly Step[], lineMiB: number): { kubeletMiB: number; freeMiB: number } | null {
  const withReading = steps.filter((s) => s.reading);
  const at = withReading.find((s) => signalMiB(s.reading!, 'MemAvailable') < lineMiB) ?? withReading[withReading.length - 1];
  if (!at) return null;
  return { kubeletMiB: signalMiB(at.reading!, 'memory.available'), freeMiB: signalMiB(at.reading!, 'MemFree') };
}

async function ramps(lab: NodeLab, pods: ProtectedPods, rate: number, lineMiB: number, count: number, trace: SignalTrace, tag: string): Promise<CalibrationSet> {
  const out: CalibrationSet = { kubeletMiB: [], freeMiB: [], discarded: 0 };
  for (let i = 0; i < count; i++) {
    const before = meminfo().available;
    const line = { signal: 'MemAvailable' as const, belowMiB: lineMiB };
    const t = await runTrial(lab, { ...kernel, name: `calibration-${tag}` }, pods, rate, i, { own: line, common: line }, trace, { killBelowMiB: lineMiB });
    await settle(before);
    const r = readingAtLine(t.raw.steps, lineMiB);
    if (!r || t.oomKills > 0) {
      out.discarded++;
      continue;
    }
    out.kubeletMiB.push(r.kubeletMiB);
    out.freeMiB.push(r.freeMiB);
  }
  return out;
}

const list = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ') || 'none';
const describe = (s: CalibrationSet) => `memory.available ${list(s.kubeletMiB)} MiB, MemFree ${list(s.freeMiB)} MiB${s.discarded ? ` (${s.discarded} discarded)` : ''}`;

/**
 * `count` ramps with no agent, then `count` with the contenders `startResident` starts (given
 * the no-agent line), stopped after; the lines from the second set (the no-agent one if that set
 * has no reading).
 *
 * `startResident` puts the node in the state an evictd trial finds it in (bench.ts). What is on
 * the node moves MemAvailable against the kubelet's number (locked code: file pages that other
 * processes map too and that MemAvailable counted as reclaimable; 6-30 MiB on this lab), so the
 * lines are taken there, not on an empty node.
 */
export async function calibrate(lab: NodeLab, pods: ProtectedPods, rate: number, lineMiB: number, count: number, trace: SignalTrace, startResident: ((evictdLineMiB: number) => Promise<Pick<RunningContender, 'stop'>>) | null, log: (s: string) => void = () => undefined): Promise<Calibration> {
  const noAgent = await ramps(lab, pods, rate, lineMiB, count, trace, 'no-agent');
  log(`  calibration, no agent: where MemAvailable fell below ${lineMiB} MiB the hog read ${describe(noAgent)}`);
  const first = noAgent.kubeletMiB.length ? Math.ceil(summarize(noAgent.kubeletMiB)!.median) : lineMiB;
  let withEvictd: CalibrationSet | undefined;
  if (startResident) {
    const resident = await startResident(first);
    try {
      withEvictd = await ramps(lab, pods, rate, lineMiB, count, trace, 'resident');
    } finally {
      await resident.stop();
    }
    log(`  calibration, as an evictd trial finds the node (evictd --dry-run running, its line memory.available < ${first} MiB; the other contenders frozen): the hog read ${describe(withEvictd)}`);
  }
  const used = withEvictd?.kubeletMiB.length ? withEvictd : noAgent;
  const which = used === withEvictd ? 'as an evictd trial finds the node' : 'with no agent';
  if (!used.kubeletMiB.length) {
    return { evictdLineMiB: lineMiB, oomdFreeLineMiB: lineMiB, note: `calibration failed (every ramp OOM-killed or without a reading): memory.available<${lineMiB}Mi and MemFree < ${lineMiB} MiB uncorrected`, noAgent, ...(withEvictd ? { withEvictd } : {}) };
  }
  const k = summarize(used.kubeletMiB)!.median;
  const f = summarize(used.freeMiB)!.median;
  return {
    evictdLineMiB: Math.ceil(k),
    oomdFreeLineMiB: Math.ceil(f),
    note: `calibrated at ${rate} MiB/s where MemAvailable fell below ${lineMiB} MiB, ${count} ramp(s) each: with no agent the hog read ${describe(noAgent)}${withEvictd ? `; with evictd --dry-run running and the other contenders frozen ${describe(withEvictd)}` : ''}; the lines are the medians ${which}, rounded up`,
    noAgent,
    ...(withEvictd ? { withEvictd } : {}),
  };
}
