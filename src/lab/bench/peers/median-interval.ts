/**
 * A median with a distribution-free 95% interval, for `bench protect --peers`: with n trials,
 * the interval between the l-th smallest and the l-th largest value holds the true median with
 * probability 1 - 2 P(B <= l - 1), B ~ Binomial(n, 1/2) (the order-statistic, or sign-test,
 * interval); l is the largest rank that keeps that at or above 95%. It needs 6 trials at least
 * (with 5, even [min, max] covers only 93.75%); 10 trials give [2nd, 9th] at 97.9%.
 *
 * Values may be -Infinity (the contender acted before the hog saw its line: below every
 * measured value, size unknown) or +Infinity (it never acted before the kernel's OOM kill, or not
 * at all): they rank as the smallest or largest, which is all a median needs of them.
 */

/** P(B <= k) for B ~ Binomial(n, 1/2). */
export function binomialHalfCdf(n: number, k: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  let term = 1; // C(n, 0)
  let sum = 1;
  for (let i = 1; i <= k; i++) {
    term = (term * (n - i + 1)) / i;
    sum += term;
  }
  return sum / 2 ** n;
}

export interface MedianSummary {
  n: number;
  median: number;
  /** the interval's ends, or null when n is too small for the confidence asked */
  lo: number | null;
  hi: number | null;
  /** the interval's exact coverage (>= the confidence asked), or null */
  coverage: number | null;
  /** nearest-rank 95th percentile */
  p95: number;
}

/** The median (mean of the two middle values when n is even), its interval, and p95; null when empty. */
export function summarize(values: readonly number[], confidence = 0.95): MedianSummary | null {
  const n = values.length;
  if (n === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = n >> 1;
  // Two middle values of which one is infinite: the mean would be that infinity or NaN, so take the
  // lower one (the median is then at most it, which is what can be said).
  const median = n % 2 === 1 ? s[mid]! : Number.isFinite(s[mid - 1]! + s[mid]!) ? (s[mid - 1]! + s[mid]!) / 2 : s[mid - 1]!;
  let l = 0;
  for (let r = 1; r <= mid; r++) {
    if (1 - 2 * binomialHalfCdf(n, r - 1) >= confidence) l = r;
    else break;
  }
  const p95 = s[Math.min(n - 1, Math.max(0, Math.ceil(0.95 * n) - 1))]!;
  if (l === 0) return { n, median, lo: null, hi: null, coverage: null, p95 };
  return { n, median, lo: s[l - 1]!, hi: s[n - l]!, coverage: 1 - 2 * binomialHalfCdf(n, l - 1), p95 };
}
