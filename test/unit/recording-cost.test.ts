/**
 * `evictd bench policy`'s --record rows: the recorder really writes (bytes per pass, each pod
 * in it), and the two kinds of pass are timed on the same node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordingCost } from '../../src/lab/bench/recording-cost';
import { syntheticPods } from '../../src/lab/bench/policy';

test('the pass with and without the recorder: both timed, the recorder writes each pod of every pass', async () => {
  const node = { memory: { availableBytes: 512 * 2 ** 20, workingSetBytes: 60 * 2 ** 30 } };
  const r = await recordingCost({ evictionHard: { 'memory.available': '1Gi' } }, node, syntheticPods(50), 5);
  assert.equal(r.passes, 5);
  assert.ok(r.without.p50 > 0 && r.with.p50 > 0);
  assert.ok(r.with.p99 >= r.with.p50 && r.without.p99 >= r.without.p50);
  // 50 pods of one to three containers each: well over 100 bytes a pod on every line
  assert.ok(r.bytesPerPass > 50 * 100, `${r.bytesPerPass} bytes per pass`);
  assert.ok(r.line > 0 && r.stringify > 0);
});
