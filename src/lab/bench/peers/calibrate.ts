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
 * One set of ramps with no agent at the run's start, a reference; then one set per cell (rate),
 * as that cell's evictd trials find the node (calibrateCell): what runs and what is resident moves
 * MemAvailable against memory.available (locked code, kernel memory the kubelet counts as
 * available), so that set's median is the cell's line for evictd, the kubelet's row and oomd.
 * Both are printed and recorded (the cell's as `withEvictd`), with /proc/meminfo at each ramp's
 * lowest point (`nodes`): what parts the two signals.
 */
import type { NodeLab } from '../../node-lab';
import type { RunningContender } from './contender';
import { kernel } from './kernel';
import type { ProtectedPods } from './pods';
import { signalMiB, type Step } from './reaction';
import type { SignalTrace } from './signal-trace';
import type { NodeMeminfo } from './readings';
import { runTrial, settle } from './trial';
import { meminfo } from './meminfo';
import { summarize } from './median-interval';

/** What the hog read where MemAvailable crossed the line, per ramp, MiB. */
export interface CalibrationSet {
  kubeletMiB: number[];
  freeMiB: number[];
  /** ramps discarded (a kernel OOM kill, no reading) */
  discarded: number;
  /** /proc/meminfo at each ramp's lowest MemAvailable (trial.ts nodeAtLowest); absent before 2026-11-28 */
  nodes?: NodeMeminfo[];
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

async function ramps(
  lab: NodeLab,
  pods: ProtectedPods,
  rate: number,
  lineMiB: number,
  count: number,
  trace: SignalTrace,
  tag: string,
): Promise<CalibrationSet> {
  const out: CalibrationSet = { kubeletMiB: [], freeMiB: [], discarded: 0, nodes: [] };
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
    if (t.nodeAtLowest) out.nodes!.push(t.nodeAtLowest);
  }
  return out;
}

const list = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(', ') || 'none';
const describe = (s: CalibrationSet) =>
  `memory.available ${list(s.kubeletMiB)} MiB, MemFree ${list(s.freeMiB)} MiB${s.discarded ? ` (${s.discarded} discarded)` : ''}`;

/** The lines a calibration set gives: its medians, rounded up; null when it has no reading. */
function linesOf(set: CalibrationSet): { evictdLineMiB: number; oomdFreeLineMiB: number } | null {
  if (!set.kubeletMiB.length) return null;
  return { evictdLineMiB: Math.ceil(summarize(set.kubeletMiB)!.median), oomdFreeLineMiB: Math.ceil(summarize(set.freeMiB)!.median) };
}

/**
 * `count` ramps with no agent: a reference printed beside the cells' lines (what evictd's
 * presence moves), and the lines of a cell whose own calibration has no reading.
 */
export async function calibrateEmpty(
  lab: NodeLab,
  pods: ProtectedPods,
  rate: number,
  lineMiB: number,
  count: number,
  trace: SignalTrace,
  log: (s: string) => void = () => undefined,
): Promise<Calibration> {
  const noAgent = await ramps(lab, pods, rate, lineMiB, count, trace, 'no-agent');
  log(`  calibration, no agent: where MemAvailable fell below ${lineMiB} MiB the hog read ${describe(noAgent)}`);
  const lines = linesOf(noAgent);
  if (!lines)
    return {
      evictdLineMiB: lineMiB,
      oomdFreeLineMiB: lineMiB,
      note: `calibration failed (every ramp OOM-killed or without a reading): memory.available<${lineMiB}Mi and MemFree < ${lineMiB} MiB uncorrected`,
      noAgent,
    };
  return { ...lines, note: `with no agent, at ${rate} MiB/s, ${count} ramp(s): ${describe(noAgent)}`, noAgent };
}

/**
 * One cell's lines, taken as that cell's evictd trials find the node: the contenders on
 * MemAvailable started and frozen, and evictd itself running as shipped, armed (tripwire,
 * standing orders, passes) at FLOOR_LINE_MIB, a line memory.available never reaches here, so it
 * watches as in a trial and never acts; the bench ends each ramp at the common line. Before
 * this (2026-11-27), lines taken on two ramps at the run's start missed the trials by 6-20 MiB
 * (evictd's six trials of one run killed with MemAvailable at 47-62 MiB): the kubelet's number
 * sits a different distance above MemAvailable in each ramp, so the median needs ramps
 * (options.ts CALIBRATION_RAMPS). `fallback` gives the lines if no ramp has a reading.
 * `squeezeFirst`: a first ramp, not used, squeezes out page cache that the trials after their
 * warm-up ramps find gone; a run without warm-ups (--quick) has its trials find the node as
 * the calibration does without it.
 */
export async function calibrateCell(
  lab: NodeLab,
  pods: ProtectedPods,
  rate: number,
  lineMiB: number,
  count: number,
  trace: SignalTrace,
  startArmed: () => Promise<Pick<RunningContender, 'stop'>>,
  fallback: Calibration,
  squeezeFirst: boolean,
  log: (s: string) => void = () => undefined,
): Promise<Calibration> {
  const armed = await startArmed();
  let withEvictd: CalibrationSet;
  try {
    if (squeezeFirst) {
      const first = await ramps(lab, pods, rate, lineMiB, 1, trace, `cell-${rate}-first`);
      log(`  calibration at ${rate} MiB/s, a first ramp (not used): ${describe(first)}`);
    }
    withEvictd = await ramps(lab, pods, rate, lineMiB, count, trace, `cell-${rate}`);
  } finally {
    await armed.stop();
  }
  log(
    `  calibration at ${rate} MiB/s, as this cell's evictd trials find the node (evictd armed at memory.available < ${FLOOR_LINE_MIB} MiB, the peers on MemAvailable frozen): the hog read ${describe(withEvictd)}`,
  );
  const lines = linesOf(withEvictd);
  if (!lines) return { ...fallback, note: `at ${rate} MiB/s no calibration ramp had a reading (${describe(withEvictd)}): the no-agent lines`, withEvictd };
  return {
    ...lines,
    note: `calibrated at ${rate} MiB/s where MemAvailable fell below ${lineMiB} MiB, ${count} ramp(s) with evictd armed and the peers frozen: ${describe(withEvictd)}; the lines are the medians, rounded up`,
    withEvictd,
  };
}

/** evictd's line while it calibrates: memory.available reads over 100 MiB here when the kernel OOM-kills, so it never fires. */
export const FLOOR_LINE_MIB = 1;
