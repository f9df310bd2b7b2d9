/**
 * Standing orders through the real Agent (controller, pass, arming, actuator, effects) on the
 * fake node (test/support/fake-node.ts) and a fake notification port whose lines hold orders and
 * use them at a crossing as the kernel side does (test/support/fake-notifications.ts): where an
 * order is placed, when it is withdrawn, that dry run never places one, and that a used order
 * becomes exactly one CRI stop and one report. The rule itself: standing-order-policy.test.ts.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, type EvictionRecord } from '../../src/agent/agent';
import { AgentMetrics } from '../../src/agent/metrics';
import type { EvictionReporter } from '../../src/agent/ports';
import { compileConfig } from '../../src/policy/config';
import { FakeNode, MiB, type FakePodInit } from '../support/fake-node';
import { FakeNotifications } from '../support/fake-notifications';
import { stepUntil } from '../support/wait';
import { tempDir } from '../support/temp-dir';

// 900 MiB of pods on 1050 MiB: 150 MiB available, 50 MiB above the 100Mi line (near: < 228 MiB).
const PODS: FakePodInit[] = [
  { name: 'steady', workingSetMi: 300, requestMi: 400 },
  { name: 'grower', workingSetMi: 250, requestMi: 50 },
  { name: 'critical', workingSetMi: 350, priority: 2_000_000_000 },
];
const GROWER_DIR = '/fake/ns/poduid-grower';

interface Setup {
  dryRun?: boolean;
  holdsOrders?: boolean;
  standingOrders?: boolean;
  ttlMs?: number;
  capacityMi?: number;
}

/** Every agent started: stopped after the file, so that a failed assertion, which skips a test's own stop, cannot hold the process open. */
const started: Agent[] = [];
after(async () => {
  for (const a of started) await a.stop();
});

function start(s: Setup = {}) {
  const node = new FakeNode(s.capacityMi ?? 1050, PODS);
  const port = new FakeNotifications();
  port.lineMechanism = 'bpf-tripwire';
  port.holdsOrders = s.holdsOrders ?? true;
  port.orderClock = node.clock;
  // The kernel side's kill: the pod's processes die, and the runtime sees its sandbox go not-ready.
  port.onKill = (dir) => {
    node.cgroups.kill(dir.slice('/fake'.length));
    node.pod(dir.slice('/fake/ns/pod'.length).replace(/^uid-/, '')).ready = false;
  };
  const reports: string[] = [];
  const reporter: EvictionReporter = {
    report: (e) => {
      reports.push(`${e.pod.name} ${e.signal} ${e.message}`);
      return Promise.resolve();
    },
  };
  const metrics = new AgentMetrics();
  const agent = new Agent({
    policy: compileConfig({ evictionHard: { 'memory.available': '100Mi' } }),
    layout: node.observer.opts.layout,
    observer: node.observer,
    runtime: node.runtime,
    notifications: port,
    pods: node.specs,
    reporter,
    logger: node.logger,
    metrics,
    dryRun: s.dryRun ?? false,
    fastKill: true,
    housekeepingIntervalMs: 3_600_000,
    releaseTimeoutMs: 100,
    stateDir: tempDir('orders'),
    cgroups: node.cgroups,
    clock: node.clock,
    standingOrders: s.standingOrders === false ? false : { ttlMs: s.ttlMs ?? 60_000 },
  });
  started.push(agent);
  const records: EvictionRecord[] = [];
  agent.on('eviction', (r: EvictionRecord) => records.push(r));
  /** the node's usage, as the line's mechanism reads it */
  const sync = () => port.setUsage('/fake', node.capacityBytes - node.availableBytes());
  sync();
  agent.start();
  const idle = () => agent.controller.idle();
  /** one more pass, as a kernel event would wake it */
  const pass = async () => {
    agent.wake({ source: 'test', monotonicNs: node.clock.now() });
    await idle();
  };
  const orders = () => port.orderCalls.map((c) => (c.order ? c.order.podCgroupDir.replace('/fake/ns/poduid-', '') : null));
  const metric = async (name: string) => (await metrics.registry.getSingleMetricAsString(name)).split('\n').filter((l) => !l.startsWith('#'));
  return { node, port, agent, records, reports, sync, idle, pass, orders, metric };
}

type Started = ReturnType<typeof start>;

/** grower allocates 60 MiB, past the line; waits, on the fake clock, for the report, then stops the agent. */
async function crossThenStop(t: Started): Promise<void> {
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  await stepUntil(t.node.clock, 'the report', () => t.reports.length > 0, 2000);
  await t.idle();
  await t.agent.stop();
}

/** One eviction, grower's, by its order: one kill, one record, one report. */
function assertOneOrderEviction(t: Started): void {
  assert.deepEqual(t.node.kills, ['grower']);
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action]),
    [['grower', true, 'standing-order']],
  );
  assert.equal(t.reports.length, 1);
}

test('standing orders: near a hard line, the pod the kubelet would evict is named on that line', async () => {
  const t = start();
  await t.idle();
  assert.deepEqual(t.orders(), ['grower']);
  // The order carries the kubelet's line in working-set terms (1050Mi - 100Mi, plus one byte),
  // which the mechanism confirms its kill against on numbers read fresh, and its tag in the use
  // log (its line and its pod), and the pod's memory directory (a hybrid host's differs from the
  // kill's; this fake node is v2), whose statistics a kill refused on lagging ones reads.
  assert.deepEqual(t.port.orderCalls[0], {
    dir: '/fake',
    order: {
      podCgroupDir: GROWER_DIR,
      podMemoryDir: GROWER_DIR,
      ttlMs: 60_000,
      tag: 'node:line0/uid-grower',
      workingSetLineBytes: (1050 - 100) * MiB + 1,
    },
  });
  assert.deepEqual(t.agent.standingOrderLines(), ['node:line0']);
  assert.deepEqual(await t.metric('evictd_standing_orders_placed_total'), ['evictd_standing_orders_placed_total{signal="memory.available"} 1']);
  assert.equal(t.node.logged('standing order placed')[0]?.pod, 'ns/grower');
  // A second pass near the line refreshes the same order: placed once, not twice.
  await t.pass();
  assert.deepEqual(t.orders(), ['grower', 'grower']);
  assert.deepEqual(await t.metric('evictd_standing_orders_placed_total'), ['evictd_standing_orders_placed_total{signal="memory.available"} 1']);
  await t.agent.stop();
  assert.equal(t.orders().at(-1), null, 'withdrawn at stop');
  assert.deepEqual(t.agent.standingOrderLines(), []);
});

test('standing orders: far from the line, none; a pass that finds the node moved away withdraws it', async () => {
  const t = start({ capacityMi: 2000 });
  await t.idle();
  assert.deepEqual(t.orders(), []);
  t.node.capacityBytes = 1050 * MiB;
  t.sync();
  await t.pass();
  assert.deepEqual(t.orders(), ['grower']);
  t.node.capacityBytes = 2000 * MiB;
  t.sync();
  await t.pass();
  assert.deepEqual(t.orders(), ['grower', null]);
  assert.ok(t.node.logged('standing order withdrawn').some((l) => l.reason === 'not-near'));
  await t.agent.stop();
});

test('standing orders: refreshed at half their TTL while near; once the node moves away, withdrawn and never refreshed again', async () => {
  const t = start({ ttlMs: 60 });
  await t.idle();
  assert.deepEqual(t.orders(), ['grower']);
  // The refresh timer, at half the TTL on the agent's clock, keeps placing it while the node stays near.
  const step = async (ms: number) => {
    await t.node.clock.step(ms);
    await t.idle();
  };
  await step(29);
  assert.deepEqual(t.orders(), ['grower'], 'not before half the TTL');
  await step(1);
  assert.deepEqual(t.orders(), ['grower', 'grower'], 'refreshed at half the TTL');
  await step(30);
  assert.deepEqual(t.orders(), ['grower', 'grower', 'grower']);
  t.node.pod('steady').workingSetBytes = 0; // 450 MiB available: far from the line
  t.sync();
  await step(30);
  assert.equal(t.orders().at(-1), null, 'the refresh pass finds the node far: withdrawn');
  const calls = t.orders().length;
  const passes = t.agent.controller.stats.passes;
  await step(10_000);
  assert.equal(t.orders().length, calls, 'no order placed again');
  assert.equal(t.agent.controller.stats.passes, passes, 'no refresh pass once no order stands');
  await t.agent.stop();
});

test('standing orders: withdrawn when the pod set changes under them, then placed on the new set', async () => {
  const t = start();
  await t.idle();
  assert.deepEqual(t.orders(), ['grower']);
  // grower's sandbox stops outside evictd; its cgroup lingers, so a kernel-woken pass decides on
  // the last listing (grower still in it) and the background refresh finds it gone.
  t.node.pod('grower').ready = false;
  await t.pass();
  await stepUntil(t.node.clock, 'a pass on the new pod set', () => t.orders().includes('steady'), 2000);
  await t.idle();
  const calls = t.orders();
  assert.deepEqual(calls.slice(calls.indexOf(null)), [null, 'steady'], JSON.stringify(calls));
  assert.ok(t.node.logged('standing orders withdrawn').some((l) => l.reason === 'pod-set'));
  await t.agent.stop();
});

test('standing orders: dry run never places one; it says, once, what it would place', async () => {
  const t = start({ dryRun: true });
  await t.idle();
  await t.pass();
  await t.agent.stop();
  assert.deepEqual(t.port.orderCalls, []);
  const would = t.node.logged('would place standing order (dry run)');
  assert.deepEqual(
    would.map((l) => [l.pod, l.line, l.dryRun]),
    [['ns/grower', 'node:line0', true]],
  );
});

test('standing orders: off (--standing-orders=false): never placed', async () => {
  const t = start({ standingOrders: false });
  await t.idle();
  await t.pass();
  await t.agent.stop();
  assert.deepEqual(
    t.port.orderCalls.filter((c) => c.order),
    [],
  );
});

test('standing orders: a line that cannot hold one: no order, said once, counted', async () => {
  const t = start({ holdsOrders: false });
  await t.idle();
  await t.pass();
  await t.agent.stop();
  assert.deepEqual(t.port.orderCalls, []);
  assert.deepEqual(t.agent.standingOrderLines(), []);
  assert.deepEqual(
    t.node.logged('standing order not placed: the line cannot hold one').map((l) => [l.line, l.why]),
    [['node:line0', 'unsupported']],
  );
  assert.deepEqual(await t.metric('evictd_standing_orders_unavailable_total'), [
    'evictd_standing_orders_unavailable_total{line="node:line0",why="unsupported"} 2',
  ]);
});

test('standing orders: a refused order is no order', async () => {
  const t = start();
  t.port.refuseOrders = true;
  await t.idle();
  await t.agent.stop();
  assert.deepEqual(t.agent.standingOrderLines(), []);
  assert.deepEqual(
    t.node.logged('standing order not placed: the line cannot hold one').map((l) => l.why),
    ['refused'],
  );
});

test('standing orders: a used order becomes exactly one CRI stop and one report, though the next pass sees no pressure', async () => {
  const t = start();
  await t.idle();
  assert.deepEqual(t.orders(), ['grower']);
  // grower allocates 60 MiB: 90 MiB available, past the 100Mi line. The kernel side kills it.
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  assert.deepEqual(t.node.kills, ['grower'], 'killed at the crossing, before any pass');
  await stepUntil(t.node.clock, 'the confirmation', () => t.records.length > 0, 2000);
  await t.idle();
  await t.pass();
  await t.agent.stop();
  assert.deepEqual(t.node.kills, ['grower'], 'no second kill');
  assert.deepEqual(t.node.stops, [['grower', 0]], 'one StopPodSandbox, grace 0');
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action, r.signal, r.gracePeriodSeconds]),
    [['grower', true, 'standing-order', 'memory.available', 0]],
  );
  const rec = t.records[0]!;
  assert.equal(BigInt(rec.at.killSent!) - BigInt(rec.at.event!), 40_000n, 'the record carries the crossing and the kill as the mechanism stamped them');
  assert.equal(t.reports.length, 1);
  assert.match(
    t.reports[0]!,
    /^grower memory\.available The node was low on resource: memory\. Threshold quantity: 100Mi, available: 90Mi\. Container c was using 250Mi, request is 50Mi/,
  );
  assert.deepEqual(t.agent.lastEvaluation?.thresholdsMet, [], 'the passes after the kill saw no pressure');
  // The crossing the order answered is a threshold met, as the kubelet would have observed it:
  // MemoryPressure holds for the transition period (admission refuses BestEffort pods meanwhile).
  assert.deepEqual(t.agent.lastEvaluation?.conditions, ['MemoryPressure']);
  const used = t.node.logged('standing order used: pod killed as the line was crossed; the next pass stops and reports it');
  assert.equal(used.length, 1);
  assert.deepEqual([used[0]!.pod, used[0]!.line, used[0]!.availableBytes, used[0]!.crossedToKilledUs], ['ns/grower', 'node:line0', 90 * MiB, 40]);
  assert.equal(t.node.logged('evicted pod').length, 1);
  assert.deepEqual(await t.metric('evictd_standing_orders_used_total'), ['evictd_standing_orders_used_total{signal="memory.available"} 1']);
  assert.deepEqual(await t.metric('evictd_evictions_total'), ['evictd_evictions_total{signal="memory.available"} 1']);
});

test("standing orders: the confirmation's stop fails (runtime down): reported once the memory is back, the stop retried until done, no other pod evicted", async () => {
  const t = start();
  await t.idle();
  t.node.pod('grower').stop = 'fail';
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  await stepUntil(t.node.clock, 'the report', () => t.reports.length > 0, 2000);
  await stepUntil(
    t.node.clock,
    'the failed stop',
    () => t.node.logged('StopPodSandbox after a standing order failed; the pod is already killed, the stop is tried again').length > 0,
    2000,
  );
  await t.idle();
  assert.deepEqual(t.agent.lastEvaluation?.thresholdsMet, [], 'no pressure left: nothing else to evict');
  const failed = t.node.stops.length;
  assert.ok(failed >= 1);
  t.node.pod('grower').stop = 'ok';
  await t.pass();
  await stepUntil(t.node.clock, 'the stop done', () => t.node.logged('pod sandbox stopped after its standing order').length > 0, 2000);
  await t.pass();
  await t.pass();
  await t.agent.stop();
  assert.deepEqual(
    t.node.stops,
    Array.from({ length: failed + 1 }, () => ['grower', 0]),
    'tried until the stop was done, then never again',
  );
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action]),
    [['grower', true, 'standing-order']],
    'one record: the retries report nothing new',
  );
  assert.equal(t.reports.length, 1);
  assert.deepEqual(t.node.kills, ['grower']);
});

test("standing orders: the line's wake-up reaches the loop before the order's use, and the pass evicts the pod itself: one eviction, reported once", async () => {
  const t = start();
  await t.idle();
  // The kernel side's kill is written, but the memory has not come back when the pass looks
  // (as measured in the pure v2 lab: the pass saw the line crossed 150 ms before the use arrived).
  const killed: string[] = [];
  t.port.onKill = (dir) => killed.push(dir);
  t.port.orderFiredDelayMs = 50;
  // The order thread itself lags: the pass's flush finds nothing written yet.
  t.port.usesFlushable = false;
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  await stepUntil(t.node.clock, 'the use', () => t.node.logged('standing order used on a pod already evicted; reported once').length > 0, 2000);
  await t.idle();
  await t.pass();
  await t.agent.stop();
  assert.deepEqual(killed, [GROWER_DIR]);
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action]),
    [['grower', true, 'fast-kill']],
  );
  assert.equal(t.reports.length, 1);
  assert.deepEqual(t.node.stops, [['grower', 0]]);
});

test("standing orders: a use written but not yet reported when the line's wake-up runs a pass: the pass flushes it and confirms, never a second kill", async () => {
  const t = start();
  await t.idle();
  const killed: string[] = [];
  t.port.onKill = (dir) => killed.push(dir);
  // The kill is written at the crossing; its report would reach the loop 50 ms later, after the
  // pass the line's wake-up runs. The pass asks for it first (as the addon's flushOrderUses).
  t.port.orderFiredDelayMs = 50;
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  await stepUntil(t.node.clock, 'the report', () => t.reports.length > 0, 2000);
  await t.idle();
  await t.agent.stop();
  assert.deepEqual(killed, [GROWER_DIR], "one kill: the order's");
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action]),
    [['grower', true, 'standing-order']],
  );
  assert.equal(t.reports.length, 1);
  assert.deepEqual(t.node.stops, [['grower', 0]]);
});

test("standing orders: a use that reaches the loop after the line's wake-up is not lost: the crossed line's order is left alone until it arrives", async () => {
  const t = start();
  await t.idle();
  // A mechanism that delivers a use only to the order in force, 50 ms after the kill,
  // while the line's wake-up runs a pass at once (which finds the node far from the line now).
  t.port.dropsStaleUses = true;
  t.port.orderFiredDelayMs = 50;
  await crossThenStop(t);
  assertOneOrderEviction(t);
  assert.deepEqual(t.node.stops, [['grower', 0]]);
});

test("standing orders: the crossed line's order is left alone by a pass that finds the node far and the pod still listed (the runtime has not seen the kill yet)", async () => {
  const t = start();
  await t.idle();
  // The kill frees the pod's memory at once; the runtime still lists its sandbox ready. A
  // mechanism that delivers a use only to the order in force, 50 ms after the kill, and the
  // thread lags (no flush): the pass the wake-up runs sees the same pods, the node far, no order wanted.
  t.port.onKill = (dir) => t.node.cgroups.kill(dir.slice('/fake'.length));
  t.port.dropsStaleUses = true;
  t.port.orderFiredDelayMs = 50;
  t.port.usesFlushable = false;
  await crossThenStop(t);
  assertOneOrderEviction(t);
});

test('standing orders: a used order whose kill failed: a warning, and the pass evicts as without an order', async () => {
  const t = start();
  await t.idle();
  t.port.killError = 'EACCES: permission denied, open cgroup.kill';
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  await stepUntil(t.node.clock, 'the eviction', () => t.records.length > 0, 2000);
  await t.idle();
  await t.agent.stop();
  assert.equal(t.node.logged('standing order used but its kill failed; the pass decides').length, 1);
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action]),
    [['grower', true, 'fast-kill']],
  );
  assert.deepEqual(t.node.stops, [['grower', 0]]);
});

test("standing orders: a use that reaches a busy loop after the order's TTL is still confirmed: stopped and reported once, never lost", async () => {
  const t = start({ ttlMs: 1000 });
  await t.idle();
  assert.deepEqual(t.orders(), ['grower']);
  // The kernel side kills at the crossing, within the TTL; the loop hears of it 1.5 s later on its
  // clock (seen in the lab: an order used at 965 ms of its 1 s, reported as "no order" and the
  // eviction lost).
  t.port.orderFiredDelayMs = 50;
  t.port.usesFlushable = false;
  t.node.pod('grower').workingSetBytes += 60 * MiB;
  t.sync();
  t.node.clock.advance(1500);
  try {
    await stepUntil(t.node.clock, 'the confirmation', () => t.records.length > 0, 2000);
  } finally {
    await t.idle();
    await t.agent.stop();
  }
  assert.deepEqual(t.node.logged('standing order used for a pod evictd holds no order for'), []);
  assert.deepEqual(
    t.records.map((r) => [r.pod.name, r.ok, r.action]),
    [['grower', true, 'standing-order']],
  );
  assert.equal(t.reports.length, 1);
  assert.deepEqual(t.node.stops, [['grower', 0]]);
});
