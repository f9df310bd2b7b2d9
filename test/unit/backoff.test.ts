import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffMs, doublingMs } from '../../src/policy/backoff';

test('doublingMs: the first delay, doubling per attempt, held at the cap', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((a) => doublingMs(a, 250, 1000)),
    [250, 500, 1000, 1000, 1000],
  );
  // attempt 0 is read as the first: a caller counting from 0 gets no shorter delay
  assert.equal(doublingMs(0, 250, 1000), 250);
  // a long run of failures stays at the cap, never Infinity or NaN
  assert.equal(doublingMs(10_000, 1000, 30_000), 30_000);
});

test('backoffMs: within 20% of doublingMs either side, the draw deciding where', () => {
  assert.equal(
    backoffMs(3, 500, 30_000, () => 0),
    1600,
  );
  assert.equal(
    backoffMs(3, 500, 30_000, () => 0.5),
    2000,
  );
  assert.equal(
    backoffMs(3, 500, 30_000, () => 1),
    2400,
  );
  assert.equal(
    backoffMs(50, 500, 30_000, () => 1),
    36_000,
  );
});
