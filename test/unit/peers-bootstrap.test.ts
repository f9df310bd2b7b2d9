import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapRatio, medianOf, ratioOfTimes } from '../../src/lab/bench/peers/bootstrap';

test('ratioOfTimes: peer / ours; "not stopped" slower than any time, "before the line" sooner', () => {
  assert.equal(ratioOfTimes(100, 50), 2);
  assert.equal(ratioOfTimes(Infinity, 50), Infinity);
  assert.equal(ratioOfTimes(50, Infinity), 0);
  assert.equal(ratioOfTimes(Infinity, Infinity), 1);
  assert.equal(ratioOfTimes(50, -Infinity), Infinity);
  assert.equal(ratioOfTimes(-Infinity, 50), 0);
  assert.equal(ratioOfTimes(-Infinity, -Infinity), 1);
  assert.equal(ratioOfTimes(0, 50), null);
});

test('medianOf: as median-interval.ts takes it', () => {
  assert.equal(medianOf([1, 2, 3]), 2);
  assert.equal(medianOf([1, 2, 3, 4]), 2.5);
  assert.equal(medianOf([1, Infinity]), 1);
});

test('bootstrapRatio: the ratio of medians, an interval around it, the same with the same seed', () => {
  const ours = Array.from({ length: 20 }, (_, i) => 10 + i);
  const peer = Array.from({ length: 20 }, (_, i) => 40 + 2 * i);
  const b = bootstrapRatio(peer, ours, 2000, 1);
  assert.equal(b.ratio, 59 / 19.5);
  assert.ok(b.lo! > 1 && b.lo! < b.ratio! && b.hi! > b.ratio!, JSON.stringify(b));
  assert.deepEqual(bootstrapRatio(peer, ours, 2000, 1), b);
  // The same distribution on both sides: the interval straddles 1.
  const same = bootstrapRatio(ours, ours, 2000, 1);
  assert.equal(same.ratio, 1);
  assert.ok(same.lo! < 1 && same.hi! > 1);
  // A peer that never stopped the hog: +Infinity ranks last, the ratio is infinite.
  assert.equal(
    bootstrapRatio(
      peer.map(() => Infinity),
      ours,
      200,
      1,
    ).ratio,
    Infinity,
  );
  assert.equal(bootstrapRatio([], ours).ratio, null);
});
