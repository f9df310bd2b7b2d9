import { test } from 'node:test';
import assert from 'node:assert/strict';
import { killPodBoundMs } from '../../src/policy/kill-bound';

test("killPodBoundMs: the kubelet's killPodNow bound, whole seconds as its integer arithmetic has them", () => {
  assert.equal(killPodBoundMs(0), 10_000, 'at least 10 s');
  assert.equal(killPodBoundMs(6), 10_000);
  assert.equal(killPodBoundMs(7), 10_000, '7 + 7/2 = 10 in integers, not 10.5');
  assert.equal(killPodBoundMs(8), 12_000);
  assert.equal(killPodBoundMs(30), 45_000);
  assert.equal(killPodBoundMs(31), 46_000);
});
