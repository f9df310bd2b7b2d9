/**
 * Where a line on the kubelet's signal must sit through a cell. evictd (and the kubelet's row)
 * act on memory.available, the peers and the common line on MemAvailable; the kubelet's number
 * where MemAvailable crosses the common line is known only from ramps, differs from ramp to ramp
 * (a standard deviation of 4-7 MiB in the lab) and drifts over a cell: in the two full runs of
 * 2026-11-28, a line fixed from 8 calibration ramps before the cell missed the cell's own trials
 * by -7.7 to +4.9 MiB, about +-200 ms at the rates reached, which decided the headline.
 *
 * So every trial of a contender on MemAvailable (the peers: they never act before the common
 * line, so each of their trials reads the kubelet's number there, uncensored) adds one reading,
 * and before each trial on the kubelet's signal the bench asks for the line the cell's readings
 * give now: their median, rounded up; the calibration ramps count until the peers' trials alone
 * are MIN_TRIAL_READINGS. A running contender is restarted on a new line (and warmed again) only
 * when that line is MOVE_MIB or more away from the one it runs with: a restart costs a warm-up
 * ramp, and the median of a dozen readings wanders by a MiB on noise alone.
 */
import { summarize } from './median-interval';

/** Readings from the cell's own trials before the calibration ramps stop counting. */
export const MIN_TRIAL_READINGS = 8;
/** How far the wanted line must be from a running contender's before it is restarted on it, MiB. */
export const MOVE_MIB = 2;

/** One restart of a contender on a moved line, as the run's JSON records it. */
export interface LineMove {
  contender: string;
  /** the counted trial (1-based) it was restarted before */
  beforeTrial: number;
  fromMiB: number;
  toMiB: number;
  /** how many readings the new line's median came from */
  readings: number;
}

export class LineTracker {
  private readonly fromTrials: number[] = [];

  constructor(private readonly calibration: readonly number[]) {}

  /** One trial's kubeletAtCommonMiB (null: its readings never fell below the common line). */
  add(kubeletAtCommonMiB: number | null | undefined): void {
    if (typeof kubeletAtCommonMiB === 'number' && Number.isFinite(kubeletAtCommonMiB)) this.fromTrials.push(kubeletAtCommonMiB);
  }

  /** The readings the line comes from now. */
  readings(): number[] {
    return this.fromTrials.length >= MIN_TRIAL_READINGS ? [...this.fromTrials] : [...this.calibration, ...this.fromTrials];
  }

  /** The line wanted now, MiB (the readings' median, rounded up), or null with no reading at all. */
  wanted(): number | null {
    const s = summarize(this.readings());
    return s ? Math.ceil(s.median) : null;
  }

  /** The line a contender running on `currentMiB` should be restarted on, or null to keep it. */
  moveFrom(currentMiB: number): number | null {
    const w = this.wanted();
    return w !== null && Math.abs(w - currentMiB) >= MOVE_MIB ? w : null;
  }
}
