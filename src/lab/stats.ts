/** Percentiles and rounding shared by the demo and the benches (one definition: nearest rank). */

/** The nearest-rank percentile of an ascending array; NaN when it is empty. */
export function nearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The nearest-rank percentile of unsorted values; null when there are none. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  return nearestRank(
    [...values].sort((a, b) => a - b),
    p,
  );
}

export function round(x: number | null | undefined, digits = 1): number | null {
  if (x === null || x === undefined || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
