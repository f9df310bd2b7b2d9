import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adjacentPairs, designRows, seededRandom, shuffle, trialOrders, williamsRows } from '../../src/lab/bench/peers/williams';

/** Every ordered pair of distinct contenders directly follows the other `times` times; every contender at each position `perPosition` times. */
function assertBalanced(rows: string[][], names: string[], times: number, perPosition: number): void {
  const pairs = adjacentPairs(rows);
  for (const a of names) for (const b of names) if (a !== b) assert.equal(pairs.get(`${a}>${b}`) ?? 0, times, `${a} then ${b}`);
  for (const a of names) assert.equal(pairs.get(`${a}>${a}`), undefined, `${a} twice in a row`);
  for (let p = 0; p < names.length; p++) for (const a of names) assert.equal(rows.filter((r) => r[p] === a).length, perPosition, `${a} at position ${p}`);
  for (const r of rows) assert.deepEqual([...r].sort(), [...names].sort(), 'each row holds every contender once');
}

test('williamsRows: n rows when n is even, 2n when odd; each ordered pair adjacent once (even) or twice (odd)', () => {
  for (let n = 2; n <= 9; n++) {
    const names = Array.from({ length: n }, (_, i) => String(i));
    const rows = williamsRows(n).map((r) => r.map(String));
    assert.equal(rows.length, designRows(n));
    assertBalanced(rows, names, n % 2 === 0 ? 1 : 2, n % 2 === 0 ? 1 : 2);
  }
  assert.deepEqual(williamsRows(0), []);
  assert.deepEqual(williamsRows(1), [[0], [0]]);
});

test('trialOrders: the design over labels shuffled by the seed; the same seed, the same order; repeated squares stay balanced', () => {
  const names = ['evictd', 'earlyoom', 'nohang'];
  const a = trialOrders(names, 6, 42);
  assert.deepEqual(a, trialOrders(names, 6, 42));
  assertBalanced(a, names, 2, 2);
  assertBalanced(trialOrders(names, 12, 7), names, 4, 4);
  const six = ['evictd', 'kubelet', 'earlyoom', 'nohang', 'oomd', 'kernel'];
  assertBalanced(trialOrders(six, 18, 3), six, 3, 3);
  // Different seeds give different label assignments (with 6! of them, these two differ).
  assert.notDeepEqual(trialOrders(six, 6, 1), trialOrders(six, 6, 2));
  assert.equal(trialOrders(names, 20, 1).length, 20);
});

test('seededRandom and shuffle: deterministic, a permutation', () => {
  const r1 = seededRandom(5);
  const r2 = seededRandom(5);
  for (let i = 0; i < 5; i++) assert.equal(r1(), r2());
  const xs = shuffle([1, 2, 3, 4, 5, 6], seededRandom(9));
  assert.deepEqual([...xs].sort(), [1, 2, 3, 4, 5, 6]);
});
