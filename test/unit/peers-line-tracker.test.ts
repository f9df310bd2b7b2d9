import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineTracker, MIN_TRIAL_READINGS, MOVE_MIB } from '../../src/lab/bench/peers/line-tracker';

test("LineTracker: the calibration ramps give the line until the cell's own trials are enough, then the trials alone", () => {
  const t = new LineTracker([150, 152, 154]);
  assert.equal(t.wanted(), 152, 'the calibration median');
  t.add(null);
  t.add(Number.NaN);
  assert.equal(t.readings().length, 3, 'a trial that never crossed the common line reads nothing');
  t.add(170);
  t.add(171);
  assert.deepEqual(t.readings(), [150, 152, 154, 170, 171], 'calibration and trials together while the trials are few');
  assert.equal(t.wanted(), 154);
  for (let i = 2; i < MIN_TRIAL_READINGS; i++) t.add(166.2);
  assert.equal(t.readings().length, MIN_TRIAL_READINGS, 'the calibration no longer counts');
  assert.equal(t.wanted(), 167, 'the median rounded up');
});

test('LineTracker.moveFrom: a running line is moved only when the wanted one is far enough', () => {
  const t = new LineTracker([160, 161, 162]);
  assert.equal(t.moveFrom(161), null);
  assert.equal(t.moveFrom(161 - MOVE_MIB + 1), null, 'less than MOVE_MIB: kept');
  assert.equal(t.moveFrom(161 - MOVE_MIB), 161, 'MOVE_MIB below: moved up');
  assert.equal(t.moveFrom(161 + MOVE_MIB), 161, 'MOVE_MIB above: moved down');
  assert.equal(new LineTracker([]).moveFrom(100), null, 'no reading, no move');
});
