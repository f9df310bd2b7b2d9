import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_POLL_BOUND, nextPollDelayMs, pollMarginBytes } from '../../src/kernel/adaptive-poller';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

test('the margin is the fastest ramp times the shortest interval: 50 MiB for 10 GiB/s and 5 ms', () => {
  assert.equal(pollMarginBytes(), 10 * GiB * 0.005);
  assert.equal(Math.round(pollMarginBytes() / MiB), 51);
});

test('at the line the poller reads at its fastest, far from it at its slowest', () => {
  assert.equal(nextPollDelayMs(0, 0), DEFAULT_POLL_BOUND.minIntervalMs);
  assert.equal(nextPollDelayMs(64 * GiB, 0), DEFAULT_POLL_BOUND.maxIntervalMs);
  // Never a fixed 100 ms: 1 GiB away is 105 ms, 256 MiB away 30 ms, 8 MiB away 5.8 ms.
  assert.ok(Math.abs(nextPollDelayMs(1 * GiB, 0) - 105) < 0.5);
  assert.ok(Math.abs(nextPollDelayMs(256 * MiB, 0) - 30) < 0.5);
  assert.ok(nextPollDelayMs(8 * MiB, 0) < 6);
});

test('the delay shrinks as the headroom shrinks', () => {
  let prev = Infinity;
  for (const d of [16 * GiB, 4 * GiB, 1 * GiB, 256 * MiB, 64 * MiB, 16 * MiB, 0]) {
    const ms = nextPollDelayMs(d, 0);
    assert.ok(ms <= prev, `${d}: ${ms} <= ${prev}`);
    prev = ms;
  }
});

test('an observed ramp faster than the assumed maximum shortens the delay', () => {
  const assumed = nextPollDelayMs(2 * GiB, 1 * GiB);
  const faster = nextPollDelayMs(2 * GiB, 40 * GiB);
  assert.equal(assumed, nextPollDelayMs(2 * GiB, 0), 'a ramp under the maximum changes nothing: the bound already covers it');
  assert.ok(faster < assumed / 3, `${faster} < ${assumed} / 3`);
});

test('the bound holds: a ramp of up to 10 GiB/s that starts right after a read passes the line by at most the margin', () => {
  const margin = pollMarginBytes();
  for (let d = 0; d <= 20 * GiB; d += 7 * MiB + 12345) {
    for (const rate of [0.1 * GiB, 1 * GiB, 10 * GiB]) {
      const ms = nextPollDelayMs(d, 0);
      const past = (rate * ms) / 1000 - d;
      assert.ok(past <= margin + 1, `distance ${d}, rate ${rate}: ${past} past the line > margin ${margin}`);
    }
  }
  // An observed rate above the maximum: the same margin, except where the shortest interval
  // itself lets that faster ramp cover more (rate x minInterval).
  const fast = 30 * GiB;
  const floor = (fast * DEFAULT_POLL_BOUND.minIntervalMs) / 1000;
  for (let d = 0; d <= 4 * GiB; d += 33 * MiB) {
    const past = (fast * nextPollDelayMs(d, fast)) / 1000 - d;
    assert.ok(past <= Math.max(margin, floor) + 1, `distance ${d}: ${past} past the line`);
  }
});

test('the delay is always within [min, max], even for nonsense distances', () => {
  for (const d of [-5 * GiB, -1, 0, Number.MAX_SAFE_INTEGER]) {
    const ms = nextPollDelayMs(d, -3 * GiB);
    assert.ok(ms >= DEFAULT_POLL_BOUND.minIntervalMs && ms <= DEFAULT_POLL_BOUND.maxIntervalMs, `${d}: ${ms}`);
  }
});
