/**
 * Whole passes of the real Agent (controller, pass, policy, actuator, effects) on the fake node
 * (test/support/fake-node.ts): which pod a pass picks, what it does to it, and what the next
 * pass does, including the memory brake's life (on, bound, release) with a clock that moves only
 * when the test says. Unprivileged; the same paths on real cgroups and containerd are in
 * test/agent/.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Agent, type EvictionRecord } from '../../src/agent/agent';
import { BRAKE_RECORD_FILE } from '../../src/agent/effects/brake-record';
import { EVICTION_JOURNAL_FILE } from '../../src/agent/eviction-journal';
import { LAST_KNOWN_FILE } from '../../src/agent/last-known-priorities';
import { AgentMetrics } from '../../src/agent/metrics';
import type { EvictionReporter, PodSpecSource } from '../../src/agent/ports';
import { compileConfig, type EvictionConfig } from '../../src/policy/config';
import { FakeNode, MiB, type FakePodInit } from '../support/fake-node';
import { stepUntil, waitFor } from '../support/wait';
import { tempDir } from '../support/temp-dir';

function start(
  node: FakeNode,
  config: EvictionConfig,
  opts: { dryRun?: boolean; fastKill?: boolean; stateDir?: string; reporter?: EvictionReporter; specs?: PodSpecSource } = {},
) {
  const stateDir = opts.stateDir ?? tempDir('pass');
  const agent = new Agent({
    policy: compileConfig(config),
    layout: node.observer.opts.layout,
    observer: node.observer,
    runtime: node.runtime,
    notifications: null,
    pods: opts.specs ?? node.specs,
    logger: node.logger,
    metrics: new AgentMetrics(),
    dryRun: opts.dryRun ?? false,
    fastKill: opts.fastKill ?? true,
    housekeepingIntervalMs: 3_600_000,
    releaseTimeoutMs: 100,
    stateDir,
    cgroups: node.cgroups,
    clock: node.clock,
    ...(opts.reporter ? { reporter: opts.reporter } : {}),
  });
  const records: EvictionRecord[] = [];
  agent.on('eviction', (r: EvictionRecord) => records.push(r));
  agent.start();
  /** one more pass (as a kernel notification would wake it), run to its end */
  const pass = async () => {
    agent.wake({ source: 'test' });
    await agent.controller.idle();
  };
  return { agent, records, pass, stateDir };
}

const pods: FakePodInit[] = [
  { name: 'steady', workingSetMi: 300, requestMi: 400 },
  { name: 'grower', workingSetMi: 250, requestMi: 50 },
  { name: 'critical', workingSetMi: 350, priority: 2_000_000_000 },
];

test('pass: a hard memory line crossed: the pod furthest over its request is killed and stopped (grace 0), the next pass sees the node recovered', async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB; // available 40Mi < 100Mi
  const a = start(node, { evictionHard: { 'memory.available': '100Mi' } });
  await a.agent.controller.idle();
  await a.agent.stop();
  assert.deepEqual(node.kills, ['grower']);
  assert.deepEqual(node.stops, [['grower', 0]]);
  assert.deepEqual(
    a.records.map((r) => [r.pod.name, r.ok, r.action, r.signal]),
    [['grower', true, 'fast-kill', 'memory.available']],
  );
  assert.match(a.records[0]!.message, /^The node was low on resource: memory\. Threshold quantity: 100Mi, available: 40Mi\./);
  assert.ok(a.agent.controller.stats.passes >= 2, 'the eviction asked for a second look');
  assert.deepEqual(a.agent.lastEvaluation?.thresholdsMet, [], 'the second look found the node below no line');
});

test('pass: an eviction is journaled until reported; a run that died before the report has the next start stop the sandbox again and repeat the same report', async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB;
  // The first run's report never ends: the process "dies" with the eviction unreported.
  const stuck: Parameters<EvictionReporter['report']>[0][] = [];
  const first = start(
    node,
    { evictionHard: { 'memory.available': '100Mi' } },
    { reporter: { report: (e) => (stuck.push(e), new Promise<void>(() => undefined)) } },
  );
  await first.agent.controller.idle();
  assert.deepEqual(node.kills, ['grower']);
  const journal = path.join(first.stateDir, EVICTION_JOURNAL_FILE);
  const entry = JSON.parse(fs.readFileSync(journal, 'utf8')).evictions[0];
  assert.equal(entry.pod.name, 'grower');
  assert.equal(entry.podEventName, stuck[0]!.podEventName, "the report carries the journal's event name");
  // The next start on the same state dir: the sandbox is stopped again (idempotent) and the same
  // report repeated, as one that may have landed; then the journal is empty.
  node.stops.length = 0;
  const again: Parameters<EvictionReporter['report']>[0][] = [];
  const next = start(
    node,
    { evictionHard: { 'memory.available': '100Mi' } },
    { stateDir: first.stateDir, reporter: { report: (e) => (again.push(e), Promise.resolve()) } },
  );
  await waitFor('the report repeated', () => again.length === 1, 2000);
  assert.deepEqual(node.stops, [['grower', 0]]);
  assert.deepEqual(
    [again[0]!.pod.uid, again[0]!.podEventName, again[0]!.recovered, again[0]!.at?.getTime()],
    [entry.pod.uid, entry.podEventName, true, entry.atMs],
  );
  await waitFor('the journal emptied', () => !fs.existsSync(journal), 2000);
  assert.ok(node.logged('eviction from a previous run: finishing it (stop, then report)').length === 1);
  await next.agent.stop();
  await first.agent.stop();
});

test('pass: an eviction a crashed run began whose stop fails at the next start is tried again in that run until it is stopped and reported', async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB;
  const first = start(node, { evictionHard: { 'memory.available': '100Mi' } }, { reporter: { report: () => new Promise<void>(() => undefined) } });
  await first.agent.controller.idle();
  const journal = path.join(first.stateDir, EVICTION_JOURNAL_FILE);
  assert.ok(fs.existsSync(journal));
  // The runtime is busy right after the crash: the next start's first stops fail.
  const grower = [...node.pods.values()].find((p) => p.spec.name === 'grower')!;
  grower.stop = 'fail';
  node.stops.length = 0;
  const again: Parameters<EvictionReporter['report']>[0][] = [];
  const next = start(
    node,
    { evictionHard: { 'memory.available': '100Mi' } },
    { stateDir: first.stateDir, reporter: { report: (e) => (again.push(e), Promise.resolve()) } },
  );
  // The retries' backoff (250 ms, doubling) runs on the node's clock: stepped, not waited for.
  await stepUntil(node.clock, 'two failed stops', () => node.stops.length >= 2, 5000);
  assert.equal(again.length, 0, 'no report before the stop');
  assert.ok(fs.existsSync(journal), 'kept in the journal meanwhile');
  grower.stop = 'ok';
  await stepUntil(node.clock, 'the report', () => again.length === 1, 5000);
  await waitFor('the journal emptied', () => !fs.existsSync(journal), 2000);
  assert.ok(node.logged('eviction from a previous run: its sandbox stop failed; trying again').length >= 2);
  await next.agent.stop();
  await first.agent.stop();
});

test("pass: the first candidate's stop fails: the next one is evicted in the same pass", async () => {
  const node = new FakeNode(1000, [
    { name: 'a', workingSetMi: 300, stop: 'fail' },
    { name: 'b', workingSetMi: 250 },
  ]);
  node.otherBytes = 400 * MiB;
  const a = start(node, { evictionHard: { 'memory.available': '100Mi' } }, { fastKill: false });
  await a.agent.controller.idle();
  await a.agent.stop();
  assert.deepEqual(node.stops, [
    ['a', 0],
    ['b', 0],
  ]);
  assert.deepEqual(
    a.records.map((r) => [r.pod.name, r.ok]),
    [
      ['a', false],
      ['b', true],
    ],
  );
});

test("pass: a soft eviction's graceful stop runs in the background: the loop stays healthy, a hard line crossed meanwhile is acted on, the stop's end is recorded", async () => {
  const node = new FakeNode(1000, [
    { name: 'slow', workingSetMi: 400, requestMi: 50, stop: 'held' },
    { name: 'hog', workingSetMi: 100, requestMi: 90 },
  ]);
  node.otherBytes = 420 * MiB; // 80Mi available: under the soft line, above the hard one
  const a = start(node, {
    evictionHard: { 'memory.available': '10Mi' },
    evictionSoft: { 'memory.available': '100Mi' },
    evictionSoftGracePeriod: { 'memory.available': '1s' },
    evictionMaxPodGracePeriod: 30,
  });
  await a.agent.controller.idle();
  node.clock.advance(1000);
  // The pass waits a moment (cri-stop.ts QUICK_MS, on the clock) for a stop that might end at once.
  a.agent.wake({ source: 'test' });
  await stepUntil(
    node.clock,
    'the pass to leave the stop in the background',
    () => a.agent.health().ok && !a.agent.controller.busy && node.stops.length === 1,
    5000,
  );
  assert.deepEqual(node.stops, [['slow', 30]], 'the soft eviction began');
  assert.equal(a.records.length, 0, 'its record comes when the stop ends');
  assert.ok(node.logged('evicting pod: graceful stop running in the background').length === 1);
  assert.equal(a.agent.health().ok, true, 'the pass ended: the loop is alive');
  await a.pass();
  assert.deepEqual(node.stops, [['slow', 30]], 'no second eviction while the graceful stop runs (one at a time, as the kubelet)');
  // A hard line crossed while the stop runs is acted on at once, on another pod.
  node.otherBytes = 495 * MiB; // 5Mi available
  await a.pass();
  assert.deepEqual(node.kills, ['hog']);
  assert.deepEqual(
    a.records.map((r) => [r.pod.name, r.action]),
    [['hog', 'fast-kill']],
  );
  // The slow pod's handler finishes: its eviction is recorded and reported.
  const passes = a.agent.controller.stats.passes;
  node.finishStop('slow');
  await waitFor('the stop to be recorded', () => a.records.some((r) => r.pod.name === 'slow'), 2000);
  const slow = a.records.find((r) => r.pod.name === 'slow')!;
  assert.deepEqual([slow.ok, slow.action, slow.gracePeriodSeconds, slow.pending], [true, 'stop', 30, undefined]);
  await waitFor('a look after the stop', () => a.agent.controller.stats.passes > passes, 2000);
  await a.agent.controller.idle();
  await a.agent.stop();
});

test('pass: dry run decides as a live run would, touches nothing, and does not spin', async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB;
  const a = start(node, { evictionHard: { 'memory.available': '100Mi' } }, { dryRun: true });
  await a.agent.controller.idle();
  await a.pass();
  await a.agent.stop();
  assert.deepEqual([node.kills, node.stops, node.writes], [[], [], []]);
  assert.deepEqual(
    a.records.map((r) => [r.pod.name, r.dryRun, r.ok]),
    [
      ['grower', true, true],
      ['grower', true, true],
    ],
  );
  assert.equal(a.agent.controller.stats.passes, 2, 'one pass per wake-up: a dry-run eviction asks for no second look');
});

const SOFT_BRAKE: EvictionConfig = {
  evictionHard: { 'memory.available': '10Mi' },
  evictionSoft: { 'memory.available': '100Mi' },
  evictionSoftGracePeriod: { 'memory.available': '1m' },
  evictionMaxPodGracePeriod: 30,
  memoryBrake: true,
  memoryBrakeMaxDuration: '10s',
};

test('pass: the memory brake: on at the soft line (memory.high = usage + 8Mi), the pod stopped with grace 0 at the bound, released when it is gone', async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB;
  const a = start(node, SOFT_BRAKE);
  await a.agent.controller.idle();
  assert.deepEqual(node.writes, [['grower', 'memory.high', String(258 * MiB)]], 'braked at its usage plus the margin');
  assert.equal(a.records.length, 0, 'the soft grace period holds the eviction');
  assert.ok(fs.readdirSync(a.stateDir).includes(BRAKE_RECORD_FILE), 'the brake is on record');
  node.clock.advance(9_999);
  await a.pass();
  assert.deepEqual(node.stops, [], 'a moment before the bound');
  node.clock.advance(1);
  await a.pass();
  assert.deepEqual(node.stops, [['grower', 0]]);
  assert.equal(a.records[0]?.pod.name, 'grower');
  assert.match(a.records[0]!.message, /held by the memory brake for 10s, past its bound of 10s/);
  await a.agent.controller.idle();
  await a.agent.stop();
  assert.deepEqual(node.writes.at(-1), ['grower', 'memory.high', 'max'], 'the original memory.high back once the pod is gone');
  assert.ok(node.logged('memory brake off').some((l) => l.why === 'pod-gone'));
  assert.ok(!fs.readdirSync(a.stateDir).includes(BRAKE_RECORD_FILE), 'no brake left on record');
});

test("pass: a braked pod's soft eviction stops it with its grace period, eases the brake to usage + 128Mi for the handler and holds the pod still until its SIGTERM is queued", async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB;
  const a = start(node, { ...SOFT_BRAKE, evictionSoftGracePeriod: { 'memory.available': '1s' }, memoryBrakeMaxDuration: '2m' });
  await a.agent.controller.idle();
  assert.deepEqual(node.writes, [['grower', 'memory.high', String(258 * MiB)]]);
  node.pod('grower').stop = 'held'; // its handler runs until finishStop
  node.clock.advance(1000);
  a.agent.wake({ source: 'test' });
  // The ease looks for the signal every 2 ms (the fake's SIGTERM is queued from the stop on);
  // the pass waits a moment (cri-stop.ts QUICK_MS) for a stop that might end at once.
  await stepUntil(node.clock, 'the thaw', () => node.writes.length >= 4 && !a.agent.controller.busy, 5000, 2);
  assert.deepEqual(node.stops, [['grower', 30]]);
  assert.deepEqual(
    node.writes.slice(0, 4),
    [
      ['grower', 'memory.high', String(258 * MiB)],
      ['grower', 'cgroup.freeze', '1'],
      ['grower', 'memory.high', String(378 * MiB)],
      ['grower', 'cgroup.freeze', '0'],
    ],
    'held still, eased to usage (250Mi) + 128Mi, thawed once the SIGTERM was queued',
  );
  node.finishStop('grower');
  await a.agent.controller.idle();
  await a.agent.stop();
});

test('pass: the memory brake is released when the pressure clears, and nobody is evicted', async () => {
  const node = new FakeNode(1000, pods);
  node.otherBytes = 60 * MiB;
  const a = start(node, SOFT_BRAKE);
  await a.agent.controller.idle();
  assert.equal(node.pod('grower').memoryHigh, String(258 * MiB));
  node.otherBytes = 0; // page cache dropped: 100Mi available, at the line
  node.pod('steady').workingSetBytes = 100 * MiB;
  await a.pass();
  await a.agent.stop();
  assert.equal(node.pod('grower').memoryHigh, 'max');
  assert.ok(node.logged('memory brake off').some((l) => l.why === 'recovered'));
  assert.deepEqual(a.records, []);
  assert.deepEqual(node.stops, []);
});

test('pass: a start with the runtime down forgets no last-known priority; a later start with the API down still spares the critical pod', async () => {
  const node = new FakeNode(1000, pods);
  const stateDir = tempDir('pass');
  const file = path.join(stateDir, LAST_KNOWN_FILE);
  const known = () =>
    Object.values((JSON.parse(fs.readFileSync(file, 'utf8')) as { pods: Record<string, { name: string; priority: number }> }).pods).map((p) => [
      p.name,
      p.priority,
    ]);
  // 1. The API and the runtime answer: the critical pod's priority is learned and kept.
  const first = start(node, { evictionHard: { 'memory.available': '100Mi' } }, { stateDir });
  await first.agent.controller.idle();
  await first.agent.stop();
  assert.deepEqual(
    known().find(([n]) => n === 'critical'),
    ['critical', 2_000_000_000],
  );
  // 2. Both down (API: no spec for anyone; runtime: every listing fails), for several passes.
  node.runtimeDown = true;
  const down = start(node, { evictionHard: { 'memory.available': '100Mi' } }, { stateDir, specs: { get: () => undefined } });
  await down.agent.controller.idle();
  await down.pass();
  await down.pass();
  await down.agent.stop();
  assert.deepEqual(
    known().find(([n]) => n === 'critical'),
    ['critical', 2_000_000_000],
    'a failed listing forgets nobody',
  );
  // 3. The runtime is back, the API still down, the node past its line: the kubelet would never
  // evict the critical pod, and neither does evictd, on what it knew.
  node.runtimeDown = false;
  node.otherBytes = 60 * MiB;
  const later = start(node, { evictionHard: { 'memory.available': '100Mi' } }, { stateDir, specs: { get: () => undefined } });
  await later.agent.controller.idle();
  await later.agent.stop();
  assert.ok(node.kills.length > 0, 'the node past its line had an eviction');
  assert.ok(!node.kills.includes('critical'), `the critical pod is spared (killed: ${node.kills.join(', ')})`);
});
