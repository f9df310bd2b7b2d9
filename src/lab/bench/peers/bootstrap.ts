/**
 * evictd's ratio to the best peer on the headline, with a bootstrap 95% interval: the trials of
 * each cell are resampled with replacement (each cell on its own, its own n), the ratio of the
 * two medians taken each time, and the interval is the 2.5th and 97.5th percentiles of those
 * ratios. The seed is fixed and printed, so the interval is the same on every rendering of a run.
 *
 * The ratio is the peer's median / evictd's: above 1, evictd gave memory back sooner. The
 * headline's infinities keep their rank: +Infinity ("not stopped") is slower than any time, so
 * time / +Infinity = 0 and +Infinity / time = +Infinity; -Infinity ("before the line") is
 * sooner than any, a vanishing time, so time / -Infinity = +Infinity; two equal infinities are
 * a tie, 1.
 */
import { seededRandom } from './williams';

export const BOOTSTRAP_SEED = 20261127;
export const BOOTSTRAP_REPS = 2000;

/** The median as median-interval.ts takes it (an infinite middle value: the lower one). */
export function medianOf(sorted: readonly number[]): number {
  const n = sorted.length;
  const mid = n >> 1;
  if (n % 2 === 1) return sorted[mid]!;
  const a = sorted[mid - 1]!;
  const b = sorted[mid]!;
  return Number.isFinite(a + b) ? (a + b) / 2 : a;
}

/** peer / ours with the conventions above; null when a value is not a time (NaN, or <= 0 and finite). */
export function ratioOfTimes(peer: number, ours: number): number | null {
  if (Number.isNaN(peer) || Number.isNaN(ours)) return null;
  if (peer === ours && !Number.isFinite(peer)) return 1;
  if (ours === -Infinity || peer === Infinity) return Infinity;
  if (peer === -Infinity || ours === Infinity) return 0;
  if (peer <= 0 || ours <= 0) return null;
  return peer / ours;
}

export interface BootstrapRatio {
  ratio: number | null;
  lo: number | null;
  hi: number | null;
  reps: number;
  seed: number;
}

export function bootstrapRatio(peer: readonly number[], ours: readonly number[], reps = BOOTSTRAP_REPS, seed = BOOTSTRAP_SEED): BootstrapRatio {
  const sort = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
  if (!peer.length || !ours.length) return { ratio: null, lo: null, hi: null, reps, seed };
  const ratio = ratioOfTimes(medianOf(sort(peer)), medianOf(sort(ours)));
  const random = seededRandom(seed);
  const draw = (xs: readonly number[]) => sort(Array.from({ length: xs.length }, () => xs[Math.floor(random() * xs.length)]!));
  const rs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const r = ratioOfTimes(medianOf(draw(peer)), medianOf(draw(ours)));
    if (r !== null) rs.push(r);
  }
  if (rs.length < reps * 0.95) return { ratio, lo: null, hi: null, reps, seed };
  rs.sort((a, b) => a - b);
  return { ratio, lo: rs[Math.floor(0.025 * rs.length)]!, hi: rs[Math.ceil(0.975 * rs.length) - 1]!, reps, seed };
}
