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
 */
import type { NodeLab } from '../../node-lab';
import { kernel } from './kernel';
import type { ProtectedPods } from './pods';
import { signalMiB, type Step } from './reaction';
import type { SignalTrace } from './signal-trace';
import { runTrial, settle } from './trial';
import { meminfo } from './meminfo';
import { summarize } from './median-interval';

export interface Calibration {
  evictdLineMiB: number;
  oomdFreeLineMiB: number;
  /** how the values were found, printed with the configuration */
  note: string;
}

/** What the hog read when MemAvailable first fell below the line (or its last reading, if the bench's kill came first). */
export function readingAtLine(steps: readonly Step[], lineMiB: number): { kubeletMiB: number; freeMiB: number } | null {
  const withReading = steps.filter((s) => s.reading);
  const at = withReading.find((s) => signalMiB(s.reading!, 'MemAvailable') < lineMiB) ?? withReading[withReading.length - 1];
  if (!at) return null;
  return { kubeletMiB: signalMiB(at.reading!, 'memory.available'), freeMiB: signalMiB(at.reading!, 'MemFree') };
}

export async function calibrate(lab: NodeLab, pods: ProtectedPods, rate: number, lineMiB: number, ramps: number, trace: SignalTrace): Promise<Calibration> {
  const kubelet: number[] = [];
  const free: number[] = [];
  let failed = 0;
  for (let i = 0; i < ramps; i++) {
    const before = meminfo().available;
    const line = { signal: 'MemAvailable' as const, belowMiB: lineMiB };
    const t = await runTrial(lab, kernel, pods, rate, i, { own: line, common: line }, trace, { killBelowMiB: lineMiB });
    await settle(before);
    const r = readingAtLine(t.raw.steps, lineMiB);
    if (!r || t.oomKills > 0) {
      failed++;
      continue;
    }
    kubelet.push(r.kubeletMiB);
    free.push(r.freeMiB);
  }
  if (!kubelet.length) {
    return { evictdLineMiB: lineMiB, oomdFreeLineMiB: lineMiB, note: `calibration failed (${failed} of ${ramps} ramps OOM-killed or without a reading): memory.available<${lineMiB}Mi and MemFree < ${lineMiB} MiB uncorrected` };
  }
  const k = summarize(kubelet)!.median;
  const f = summarize(free)!.median;
  const list = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ');
  return {
    evictdLineMiB: Math.ceil(k),
    oomdFreeLineMiB: Math.ceil(f),
    note: `calibrated on ${kubelet.length} ramp(s) at ${rate} MiB/s${failed ? ` (${failed} discarded)` : ''}: where MemAvailable fell below ${lineMiB} MiB, the hog read memory.available (MemTotal - anon - file + Inactive(file)) ${list(kubelet)} MiB and MemFree ${list(free)} MiB; medians rounded up`,
  };
}
