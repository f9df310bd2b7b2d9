/**
 * The standing order rule (src/policy/standing-order.ts) as a table: for a node's memory numbers
 * and its pods, which hard lines get an order, for which pod, or why none. Pure: no agent, no
 * clock. The agent's half (placing, withdrawing, confirming) is test/unit/standing-orders-agent.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Arming } from '../../src/agent/arming';
import { lineKey } from '../../src/agent/memory-lines';
import { decideActions } from '../../src/policy/actions';
import { compileConfig, configFromFlags, type EvictionFlags } from '../../src/policy/config';
import { assess, initialState, planEvictions } from '../../src/policy/evaluate';
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../../src/policy/pods';
import {
  availableAtCrossing,
  confirmedEviction,
  decideOrders,
  isNear,
  nearHardMemoryLine,
  reportedUnder,
  type OrderDecision,
  type OrderPod,
} from '../../src/policy/standing-order';
import { makeObservations } from '../../src/policy/thresholds';
import type { ActivePod, NodeStats } from '../../src/policy/types';
import { FakeNotifications } from '../support/fake-notifications';
import { memoryPod, mi } from '../support/pods';

const CAPACITY = 4096;
/** the node with `availableMi` left of CAPACITY MiB (and, when given, the pods' allocatable) */
const node = (availableMi: number, allocatable?: { availableMi: number; capacityMi: number }): NodeStats => ({
  memory: { availableBytes: mi(availableMi), workingSetBytes: mi(CAPACITY - availableMi) },
  ...(allocatable
    ? { allocatableMemory: { availableBytes: mi(allocatable.availableMi), workingSetBytes: mi(allocatable.capacityMi - allocatable.availableMi) } }
    : {}),
});
const withDir = (p: ActivePod): OrderPod => ({ pod: p, cgroupDir: `/sys/fs/cgroup/kubepods/pod${p.spec.uid}` });

/** one row: what each hard line decided, as `signal[index]=pod` or `signal[index]:why` */
const summary = (ds: OrderDecision[]): string[] =>
  ds.map((d) => (d.order ? `${d.signal}[${d.thresholdIndex}]=${d.order.pod.name}` : `${d.signal}[${d.thresholdIndex}]:${d.why}`));

const PODS: OrderPod[] = [
  withDir(memoryPod('within', 300, 400)),
  withDir(memoryPod('over', 250, 50)),
  withDir(memoryPod('far-over', 600, 100)),
  withDir(memoryPod('critical', 900, 0, { priority: 2_000_000_000 })),
];

interface Row {
  name: string;
  flags: EvictionFlags;
  node: NodeStats;
  pods?: OrderPod[];
  want: string[];
}

const HARD_100 = { evictionHard: 'memory.available<100Mi', enforceNodeAllocatable: 'none' };

const rows: Row[] = [
  {
    name: 'near the line (available < 2 x 100Mi, under the 128 MiB floor of headroom): the first ranked pod',
    flags: HARD_100,
    node: node(200),
    want: ['memory.available[0]=far-over'],
  },
  { name: 'near, at the edge of the zone (100Mi + 127Mi)', flags: HARD_100, node: node(227), want: ['memory.available[0]=far-over'] },
  { name: 'just out of the zone (100Mi + 128Mi: the floor, not 2 x 100Mi)', flags: HARD_100, node: node(228), want: ['memory.available[0]:not-near'] },
  { name: 'far from the line', flags: HARD_100, node: node(2000), want: ['memory.available[0]:not-near'] },
  { name: 'exactly at the line (not met: the kubelet tests line > available)', flags: HARD_100, node: node(100), want: ['memory.available[0]=far-over'] },
  { name: 'past the line: the pass evicts by itself; no order', flags: HARD_100, node: node(99), want: ['memory.available[0]:met'] },
  {
    name: 'a larger line: the zone is its own amount (2 x 500Mi)',
    flags: { evictionHard: 'memory.available<500Mi', enforceNodeAllocatable: 'none' },
    node: node(999),
    want: ['memory.available[0]=far-over'],
  },
  {
    name: 'a larger line, out of its zone',
    flags: { evictionHard: 'memory.available<500Mi', enforceNodeAllocatable: 'none' },
    node: node(1000),
    want: ['memory.available[0]:not-near'],
  },
  {
    name: 'a percentage line: the amount from capacity (5% of 4096Mi = 204.8Mi, near below 409.6Mi)',
    flags: { evictionHard: 'memory.available<5%', enforceNodeAllocatable: 'none' },
    node: node(409),
    want: ['memory.available[0]=far-over'],
  },
  {
    name: 'a soft threshold never gets an order, however near',
    flags: {
      evictionHard: 'nodefs.available<1%',
      evictionSoft: 'memory.available<100Mi',
      evictionSoftGracePeriod: 'memory.available=30s',
      enforceNodeAllocatable: 'none',
    },
    node: node(150),
    want: [],
  },
  {
    name: 'a soft threshold with a zero grace period is hard (isHardEvictionThreshold)',
    flags: {
      evictionHard: 'nodefs.available<1%',
      evictionSoft: 'memory.available<100Mi',
      evictionSoftGracePeriod: 'memory.available=0s',
      enforceNodeAllocatable: 'none',
    },
    node: node(150),
    want: ['memory.available[0]=far-over'],
  },
  {
    name: 'hard and soft on one signal: the index counts both, as the arming numbers its lines',
    flags: {
      evictionHard: 'memory.available<100Mi',
      evictionSoft: 'memory.available<1Gi',
      evictionSoftGracePeriod: 'memory.available=1m',
      enforceNodeAllocatable: 'none',
    },
    node: node(150),
    want: ['memory.available[0]=far-over'],
  },
  {
    name: "allocatable enforced: the pods' line too, each on its own numbers",
    flags: { evictionHard: 'memory.available<100Mi' },
    node: node(150, { availableMi: 1000, capacityMi: 3000 }),
    want: ['memory.available[0]=far-over', 'allocatableMemory.available[0]:not-near'],
  },
  {
    name: 'allocatable near while the node is not',
    flags: { evictionHard: 'memory.available<100Mi' },
    node: node(3000, { availableMi: 150, capacityMi: 3000 }),
    want: ['memory.available[0]:not-near', 'allocatableMemory.available[0]=far-over'],
  },
  {
    name: 'ranking: over its request first, then priority, then usage above request',
    flags: HARD_100,
    node: node(150),
    pods: [withDir(memoryPod('big-within', 2000, 3000)), withDir(memoryPod('low-prio-over', 100, 50, { priority: -10 })), withDir(memoryPod('over', 900, 100))],
    want: ['memory.available[0]=low-prio-over'],
  },
  {
    name: 'critical, static and mirror pods are never named: the next one is',
    flags: HARD_100,
    node: node(150),
    pods: [
      withDir(memoryPod('critical', 3000, 0, { priority: 2_000_000_000 })),
      withDir(memoryPod('static', 2000, 0, { annotations: { [CONFIG_SOURCE_ANNOTATION]: 'file' } })),
      withDir(memoryPod('mirror', 1500, 0, { annotations: { [CONFIG_MIRROR_ANNOTATION]: 'abc' } })),
      withDir(memoryPod('ordinary', 100, 0)),
    ],
    want: ['memory.available[0]=ordinary'],
  },
  {
    name: 'only critical pods: no order',
    flags: HARD_100,
    node: node(150),
    pods: [withDir(memoryPod('critical', 3000, 0, { priority: 2_000_000_000 }))],
    want: ['memory.available[0]:no-eligible-pod'],
  },
  { name: 'no pods: no order', flags: HARD_100, node: node(150), pods: [], want: ['memory.available[0]:no-eligible-pod'] },
  {
    name: "the kubelet's pick has no cgroup dir: no order (the runner-up is not the kubelet's eviction)",
    flags: HARD_100,
    node: node(150),
    pods: [{ pod: memoryPod('no-dir', 900, 0) }, withDir(memoryPod('second', 500, 0))],
    want: ['memory.available[0]:victim-without-cgroup'],
  },
  {
    name: 'a pod without a cgroup dir further down does not matter',
    flags: HARD_100,
    node: node(150),
    pods: [withDir(memoryPod('first', 900, 0)), { pod: memoryPod('no-dir', 500, 0) }],
    want: ['memory.available[0]=first'],
  },
];

for (const row of rows) {
  test(`standing order: ${row.name}`, () => {
    const config = compileConfig(configFromFlags(row.flags));
    const ds = decideOrders(config, makeObservations(row.node), row.pods ?? PODS, 'single', 750);
    assert.deepEqual(summary(ds), row.want);
    for (const d of ds) {
      if (!d.order) continue;
      assert.equal(d.order.ttlMs, 750);
      assert.equal(d.order.podCgroupDir, `/sys/fs/cgroup/kubepods/pod${d.order.pod.uid}`);
      assert.equal(d.order.threshold.gracePeriodNs, 0);
      assert.ok(d.order.reasons.length > 0);
    }
  });
}

test("standing order: the victim is the pass's own first candidate", () => {
  const config = compileConfig(configFromFlags(HARD_100));
  for (const pods of [PODS, [...PODS].reverse(), PODS.slice(1)]) {
    const active = pods.map((p) => p.pod);
    // The same pods, a little past the line: what the pass would evict.
    const a = assess(config, initialState(), { now: 0, node: node(99), layout: 'single' });
    const plan = planEvictions(config, a, active, 'single').plan!;
    const [d] = decideOrders(config, makeObservations(node(150)), pods, 'single');
    assert.equal(d?.order?.pod.uid, plan.candidates[0]!.pod.uid);
  }
});

test("standing order: the victim's two directories, as the pass gives them: its cgroup.kill's and its memory one's (a hybrid host's differ)", () => {
  const config = compileConfig(configFromFlags(HARD_100));
  const pod = memoryPod('far-over', 600, 100);
  const hybrid: OrderPod = { pod, cgroupDir: '/sys/fs/cgroup/unified/kubepods/podX', memoryDir: '/sys/fs/cgroup/memory/kubepods/podX' };
  const [d] = decideOrders(config, makeObservations(node(150)), [hybrid], 'single');
  assert.equal(d?.order?.podCgroupDir, '/sys/fs/cgroup/unified/kubepods/podX');
  assert.equal(d?.order?.podMemoryDir, '/sys/fs/cgroup/memory/kubepods/podX');
  // Without a memory directory the order has none (the mechanism then reads no pod statistics).
  const [bare] = decideOrders(config, makeObservations(node(150)), [withDir(pod)], 'single');
  assert.equal(bare?.order && 'podMemoryDir' in bare.order, false);
});

test("standing order: the index names the arming's line for that threshold", () => {
  const config = compileConfig(
    configFromFlags({ evictionHard: 'memory.available<100Mi', evictionSoft: 'memory.available<1Gi', evictionSoftGracePeriod: 'memory.available=1m' }),
  );
  const port = new FakeNotifications();
  const arming = new Arming({
    port,
    policy: config,
    logger: pino({ level: 'silent' }),
    wake: () => {},
    nodeMemoryDir: '/n',
    podRootMemoryDir: '/n/kubepods',
    podRootUnifiedDir: null,
    memoryVersion: 2,
    nodeIsRoot: false,
  });
  const reading = (capacity: number, available: number) => ({
    capacityBytes: capacity,
    usageBytes: capacity - available,
    inactiveFileBytes: 0,
    workingSetBytes: capacity - available,
    availableBytes: available,
    limited: true,
  });
  arming.update(reading(mi(4096), mi(150)), reading(mi(3000), mi(150)));
  const ds = decideOrders(config, makeObservations(node(150, { availableMi: 150, capacityMi: 3000 })), PODS, 'single');
  const armed = arming.armed();
  for (const d of ds) {
    const key = lineKey(d.signal, d.thresholdIndex);
    const capacity = d.signal === 'memory.available' ? mi(4096) : mi(3000);
    // the hard line (100Mi) is the one one byte past capacity - 100Mi; the soft one (1Gi) sits elsewhere
    assert.equal(armed[key], capacity - mi(100) + 1, `${key} in ${JSON.stringify(armed)}`);
    assert.ok(d.order, key);
  }
  assert.equal(ds.length, 2);
});

test("standing order: near, in the drift tick's terms", () => {
  const config = compileConfig(configFromFlags(HARD_100));
  assert.equal(nearHardMemoryLine(config, node(200)), true);
  assert.equal(nearHardMemoryLine(config, node(300)), false);
  assert.equal(nearHardMemoryLine(config, node(50)), false, 'past the line is not near');
  const soft = compileConfig(
    configFromFlags({ evictionSoft: 'memory.available<100Mi', evictionSoftGracePeriod: 'memory.available=1m', evictionHard: 'nodefs.available<1%' }),
  );
  assert.equal(nearHardMemoryLine(soft, node(150)), false, 'soft lines are never near');
  assert.equal(isNear(mi(100), mi(100)), true);
  assert.equal(isNear(mi(100) - 1, mi(100)), false);
});

test('standing order: the eviction a used order stands for: the hard grace, the signal at the crossing, the pod as ranked', () => {
  const config = compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi', evictionMaxPodGracePeriod: '30', enforceNodeAllocatable: 'none' }));
  const [d] = decideOrders(config, makeObservations(node(150)), PODS, 'single');
  const order = d!.order!;
  // The line sits one byte past capacity - amount (the first value where the signal is met);
  // crossed 3 MiB past capacity - amount (usage or working set: the same arithmetic).
  const available = availableAtCrossing(order, { valueBytes: mi(4000) + mi(3), lineBytes: mi(4000) + 1 });
  assert.equal(available, mi(97));
  // Crossed exactly at the line: the kubelet's signal is met there, available below the amount,
  // also where the tripwire rounded the line up to the next page.
  assert.equal(availableAtCrossing(order, { valueBytes: mi(4000) + 1, lineBytes: mi(4000) + 1 }), mi(100) - 1);
  assert.ok(availableAtCrossing(order, { valueBytes: mi(4000) + 4096, lineBytes: mi(4000) + 4096 }) < mi(100));
  const { eviction, threshold } = confirmedEviction(config, { order, availableBytes: available, crossedNs: 1n, killedNs: 2n });
  assert.equal(eviction.gracePeriodSeconds, 0, 'hard: no grace, whatever the max pod grace period');
  assert.equal(eviction.signal, 'memory.available');
  assert.deepEqual(eviction.pod, { namespace: 'ns', name: 'far-over', uid: 'uid-far-over' });
  assert.equal(
    eviction.message,
    'The node was low on resource: memory. Threshold quantity: 100Mi, available: 97Mi. Container c was using 600Mi, request is 100Mi, has larger consumption of memory. ',
  );
  assert.deepEqual(eviction.annotations, { offending_containers: 'c', offending_containers_usage: '600Mi', starved_resource: 'memory' });
  assert.deepEqual(threshold, {
    signal: 'memory.available',
    kind: 'hard',
    quantity: '100Mi',
    gracePeriodMet: true,
    observed: { available: mi(97), capacity: mi(4096) },
  });
  // Far past the line (a huge charge): never below zero.
  assert.equal(availableAtCrossing(order, { valueBytes: mi(5000), lineBytes: mi(4000) }), 0);
});

test('standing order: a used order is confirmed first in the pass, before anything else it decided', () => {
  const config = compileConfig(configFromFlags(HARD_100));
  const [d] = decideOrders(config, makeObservations(node(150)), PODS, 'single');
  const a = assess(config, initialState(), { now: 0, node: node(50), layout: 'single' });
  const ev = planEvictions(
    config,
    a,
    PODS.map((p) => p.pod),
    'single',
  );
  const actions = decideActions(config, a, ev, undefined, [{ order: d!.order!, availableBytes: mi(90), crossedNs: 5n, killedNs: 6n }]);
  assert.deepEqual(
    actions.map((x) => x.type),
    ['confirm-order', 'evict-one'],
  );
  assert.equal(actions[0]!.type === 'confirm-order' && actions[0].eviction.pod.name, 'far-over');
});

test('standing order: both lines used on one pod (one charge crosses the node and the pod root): reported under memory.available, whichever use came first', () => {
  const config = compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi' }));
  const ds = decideOrders(config, makeObservations(node(150, { availableMi: 150, capacityMi: 3000 })), PODS, 'single');
  const byNode = ds.find((d) => d.signal === 'memory.available')!.order!;
  const byRoot = ds.find((d) => d.signal === 'allocatableMemory.available')!.order!;
  assert.equal(byNode.pod.name, byRoot.pod.name, 'the same pod on both lines');
  assert.equal(reportedUnder(byRoot, byNode), byNode);
  assert.equal(reportedUnder(byNode, byRoot), byNode);
  assert.equal(reportedUnder(byNode, byNode), byNode);
});

test("standing order: with near lines, each hard line's near-zone edge is armed, and the node entering the zone wakes a pass at once", () => {
  const config = compileConfig(
    configFromFlags({
      evictionHard: 'memory.available<100Mi',
      evictionSoft: 'memory.available<1Gi',
      evictionSoftGracePeriod: 'memory.available=1m',
      enforceNodeAllocatable: 'none',
    }),
  );
  const port = new FakeNotifications();
  const wakes: string[] = [];
  const arming = new Arming({
    port,
    policy: config,
    logger: pino({ level: 'silent' }),
    wake: (w) => wakes.push(w.source),
    nodeMemoryDir: '/n',
    podRootMemoryDir: '/n/kubepods',
    podRootUnifiedDir: null,
    memoryVersion: 2,
    nodeIsRoot: false,
    nearLines: true,
  });
  const reading = (capacity: number, available: number) => ({
    capacityBytes: capacity,
    usageBytes: capacity - available,
    inactiveFileBytes: 0,
    workingSetBytes: capacity - available,
    availableBytes: available,
    limited: true,
  });
  arming.update(reading(mi(4096), mi(1500)), null);
  // The hard line (100Mi: one byte past, where available is below it) and its zone's edge (100Mi
  // + the 128 MiB floor, where near begins); the soft line has none.
  assert.deepEqual(arming.armed(), { 'node:line0': mi(4096 - 100) + 1, 'node:line1': mi(4096 - 1024) + 1, 'node:near0': mi(4096 - 228) });
  port.setUsage('/n', mi(4096 - 1000));
  port.setUsage('/n', mi(4096 - 200));
  return new Promise<void>((resolve) =>
    setImmediate(() => {
      // The soft line's crossing, then the near edge's: a pass places the order before the hard line.
      assert.deepEqual(wakes, ['memcg-threshold', 'near-line']);
      resolve();
    }),
  );
});
