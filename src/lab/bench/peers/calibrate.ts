/**
 * One line for everyone, on two signals. earlyoom, nohang and oomd (corrected for MemFree) act
 * on MemAvailable; evictd and the kubelet act on memory.available = MemFree + Inactive(file).
 * Under an anonymous ramp the kernel cannot drop all of Inactive(file) in time (in the lab VM the
 * kubelet's signal still read about 80 MiB when the kernel OOM-killed the hog): a 32Mi line on it
 * is never crossed. This is the kubelet's own weakness (kubernetes #43916), and admins answer it
 * with a higher line. The bench does the same, measured rather than guessed: one ramp, stopped by
 * the bench itself when MemAvailable falls below the line, tells what memory.available read at
 * that moment; that value, rounded up, is evictd's line.
 */
import type { NodeLab } from '../../node-lab';
import { kernel } from './kernel';
import type { ProtectedPods } from './pods';
import { runTrial } from './trial';

export interface Calibration {
  evictdLineMiB: number;
  /** how the value was found, printed with the configuration */
  note: string;
}

export async function calibrate(lab: NodeLab, pods: ProtectedPods, rate: number, lineMiB: number): Promise<Calibration> {
  const t = await runTrial(lab, kernel, pods, rate, 0, lineMiB, lineMiB);
  const at = t.samples.find((x) => x.available < lineMiB);
  if (!at || t.oomKills > 0) {
    return { evictdLineMiB: lineMiB, note: `calibration ramp failed (${at ? 'the kernel OOM-killed first' : 'MemAvailable never fell below the line'}): memory.available<${lineMiB}Mi uncorrected` };
  }
  const evictdLineMiB = Math.ceil(at.kubelet);
  return { evictdLineMiB, note: `calibrated: when MemAvailable fell below ${lineMiB} MiB, memory.available (MemFree + Inactive(file)) read ${at.kubelet.toFixed(1)} MiB` };
}
