/**
 * PID pressure ranking (helpers.go rankPIDPressure: orderedBy(priority, process(stats))).
 * Priority comes first; a pod without stats goes first only among pods of its priority (the
 * "no stats" preference lives inside the process comparator). Ties keep the listed order
 * (the kubelet's sort.Sort is not stable: evictd fixes the rule).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rankPids } from '../../../src/policy/ranking';
import type { ActivePod } from '../../../src/policy/types';
import { run } from './helpers';

const pod = (name: string, priority: number, processes?: number): ActivePod => ({
  spec: { namespace: 'default', name, uid: name, priority, annotations: {}, containers: [], volumes: [] },
  ...(processes === undefined ? {} : { usage: { containers: [], volumes: [], processes } }),
});
const order = (pods: ActivePod[]) => rankPids(pods).map((r) => r.pod.spec.name);

test('rankPIDPressure: priority, then more processes, stats missing first within a priority', () => {
  const cases: { name: string; pods: ActivePod[]; expected: string[] }[] = [
    { name: 'lower priority first, whatever its count', pods: [pod('hi', 10, 500), pod('lo', 0, 1)], expected: ['lo', 'hi'] },
    { name: 'same priority: more processes first', pods: [pod('few', 0, 5), pod('many', 0, 50)], expected: ['many', 'few'] },
    { name: 'no stats: first within its priority', pods: [pod('counted', 0, 50), pod('unknown', 0)], expected: ['unknown', 'counted'] },
    { name: 'no stats does not beat a lower priority', pods: [pod('unknown-hi', 10), pod('lo', 0, 1)], expected: ['lo', 'unknown-hi'] },
    { name: 'negative priorities rank below 0', pods: [pod('zero', 0, 100), pod('neg', -5, 1)], expected: ['neg', 'zero'] },
    { name: 'ties keep the listed order', pods: [pod('a', 0, 7), pod('b', 0, 7), pod('c', 0, 7)], expected: ['a', 'b', 'c'] },
  ];
  for (const c of cases) assert.deepEqual(order(c.pods), c.expected, c.name);
});

test('PID pressure in a scenario evicts by priority, then processes, with no node-level reclaim', () => {
  const [s] = run({
    config: { evictionHard: { 'pid.available': '100' } },
    steps: [
      {
        at: '0s',
        node: { pid: { maxPID: 1000, running: 950 } },
        pods: [
          { name: 'forker', priority: 100, processes: 800, containers: [{ name: 'c' }] },
          { name: 'quiet', priority: 0, processes: 3, containers: [{ name: 'c' }] },
        ],
      },
    ],
  });
  assert.deepEqual(s!.nodeReclaim, []);
  assert.deepEqual(
    s!.evicted.map((e) => [e.pod, e.signal, e.annotations.starved_resource]),
    [['default/quiet', 'pid.available', 'pids']],
  );
  assert.equal(s!.evicted[0]!.message, 'The node was low on resource: pids. Threshold quantity: 100, available: 50. ');
});
