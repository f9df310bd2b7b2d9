/** The plan the agent acts on: ranked candidates, critical pods left out, readable in logs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig } from '../../src/policy/config';
import { evaluate, initialState, resolvedByReclaim } from '../../src/policy/evaluate';
import { memoryPod as pod, mi } from '../support/pods';

test('the plan ranks every evictable pod and serializes whole for the logs', () => {
  const config = compileConfig({ evictionHard: { 'memory.available': '1Gi' } });
  const ev = evaluate(config, initialState(), {
    now: 0,
    layout: 'single',
    node: { memory: { availableBytes: mi(512), workingSetBytes: mi(4096) } },
    pods: [pod('within', 100, 200), pod('critical', 900, 1, { priority: 2000000000 }), pod('over', 300, 100), pod('far-over', 900, 100)],
  });
  assert.ok(ev.plan);
  assert.equal(ev.plan.hard, true);
  assert.equal(ev.plan.resource, 'memory');
  assert.deepEqual(
    ev.plan.candidates.map((c) => c.pod.name),
    ['far-over', 'over', 'within'],
  );
  const first = JSON.parse(JSON.stringify(ev.plan.candidates[0]));
  assert.deepEqual(first.pod, { namespace: 'ns', name: 'far-over', uid: 'uid-far-over' });
  assert.equal(first.signal, 'memory.available');
  assert.equal(first.gracePeriodSeconds, 0);
  assert.match(
    first.message,
    /^The node was low on resource: memory\. Threshold quantity: 1Gi, available: 512Mi\. Container c was using 900Mi, request is 100Mi/,
  );
  assert.deepEqual(first.reasons, ['memory usage 900Mi exceeds request 100Mi', 'priority 0', 'usage above request 800Mi']);
  assert.deepEqual(ev.plan.candidates[2].reasons[0], 'memory usage 100Mi within request 200Mi');
  // no node-level reclaim exists for memory
  assert.deepEqual(ev.reclaim, { signal: 'memory.available', resource: 'memory', functions: [] });
});

test('resolvedByReclaim enforces the minimum reclaim on fresh numbers', () => {
  const config = compileConfig({ evictionHard: { 'nodefs.available': '1Gi' }, evictionMinimumReclaim: { 'nodefs.available': '1Gi' } });
  const fs = (availableGi: number) => ({ nodefs: { availableBytes: availableGi * 2 ** 30, capacityBytes: 100 * 2 ** 30 } });
  assert.equal(resolvedByReclaim(config, 'single', fs(0.5)), false);
  assert.equal(resolvedByReclaim(config, 'single', fs(1.5)), false);
  assert.equal(resolvedByReclaim(config, 'single', fs(2.5)), true);
});
