/**
 * A pod whose stats were not found (pkg/kubelet/eviction/helpers.go, statsFunc's !found; the same
 * in v1.34 and v1.35): a scenario pod none of whose containers, init ones included, carries
 * `usage`, with no `processes` (and, evictd's reading, no volume usage: the summary reports a
 * pod's volumes with its containers).
 * - exceedMemoryRequests, memory, exceedDiskRequests, disk and process all return
 *   cmpBool(!p1Found, !p2Found): memory and disk rank such a pod first; PIDs (priority first)
 *   rank it first within its priority; two such pods tie on every stats comparator, so only
 *   priority (then the listed order) tells them apart, whatever their requests.
 * - evictionMessage returns right after the threshold line: no container named, and the
 *   annotations map stays empty (no offending_containers, no starved_resource).
 * - localStorageEviction skips it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evictionMessage } from '../../../src/policy/messages';
import { Quantity } from '../../../src/policy/quantity';
import { rankDisk, rankMemory, rankPids } from '../../../src/policy/ranking';
import type { ActivePod } from '../../../src/policy/types';
import { readScenario } from '../../../src/sim/scenario';
import { mem, memPod, names, run } from './helpers';

const silent = (name: string, priority = 0, request = '1Gi') => ({
  name,
  priority,
  containers: [{ name: 'c', requests: { memory: request, 'ephemeral-storage': request } }],
});
const statsOf = (pod: Record<string, unknown>) =>
  readScenario({ steps: [{ pods: [{ name: 'p', containers: [{ name: 'c' }], ...pod }] }] }).steps[0]!.pods[0]!.usage;

test('the scenario: a pod with no usage anywhere and no processes has no stats', () => {
  assert.equal(statsOf({}), undefined);
  assert.equal(statsOf({ initContainers: [{ name: 'i' }], volumes: [{ name: 'v', emptyDir: {} }] }), undefined);
  assert.notEqual(statsOf({ containers: [{ name: 'c', usage: {} }] }), undefined); // reported, with nothing in it
  assert.notEqual(statsOf({ initContainers: [{ name: 'i', usage: { memory: '1Mi' } }] }), undefined);
  assert.notEqual(statsOf({ processes: 0 }), undefined);
  assert.notEqual(statsOf({ volumes: [{ name: 'v', emptyDir: {}, usage: '1Mi' }] }), undefined);
});

test('rankMemoryPressure: without stats first; among them priority, then the listed order (requests play no part)', () => {
  const node = mem('100Mi');
  const [s] = run({ config: { evictionHard: { 'memory.available': '1Gi' } }, steps: [{ node, pods: [memPod('hog', '3Gi', '100Mi'), silent('new')] }] });
  assert.deepEqual(names(s!), ['default/new']);
  assert.equal(s!.evicted[0]!.message, 'The node was low on resource: memory. Threshold quantity: 1Gi, available: 100Mi. ');
  assert.deepEqual(s!.evicted[0]!.annotations, {});

  const pod = (name: string, priority: number, request: string): ActivePod => ({
    spec: {
      namespace: 'default',
      name,
      uid: name,
      priority,
      annotations: {},
      volumes: [],
      containers: [{ name: 'c', requests: { memory: Quantity.parse(request), 'ephemeral-storage': Quantity.parse(request) }, limits: {} }],
    },
  });
  const big = pod('big-request', 0, '2Gi');
  const small = pod('small-request', 0, '1Mi');
  const low = pod('low', -1, '1Gi');
  const measured: ActivePod = {
    ...pod('measured', -5, '1Mi'),
    usage: { containers: [{ name: 'c', memoryBytes: 2 ** 30, rootfsBytes: 2 ** 30 }], volumes: [] },
  };
  const order = (ranked: { pod: ActivePod }[]) => ranked.map((r) => r.pod.spec.name);
  assert.deepEqual(order(rankMemory([big, small, measured, low])), ['low', 'big-request', 'small-request', 'measured']);
  assert.deepEqual(order(rankMemory([small, big])), ['small-request', 'big-request']);
  assert.deepEqual(order(rankDisk([big, small, measured, low], 'nodefs.available', 'single')), ['low', 'big-request', 'small-request', 'measured']);
  assert.deepEqual(order(rankDisk([small, big], 'nodefs.inodesFree', 'single')), ['small-request', 'big-request']);
  // PIDs: priority first; without stats first within a priority only
  assert.deepEqual(order(rankPids([big, small, measured, low])), ['measured', 'low', 'big-request', 'small-request']);
});

test('disk and inodes: without stats first, and the message has only the threshold', () => {
  const config = { evictionHard: { 'nodefs.available': '10Gi', 'nodefs.inodesFree': '10k' } };
  const hog = { name: 'hog', containers: [{ name: 'c', usage: { rootfs: '50Gi', logs: '1Gi', inodes: 90000 } }] };
  for (const [node, resource, threshold] of [
    [
      { nodefs: { availableBytes: '1Gi', capacityBytes: '100Gi', inodesFree: 90000, inodes: 100000 } },
      'ephemeral-storage',
      'Threshold quantity: 10Gi, available: 1Gi. ',
    ],
    [{ nodefs: { availableBytes: '50Gi', capacityBytes: '100Gi', inodesFree: 10, inodes: 100000 } }, 'inodes', 'Threshold quantity: 10k, available: 10. '],
  ] as const) {
    const [s] = run({ config, steps: [{ node, pods: [hog, silent('new')] }] });
    assert.deepEqual(names(s!), ['default/new'], resource);
    assert.equal(s!.evicted[0]!.message, `The node was low on resource: ${resource}. ${threshold}`);
    assert.deepEqual(s!.evicted[0]!.annotations, {}, resource);
  }
});

test('PIDs: without stats first within its priority, and no annotations', () => {
  const [s] = run({
    config: { evictionHard: { 'pid.available': '100' } },
    steps: [
      {
        node: { pid: { maxPID: 1000, running: 950 } },
        pods: [{ name: 'forker', processes: 800, containers: [{ name: 'c' }] }, silent('new'), silent('vip', 10)],
      },
    ],
  });
  assert.deepEqual(names(s!), ['default/new']);
  assert.equal(s!.evicted[0]!.message, 'The node was low on resource: pids. Threshold quantity: 100, available: 50. ');
  assert.deepEqual(s!.evicted[0]!.annotations, {});
});

test('evictionMessage without stats, for every resource: the threshold line, empty annotations', () => {
  const spec = { namespace: 'default', name: 'p', uid: 'p', priority: 0, annotations: {}, volumes: [], containers: [{ name: 'c', requests: {}, limits: {} }] };
  for (const resource of ['memory', 'ephemeral-storage', 'inodes', 'pids']) {
    assert.deepEqual(evictionMessage(resource, spec, undefined, [], {}), { message: `The node was low on resource: ${resource}. `, annotations: {} }, resource);
    // with stats, even empty ones, the three keys are there
    assert.deepEqual(Object.keys(evictionMessage(resource, spec, { containers: [], volumes: [] }, [], {}).annotations), [
      'offending_containers',
      'offending_containers_usage',
      'starved_resource',
    ]);
  }
});

test('localStorageEviction skips a pod without stats, whatever its limits', () => {
  const limited = {
    name: 'limited',
    containers: [{ name: 'c', limits: { 'ephemeral-storage': '1' } }],
    volumes: [{ name: 'v', emptyDir: { sizeLimit: '1' } }],
  };
  const [s] = run({ config: { evictionHard: {} }, steps: [{ pods: [limited] }] });
  assert.deepEqual(s!.evicted, []);
});
