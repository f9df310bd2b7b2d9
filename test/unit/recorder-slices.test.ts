/**
 * The recorder makes a pass's pods into its line after the pass, a slice at a time on the event
 * loop: the pass returns before its line is made, the line comes out whole and as passLine has
 * it, lines keep their passes' order, a full queue makes its oldest line at the pass, and a line
 * whose part's header is only known when it is written still says its own layout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { PassTrigger } from '../../src/agent/controller';
import type { Decision } from '../../src/agent/pass';
import { Recorder } from '../../src/agent/recorder';
import { syntheticPods } from '../../src/lab/bench/policy';
import { decide, joined } from '../../src/lab/bench/recording-cost';
import { compileConfig, type EvictionConfig } from '../../src/policy/config';
import { initialState } from '../../src/policy/evaluate';
import type { FilesystemLayout } from '../../src/policy/types';
import { passLine } from '../../src/sim/recording';
import { readRecording } from '../../src/sim/recording-reader';
import { tempDir } from '../support/temp-dir';

const dir = tempDir('recorder-slices');
const eviction: EvictionConfig = { evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10%', 'imagefs.available': '15%' } };
const policy = compileConfig(eviction);
const node = { memory: { availableBytes: 512 * 2 ** 20, workingSetBytes: 60 * 2 ** 30 } };
const trigger: PassTrigger = { sources: { test: 1 }, firstEventNs: null, firstNotifiedNs: 0n };
const turn = () => new Promise((r) => setImmediate(r));

function recorder(name: string, maxBytes = 64 * 2 ** 20) {
  const file = path.join(dir, name);
  return { file, rec: new Recorder({ path: file, maxBytes, eviction, policy, standingOrders: true, logger: pino({ level: 'silent' }), startNs: 0 }) };
}

/** Passes on `pods` synthetic pods, one second apart, each on its layout. */
function passes(pods: number, layouts: FilesystemLayout[]): Decision[] {
  const jp = joined(syntheticPods(pods));
  let state = initialState();
  return layouts.map((layout, i) => {
    const d = decide(policy, state, (i + 1) * 1e9, node, jp);
    state = d.evaluation.state;
    return { ...d, observation: { ...d.observation, layout } };
  });
}

const lines = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');

test("a large pass's line is made after the pass, in slices, and is passLine's to the byte", async () => {
  const { file, rec } = recorder('large.jsonl');
  const [d] = passes(5000, ['single']);
  rec.pass(trigger, d!);
  assert.equal(rec.stats.passes, 0, 'no line made at the pass');
  let turns = 0;
  while (rec.stats.passes === 0) {
    await turn();
    turns++;
  }
  assert.ok(turns > 1, `made in ${turns} turns of the loop`);
  await rec.close();
  const [, line] = lines(file);
  const expected = passLine({
    atNs: 1e9,
    startNs: 0,
    wake: trigger.sources,
    node,
    layout: 'single',
    headerLayout: 'single',
    pods: d!.ranked.map((j) => j.active),
    otherUids: [],
    noCgroup: [],
    crossed: [],
    confirmations: [],
    brakes: null,
    policy,
    met: d!.evaluation.thresholdsMet,
    conditions: d!.evaluation.conditions,
    actions: d!.actions,
    orders: d!.orders,
    decideMs: 0,
  });
  // decide's own time is the pass's, not passLine's to know
  const got = JSON.parse(line!) as Record<string, unknown>;
  assert.deepEqual({ ...got, ms: null }, { ...JSON.parse(JSON.stringify(expected)), ms: null });
  assert.equal(rec.stats.madeAtPass, 0);
});

test('passes faster than their lines: the lines keep their order, the oldest made at the pass once the queue is full', async () => {
  const { file, rec } = recorder('queued.jsonl');
  const ds = passes(50, ['single', 'single', 'single', 'single', 'single', 'single']);
  for (const d of ds) rec.pass(trigger, d);
  assert.equal(rec.stats.madeAtPass, 3, 'three lines wait at most');
  await rec.flushed();
  await rec.close();
  assert.deepEqual(
    readRecording(fs.readFileSync(file, 'utf8')).scenario.steps.map((s) => s.at),
    [1e9, 2e9, 3e9, 4e9, 5e9, 6e9],
  );
});

test("a line made after a pass that started a new part says its own layout where that part's header says another", async () => {
  // Two lines a part (a header and a 5-pod line are about 0.4 and 2.7 KB): the seventh pass
  // starts the last part, its header saying split; the eighth, queued while the header in force
  // said single, was observed single.
  const { file, rec } = recorder('layouts.jsonl', 6000);
  const layouts: FilesystemLayout[] = ['single', 'single', 'single', 'single', 'single', 'single', 'split', 'single'];
  for (const d of passes(5, layouts)) rec.pass(trigger, d);
  await rec.close();
  assert.equal(rec.stats.parts, 4);
  const last = readRecording(fs.readFileSync(file, 'utf8'));
  assert.equal(last.scenario.layout, 'split');
  assert.deepEqual(
    last.passes.map((p) => p.layout),
    ['split', 'single'],
  );
  const before = readRecording(fs.readFileSync(`${file}.1`, 'utf8'));
  assert.deepEqual(
    before.passes.map((p) => p.layout),
    ['single', 'single'],
  );
});
