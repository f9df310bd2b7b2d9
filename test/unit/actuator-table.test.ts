/**
 * The actuator's failure paths as a table (as the kubelet's eviction_manager_test.go tests its
 * manager): each row is a node (pods, how their stops go), the actions the policy decided for
 * it, and what must follow: which pods were stopped or killed and with which grace period, which
 * records came out, and whether the pass asks to look again. Runs on the fake node
 * (test/support/fake-node.ts): no root, no runtime. The real parts: test/agent/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Actuator } from '../../src/agent/actuator';
import { joinPods } from '../../src/agent/active-pods';
import { CriStop } from '../../src/agent/effects/cri-stop';
import type { EvictionDeps, EvictionRecord, PassStamps } from '../../src/agent/effects/eviction';
import { FastKill } from '../../src/agent/effects/fast-kill';
import { NodeReclaim } from '../../src/agent/effects/node-reclaim';
import { ConfirmOrder } from '../../src/agent/effects/order-confirm';
import { AgentMetrics } from '../../src/agent/metrics';
import type { Action } from '../../src/policy/actions';
import { compileConfig } from '../../src/policy/config';
import type { Eviction, ThresholdStatus } from '../../src/policy/evaluate';
import type { OrderConfirmation } from '../../src/policy/standing-order';
import { FakeNode, MiB, type FakePodInit } from '../support/fake-node';

const policy = compileConfig({ evictionHard: { 'memory.available': '100Mi' } });

const eviction = (name: string, gracePeriodSeconds = 0, signal = 'memory.available'): Eviction => ({
  pod: { namespace: 'ns', name, uid: `uid-${name}` },
  signal,
  gracePeriodSeconds,
  message: `The node was low on resource: memory. (${name})`,
  annotations: {},
  reasons: [`${name} ranked`],
});
const threshold: ThresholdStatus = {
  signal: 'memory.available',
  kind: 'hard',
  quantity: '100Mi',
  gracePeriodMet: true,
  observed: { available: 50 * MiB, capacity: 1024 * MiB },
};
/** a standing order the kernel side used on `name` (the effect reads only the stamps; the rule's own data is standing-order-policy.test.ts's) */
const confirmOrder = (name: string): Action => ({
  type: 'confirm-order',
  eviction: eviction(name),
  threshold,
  confirmation: { crossedNs: 1_000n, killedNs: 1_040n } as OrderConfirmation,
});
const evictOne = (names: string[], hard = true, grace = 0): Action => ({
  type: 'evict-one',
  signal: 'memory.available',
  hard,
  threshold,
  candidates: names.map((n) => eviction(n, grace)),
});

interface Row {
  name: string;
  pods: FakePodInit[];
  actions: Action[];
  dryRun?: boolean;
  fastKill?: boolean;
  /** node-level reclaim frees this much */
  reclaimFreesMi?: number;
  /** a pod that ends on its own after the pass observed it, before the actions run */
  endsFirst?: string;
  /** [pod, grace] of every StopPodSandbox */
  stops: [string, number][];
  kills?: string[];
  /** [pod, ok, action, note?] of every record */
  records: [string, boolean, EvictionRecord['action'], string?][];
  again: boolean;
  logged?: string[];
}

const rows: Row[] = [
  {
    name: 'the first candidate stops: it alone is evicted, and the pass looks again',
    pods: [
      { name: 'a', workingSetMi: 300 },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [evictOne(['a', 'b'], false, 30)],
    stops: [['a', 30]],
    records: [['a', true, 'stop']],
    again: true,
    logged: ['evicted pod'],
  },
  {
    name: 'a failed stop falls through to the next candidate',
    pods: [
      { name: 'a', workingSetMi: 300, stop: 'fail' },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [evictOne(['a', 'b'], false, 30)],
    stops: [
      ['a', 30],
      ['b', 30],
    ],
    records: [
      ['a', false, 'stop'],
      ['b', true, 'stop'],
    ],
    again: true,
    logged: ['eviction failed; trying the next candidate', 'evicted pod'],
  },
  {
    name: 'a stop reported failed after the memory came back: no next candidate, re-evaluate',
    pods: [
      { name: 'a', workingSetMi: 300, stop: 'fail-freed' },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [evictOne(['a', 'b'], false, 30)],
    stops: [['a', 30]],
    records: [['a', true, 'stop', 'the runtime reported the stop as failed, but the pod released its memory; re-evaluating before any other eviction']],
    again: true,
  },
  {
    name: 'every candidate fails: each tried once, an error, no look again',
    pods: [
      { name: 'a', workingSetMi: 300, stop: 'fail' },
      { name: 'b', workingSetMi: 200, stop: 'fail' },
    ],
    actions: [evictOne(['a', 'b'], false, 30)],
    stops: [
      ['a', 30],
      ['b', 30],
    ],
    records: [
      ['a', false, 'stop'],
      ['b', false, 'stop'],
    ],
    again: false,
    logged: ['no candidate could be evicted this pass'],
  },
  {
    name: 'a hard memory threshold with fast kill: cgroup.kill, the stop in the background with grace 0',
    pods: [
      { name: 'a', workingSetMi: 300 },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [evictOne(['a', 'b'])],
    fastKill: true,
    stops: [['a', 0]],
    kills: ['a'],
    records: [['a', true, 'fast-kill']],
    again: true,
  },
  {
    name: 'dry run: nothing stopped, killed or reclaimed; "would" lines; no look again',
    pods: [{ name: 'a', workingSetMi: 300 }],
    actions: [{ type: 'reclaim', signal: 'memory.available', functions: ['deleteUnusedContainers'] }, evictOne(['a'])],
    dryRun: true,
    fastKill: true,
    stops: [],
    kills: [],
    records: [['a', true, 'none']],
    again: false,
    logged: ['would reclaim node-level resources', 'would evict pod (dry run)'],
  },
  {
    name: 'node-level reclaim that resolves the pressure: no eviction, look again',
    pods: [{ name: 'a', workingSetMi: 300 }],
    actions: [{ type: 'reclaim', signal: 'memory.available', functions: ['deleteUnusedContainers', 'deleteUnusedImages'] }, evictOne(['a'])],
    reclaimFreesMi: 600,
    stops: [],
    records: [],
    again: true,
    logged: ['node-level reclaim resolved the pressure; no eviction'],
  },
  {
    name: 'node-level reclaim that frees too little: the eviction follows',
    pods: [{ name: 'a', workingSetMi: 300 }],
    actions: [{ type: 'reclaim', signal: 'memory.available', functions: ['deleteUnusedContainers'] }, evictOne(['a'], false, 5)],
    reclaimFreesMi: 1,
    stops: [['a', 5]],
    records: [['a', true, 'stop']],
    again: true,
  },
  {
    name: 'local-storage limits: every pod over its limit is evicted with grace 0',
    pods: [
      { name: 'a', workingSetMi: 10 },
      { name: 'b', workingSetMi: 10 },
      { name: 'c', workingSetMi: 10 },
    ],
    actions: [{ type: 'evict-all', evictions: [eviction('a', 0, 'emptydirfs.limit'), eviction('c', 0, 'ephemeralpodfs.limit')] }],
    stops: [
      ['a', 0],
      ['c', 0],
    ],
    records: [
      ['a', true, 'stop'],
      ['c', true, 'stop'],
    ],
    again: true,
  },
  {
    name: 'a braked pod past the bound: stopped with grace 0, and the pass ends before the plan',
    pods: [
      { name: 'held', workingSetMi: 300 },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [{ type: 'stop-braked', evictions: [eviction('held')] }, evictOne(['b'], false, 30)],
    stops: [['held', 0]],
    records: [['held', true, 'stop']],
    again: true,
    logged: ['memory brake: pod braked too long; stopping it'],
  },
  {
    name: 'a candidate that ended on its own (cgroup gone): counted done, nobody else evicted',
    pods: [
      { name: 'gone', workingSetMi: 300 },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [evictOne(['gone', 'b'], false, 30)],
    endsFirst: 'gone',
    stops: [],
    records: [['gone', true, 'none', 'pod cgroup vanished before the eviction; re-evaluating']],
    again: true,
  },
  {
    name: 'a used standing order: StopPodSandbox with grace 0 and the report, no kill of our own; the pass ends there',
    pods: [
      { name: 'a', workingSetMi: 300 },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [confirmOrder('a'), evictOne(['b'])],
    fastKill: true,
    stops: [['a', 0]],
    kills: [],
    records: [['a', true, 'standing-order']],
    again: true,
    logged: ['evicted pod'],
  },
  {
    name: "a used standing order whose pod's cgroup is already gone: still stopped and reported (the kill was ours)",
    pods: [{ name: 'a', workingSetMi: 300 }],
    actions: [confirmOrder('a')],
    endsFirst: 'a',
    stops: [['a', 0]],
    records: [['a', true, 'standing-order']],
    again: true,
  },
  {
    name: 'a used standing order whose stop fails: a failed record, and the pass goes on with what it decided',
    pods: [
      { name: 'a', workingSetMi: 300, stop: 'fail' },
      { name: 'b', workingSetMi: 200 },
    ],
    actions: [confirmOrder('a'), evictOne(['b'], false, 30)],
    stops: [
      ['a', 0],
      ['b', 30],
    ],
    records: [
      ['a', false, 'standing-order'],
      ['b', true, 'stop'],
    ],
    again: true,
    logged: ['StopPodSandbox after a standing order failed; the pod is already killed, the stop is tried again'],
  },
  {
    name: 'a threshold with only critical pods (no candidates): a warning, nothing else',
    pods: [{ name: 'a', workingSetMi: 300, priority: 2_000_000_000 }],
    actions: [evictOne([])],
    stops: [],
    records: [],
    again: false,
    logged: ['threshold met but no pod can be evicted (none, or only critical pods)'],
  },
];

for (const row of rows) {
  test(`actuator: ${row.name}`, async () => {
    const node = new FakeNode(1024, row.pods);
    node.otherBytes = 700 * MiB; // with a 300Mi pod, the node is under its 100Mi line until reclaim frees enough
    node.reclaimFreesBytes = (row.reclaimFreesMi ?? 0) * MiB;
    const metrics = new AgentMetrics();
    const records: EvictionRecord[] = [];
    const deps: EvictionDeps = { runtime: node.runtime, cgroups: node.cgroups, clock: node.clock, logger: node.logger, metrics, releaseTimeoutMs: 500 };
    const fastKill = new FastKill(deps, () => undefined);
    const actuator = new Actuator({
      effects: {
        fastKill,
        stop: new CriStop(deps),
        reclaim: new NodeReclaim({ policy, runtime: node.runtime, observe: () => node.observer.observe(), logger: node.logger, metrics }),
        confirm: new ConfirmOrder(deps, () => undefined),
      },
      logger: node.logger,
      metrics,
      dryRun: row.dryRun ?? false,
      fastKill: row.fastKill ?? false,
      record: (r) => records.push(r),
    });
    const obs = node.observer.observe();
    const joined = joinPods(await node.runtime.listPods(), obs.pods, node.specs);
    if (row.endsFirst) node.pod(row.endsFirst).cgroup = false;
    const stamps: PassStamps = {
      trigger: { sources: { test: 1 }, firstEventNs: null, firstNotifiedNs: node.clock.now() },
      observedNs: node.clock.now(),
      decisionNs: node.clock.now(),
    };
    const result = await actuator.execute(row.actions, joined, stamps);
    await actuator.settle();
    assert.deepEqual(node.stops, row.stops, 'StopPodSandbox calls');
    if (row.kills) assert.deepEqual(node.kills, row.kills, 'cgroup.kill writes');
    assert.deepEqual(
      records.map((r) => [r.pod.name, r.ok, r.action, ...(r.note ? [r.note] : [])]),
      row.records.map((r) => r.filter((x) => x !== undefined)),
      'eviction records',
    );
    assert.equal(result?.again ?? false, row.again, 'look again');
    for (const msg of row.logged ?? []) assert.ok(node.logged(msg).length > 0, `logged "${msg}"`);
    if (row.dryRun) {
      assert.deepEqual(node.reclaims, [], 'dry run reclaims nothing');
      assert.deepEqual(node.writes, [], 'dry run writes no cgroup file');
      assert.ok(records.every((r) => r.dryRun));
    }
  });
}

test('actuator: a fast kill whose memory does not come back waits for the runtime, and a failed stop there falls through', async () => {
  const node = new FakeNode(1024, [
    { name: 'stuck', workingSetMi: 300, stop: 'fail' },
    { name: 'b', workingSetMi: 200 },
  ]);
  // The kill signals nothing away: the pod's memory stays (a D-state process, say).
  const cgroups = { ...node.cgroups, kill: () => ({ method: 'cgroup.kill' as const, signalled: 0 }) };
  const metrics = new AgentMetrics();
  const deps: EvictionDeps = { runtime: node.runtime, cgroups, clock: node.clock, logger: node.logger, metrics, releaseTimeoutMs: 50 };
  const records: EvictionRecord[] = [];
  const actuator = new Actuator({
    effects: {
      fastKill: new FastKill(deps, () => undefined),
      stop: new CriStop(deps),
      reclaim: new NodeReclaim({ policy, runtime: node.runtime, observe: () => node.observer.observe(), logger: node.logger, metrics }),
    },
    logger: node.logger,
    metrics,
    dryRun: false,
    fastKill: true,
    record: (r) => records.push(r),
  });
  const obs = node.observer.observe();
  const joined = joinPods(await node.runtime.listPods(), obs.pods, node.specs);
  const t0 = node.clock.now();
  const stamps: PassStamps = { trigger: { sources: { test: 1 }, firstEventNs: null, firstNotifiedNs: t0 }, observedNs: t0, decisionNs: t0 };
  await actuator.execute([evictOne(['stuck', 'b'])], joined, stamps);
  assert.deepEqual(
    records.map((r) => [r.pod.name, r.ok, r.action, r.releasedWithinBound]),
    [
      ['stuck', false, 'fast-kill', false],
      ['b', true, 'fast-kill', true],
    ],
  );
  assert.ok(Number(node.clock.now() - t0) / 1e6 >= 50, 'the release was waited for up to its bound on the clock');
});
