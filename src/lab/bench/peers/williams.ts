/**
 * The order of the trials in `bench protect --peers`: a Williams design, so that every contender
 * follows every other equally often and no contender always runs after the same one (a trial
 * leaves the node's page cache, the probe's pages and the frozen daemons in a state the next
 * trial inherits). For n contenders, a balanced Latin square of n rows when n is even; when n is
 * odd, that square and its mirror, 2n rows. Across the rows, each contender is directly
 * followed by each other exactly once (n even) or twice (n odd), and runs once at each position
 * per square. The labels are shuffled by a seed, so which contender gets which column of the
 * design is chance, printed and recorded, and a run can be repeated in the same order.
 */

/** mulberry32: a small seeded generator (uniform in [0, 1)); the same seed, the same sequence. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher-Yates with the given generator. */
export function shuffle<T>(xs: readonly T[], random: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The rows of a Williams design over 0..n-1: row r is r, r+1, r-1, r+2, r-2, ... (mod n); for
 * odd n the mirrored rows follow.
 */
export function williamsRows(n: number): number[][] {
  if (n <= 0) return [];
  const base: number[] = [0];
  for (let k = 1; base.length < n; k++) {
    base.push(k);
    if (base.length < n) base.push(n - k);
  }
  const rows = Array.from({ length: n }, (_, r) => base.map((b) => (b + r) % n));
  return n % 2 === 0 ? rows : [...rows, ...rows.map((row) => [...row].reverse())];
}

/** The trials' order: `trials` rows of the design (repeated as needed) over the shuffled contenders. */
export function trialOrders<T>(contenders: readonly T[], trials: number, seed: number): T[][] {
  const labels = shuffle(contenders, seededRandom(seed));
  const rows = williamsRows(labels.length);
  if (!rows.length) return Array.from({ length: trials }, () => []);
  return Array.from({ length: trials }, (_, i) => rows[i % rows.length]!.map((k) => labels[k]!));
}

/** How often each contender directly follows each other within the rows: "a>b" -> count. */
export function adjacentPairs<T>(rows: readonly (readonly T[])[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const row of rows)
    for (let i = 1; i < row.length; i++) out.set(`${String(row[i - 1])}>${String(row[i])}`, (out.get(`${String(row[i - 1])}>${String(row[i])}`) ?? 0) + 1);
  return out;
}

/** The rows a complete design takes for n contenders: trials a multiple of it are balanced. */
export const designRows = (n: number): number => (n % 2 === 0 ? n : 2 * n);
