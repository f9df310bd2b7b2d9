/**
 * What a recording's line keeps of a live pass, read back as the replay reads it: the agent's
 * stats as it had them (a container's memory and disk read apart, a container the spec does not
 * name), and the layout each pass observed. Both were found by replaying the agent suites' runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig } from '../../src/policy/config';
import { Quantity } from '../../src/policy/quantity';
import type { ActivePod, FilesystemLayout } from '../../src/policy/types';
import { recordedPod } from '../../src/sim/recorded-pod';
import { passLine, recordingHeader } from '../../src/sim/recording';
import { readRecording } from '../../src/sim/recording-reader';
import { evictionsIn } from '../../src/sim/replay';
import { readScenario } from '../../src/sim/scenario';

const MiB = 1024 * 1024;
const spec = (containers: string[]): ActivePod['spec'] => ({
  namespace: 'ns',
  name: 'p',
  uid: 'u1',
  priority: 0,
  annotations: {},
  containers: containers.map((name) => ({ name, requests: {}, limits: { 'ephemeral-storage': Quantity.parse('8Mi') } })),
  volumes: [],
});

/** The pod's stats as a scenario step reads them back (fields without a number left out). */
const readBack = (p: ActivePod): unknown =>
  JSON.parse(JSON.stringify(readScenario({ steps: [{ node: {}, pods: [recordedPod(p)] }] }).steps[0]!.pods[0]!.usage));

test("a pod whose memory and disk stats are separate entries of one container keeps both, in the agent's order", () => {
  // As the pass has them: the pod cgroup's memory on the first container, then the runtime's disk stats per container.
  const pod: ActivePod = {
    spec: spec(['app']),
    usage: {
      containers: [
        { name: 'app', memoryBytes: 5 * MiB },
        { name: 'app', rootfsBytes: 1 * MiB, logsBytes: 9 * MiB, rootfsInodes: 3, logsInodes: 1 },
      ],
      volumes: [],
    },
  };
  assert.deepEqual(readBack(pod), pod.usage);
});

test('a pod known from its sandbox alone (its spec names one synthetic container) keeps the stats of the containers it runs', () => {
  const pod: ActivePod = {
    spec: spec(['pod']),
    usage: {
      containers: [
        { name: 'pod', memoryBytes: 5 * MiB },
        { name: 'log', rootfsBytes: 0, logsBytes: 20 * MiB },
      ],
      volumes: [],
    },
  };
  assert.deepEqual(readBack(pod), pod.usage);
});

test('stats one to one on the containers stay on the containers, as a hand-written scenario has them', () => {
  const pod: ActivePod = {
    spec: spec(['a', 'b']),
    usage: {
      containers: [
        { name: 'a', memoryBytes: 1 },
        { name: 'b', memoryBytes: 2 },
      ],
      volumes: [],
    },
  };
  const line = recordedPod(pod);
  assert.equal(line.containerUsage, undefined);
  assert.deepEqual(readBack(pod), pod.usage);
});

test('a scenario pod gives containerUsage or its containers usage, not both', () => {
  assert.throws(
    () => readScenario({ steps: [{ pods: [{ name: 'p', containers: [{ name: 'a', usage: { memory: 1 } }], containerUsage: [{ name: 'a', memory: 1 }] }] }] }),
    /containerUsage.*one or the other/,
  );
});

test("a pass whose layout is not the header's says its own, and its threshold indices count in it", () => {
  const config = { evictionHard: { 'nodefs.available': '10%', 'imagefs.available': '15%' } };
  const policy = compileConfig(config);
  const line = (layout: FilesystemLayout) =>
    passLine({
      atNs: 1e6 * (layout === 'single' ? 1 : 2),
      startNs: 0,
      wake: { housekeeping: 1 },
      node: {},
      layout,
      headerLayout: 'single',
      pods: [],
      otherUids: [],
      noCgroup: [],
      crossed: [],
      confirmations: [],
      brakes: null,
      policy,
      met: [],
      conditions: [],
      actions: [],
      orders: [],
      decideMs: 1,
    });
  assert.equal(line('single').filesystems, undefined);
  assert.equal(line('split').filesystems, 'split');
  const text =
    [
      recordingHeader(config, 'single', { startedAt: new Date(0), standingOrders: false, pressureTransitionNs: policy.pressureTransitionPeriodNs }),
      line('single'),
      line('split'),
    ]
      .map((x) => JSON.stringify(x))
      .join('\n') + '\n';
  assert.deepEqual(
    readRecording(text).passes.map((p) => p.layout),
    ['single', 'split'],
  );
});

test('a pass that confirms a new kill ends there; one that confirms an eviction already reported goes on to its other actions', () => {
  const actions = ['confirm ns/hog memory.available', 'evict ns/other memory.available grace 0s'];
  assert.deepEqual(
    evictionsIn(actions, 1, '1s', true).map((e) => `${e.pod} ${e.how}`),
    ['ns/hog confirm'],
  );
  assert.deepEqual(
    evictionsIn(actions, 1, '1s', false).map((e) => `${e.pod} ${e.how}`),
    ['ns/hog confirm', 'ns/other evict'],
  );
});
