/**
 * The agent's recorder driven by the real Agent (controller, pass, actuator) on the fake node
 * (test/support/fake-node.ts: its clock moves only when the test moves it): the size bound rolls
 * the file over to FILE.1 and each part replays on its own, a soft grace period begun in the
 * first part included; and a dry run (what `evictd record` runs) records its decisions, acts on
 * none, and replays.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Agent } from '../../src/agent/agent';
import { AgentMetrics } from '../../src/agent/metrics';
import { Recorder } from '../../src/agent/recorder';
import { compileConfig, type EvictionConfig } from '../../src/policy/config';
import { readRecording } from '../../src/sim/recording-reader';
import { replay } from '../../src/sim/replay';
import { FakeNode } from '../support/fake-node';
import { tempDir } from '../support/temp-dir';

const dir = tempDir('recorder');

function start(eviction: EvictionConfig, o: { file: string; maxBytes: number; dryRun?: boolean }) {
  // 900 MiB of pods on 1050 MiB: 150 MiB available.
  const node = new FakeNode(1050, [
    { name: 'steady', workingSetMi: 300, requestMi: 400 },
    { name: 'grower', workingSetMi: 250, requestMi: 50 },
    { name: 'critical', workingSetMi: 350, priority: 2_000_000_000 },
  ]);
  const policy = compileConfig(eviction);
  const recorder = new Recorder({
    path: o.file,
    maxBytes: o.maxBytes,
    eviction,
    policy,
    standingOrders: false,
    logger: node.logger,
    startNs: Number(node.clock.now()),
  });
  const agent = new Agent({
    policy,
    layout: node.observer.opts.layout,
    observer: node.observer,
    runtime: node.runtime,
    // no kernel notifications: each pass is one the test wakes
    notifications: null,
    pods: node.specs,
    logger: node.logger,
    metrics: new AgentMetrics(),
    dryRun: o.dryRun ?? false,
    fastKill: false,
    housekeepingIntervalMs: 3_600_000,
    releaseTimeoutMs: 100,
    stateDir: fs.mkdtempSync(path.join(dir, 'state-')),
    cgroups: node.cgroups,
    clock: node.clock,
    recorder,
  });
  agent.start();
  /** one more pass, `ms` later on the node's clock, as a kernel event would wake it */
  const pass = async (ms: number) => {
    node.clock.advance(ms);
    agent.wake({ source: 'test', monotonicNs: node.clock.now() });
    await agent.controller.idle();
  };
  const stop = async () => {
    await agent.stop();
    await recorder.close();
  };
  return { node, agent, recorder, pass, stop };
}

const replayed = (file: string) => {
  const rec = readRecording(fs.readFileSync(file, 'utf8'));
  return { rec, result: replay(rec) };
};

const SOFT: EvictionConfig = {
  evictionSoft: { 'memory.available': '300Mi' },
  evictionSoftGracePeriod: { 'memory.available': '10s' },
  evictionMaxPodGracePeriod: 5,
};

/** Six passes over 12 s under the soft line, the file bounded to about two lines a part. */
async function rolled(name: string) {
  const file = path.join(dir, name);
  const t = start(SOFT, { file, maxBytes: 1600 });
  await t.agent.controller.idle();
  for (let i = 0; i < 4; i++) await t.pass(3000); // the grace period (10 s) ends at the fourth
  await t.stop();
  const parts = [`${file}.1`, file].map((f) => ({ f, text: fs.readFileSync(f, 'utf8'), ...replayed(f) }));
  // the part whose pass evicted: after the first, so its grace period began in a part before it
  const evicting = parts.find((x) => x.rec.passes.some((p) => p.decided.actions.some((a) => a.startsWith('evict '))));
  return { t, parts, evicting };
}

test('past --record-max-size the file rolls over to FILE.1; each part replays on its own, a grace period begun in a part before included', async () => {
  const { t, parts, evicting } = await rolled('rolled.jsonl');
  assert.deepEqual(t.node.stops, [['grower', 5]], 'the soft eviction, after its grace period');
  assert.ok(t.recorder.stats.parts >= 3, `parts: ${t.recorder.stats.parts}`);
  for (const x of parts) assert.deepEqual(x.result.differences, [], `${x.f} replays on its own`);
  assert.deepEqual(
    parts.map((x) => x.rec.header.part),
    [t.recorder.stats.parts - 1, t.recorder.stats.parts],
  );
  assert.ok(evicting, 'one of the two last parts holds the eviction');
  assert.equal(evicting.rec.header.state?.firstObservedAt.length, 1, 'its header says when the threshold was first met');
  assert.deepEqual(
    evicting.result.recorded.map((e) => `${e.pod} ${e.how}`),
    ['ns/grower evict'],
  );
  assert.deepEqual(evicting.result.replayed, evicting.result.recorded);
  // The two parts follow each other: no pass twice, none out of order.
  const ats = parts.flatMap((x) => x.rec.scenario.steps.map((s) => s.at));
  assert.deepEqual(
    ats,
    [...ats].sort((a, b) => a - b),
  );
});

test('that part without its header state does not replay: the grace period would start again', async () => {
  const { evicting } = await rolled('stateless.jsonl');
  assert.ok(evicting);
  const lines = evicting.text.split('\n');
  const header = JSON.parse(lines[0]!) as Record<string, unknown>;
  delete header.state;
  lines[0] = JSON.stringify(header);
  const r = replay(readRecording(lines.join('\n')));
  assert.ok(
    r.differences.some((d) => d.what === 'actions' && d.recorded.some((a) => a.startsWith('evict ns/grower'))),
    JSON.stringify(r.differences),
  );
});

test('a dry run (evictd record) records what it would have done, does nothing, and replays', async () => {
  const file = path.join(dir, 'observed.jsonl');
  const t = start({ evictionHard: { 'memory.available': '200Mi' } }, { file, maxBytes: 64 * 2 ** 20, dryRun: true });
  await t.agent.controller.idle();
  await t.pass(1000);
  await t.stop();
  assert.deepEqual(t.node.stops, [], 'no stop');
  assert.deepEqual(t.node.kills, [], 'no kill');
  const { rec, result } = replayed(file);
  assert.equal(result.passes, 2);
  assert.deepEqual(result.differences, []);
  assert.ok(
    rec.passes.every((p) => p.decided.actions.includes('evict ns/grower memory.available grace 0s')),
    JSON.stringify(rec.passes.map((p) => p.decided)),
  );
  assert.deepEqual(
    result.replayed.map((e) => e.pod),
    ['ns/grower'],
  );
});

test('a zero pressure transition period (a flag) replays as zero, not as the 5m a zero in a config file means', async () => {
  const file = path.join(dir, 'no-transition.jsonl');
  const t = start({ evictionHard: { 'memory.available': '200Mi' }, evictionPressureTransitionPeriod: '0s' }, { file, maxBytes: 64 * 2 ** 20 });
  await t.agent.controller.idle();
  await t.pass(1000);
  await t.stop();
  const { rec, result } = replayed(file);
  assert.equal(rec.header.config.evictionPressureTransitionPeriod, '0s');
  assert.equal(rec.scenario.config.pressureTransitionPeriodNs, 0);
  assert.deepEqual(t.node.stops, [['grower', 0]]);
  // A zero period holds a condition for no time at all: the kubelet's nodeConditionsObservedSince
  // keeps one observed less than the period ago, so it never reports MemoryPressure (5m would).
  assert.deepEqual(
    rec.passes.map((p) => p.decided.conditions.join(',')),
    ['', '', ''],
  );
  assert.deepEqual(result.differences, []);
  // The same header read as a file's config would hold the condition for 5m: the period goes in the header.
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const header = JSON.parse(lines[0]!) as Record<string, unknown>;
  delete header.pressureTransitionPeriod;
  lines[0] = JSON.stringify(header);
  assert.ok(replay(readRecording(lines.join('\n'))).differences.some((d) => d.what === 'conditions'));
});
