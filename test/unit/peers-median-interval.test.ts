import { test } from 'node:test';
import assert from 'node:assert/strict';
import { binomialHalfCdf, summarize } from '../../src/lab/bench/peers/median-interval';

test('binomialHalfCdf: exact values of Binomial(n, 1/2)', () => {
  assert.equal(binomialHalfCdf(10, 1), 11 / 1024);
  assert.equal(binomialHalfCdf(10, 2), 56 / 1024);
  assert.equal(binomialHalfCdf(10, 10), 1);
  assert.equal(binomialHalfCdf(10, -1), 0);
  assert.ok(Math.abs(binomialHalfCdf(100, 50) - 0.5397946186935895) < 1e-12);
});

test('summarize: 10 trials give [2nd, 9th] at 97.9%; the median of an even count is the mean of the middle two', () => {
  const s = summarize([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])!;
  assert.equal(s.median, 5.5);
  assert.equal(s.lo, 2);
  assert.equal(s.hi, 9);
  assert.ok(Math.abs(s.coverage! - (1 - 22 / 1024)) < 1e-12);
  assert.equal(s.p95, 10);
});

test('summarize: 20 trials give [6th, 15th] (95.9%), not the 7th (88.5%)', () => {
  const s = summarize(Array.from({ length: 20 }, (_, i) => i + 1))!;
  assert.equal(s.lo, 6);
  assert.equal(s.hi, 15);
  assert.ok(s.coverage! >= 0.95 && s.coverage! < 0.96);
  assert.equal(s.p95, 19);
});

test('summarize: fewer than 6 trials have no 95% interval; one value is its own median', () => {
  const five = summarize([1, 2, 3, 4, 5])!;
  assert.equal(five.lo, null);
  assert.equal(five.coverage, null);
  assert.equal(summarize([7])!.median, 7);
  assert.equal(summarize([]), null);
  assert.ok(summarize([1, 2, 3, 4, 5, 6])!.lo === 1, 'six: [min, max] at 96.9%');
});

test('summarize: -Infinity (before the line) and +Infinity (no stop) rank at the ends', () => {
  const s = summarize([-Infinity, 3, 4, 5, Infinity, Infinity, Infinity, Infinity, Infinity, Infinity])!;
  assert.equal(s.median, Infinity, 'most did not stop the hog: the median is "none"');
  assert.equal(s.lo, 3);
  const t = summarize([-Infinity, -Infinity, 1, 2, 3, 4, 5, 6, 7, Infinity])!;
  assert.equal(t.median, 3.5);
  assert.equal(t.lo, -Infinity);
  assert.equal(t.hi, 7);
  assert.equal(summarize([1, Infinity])!.median, 1, 'a middle pair with an infinity: the lower of the two');
});
