/**
 * Admission answers in a recording: the recorder writes each as its own line, after the pass
 * lines queued before it, inside the size bound; the reader takes them back beside the passes;
 * and the replay decides each again on the conditions of the replayed passes before it
 * (test/unit/fixtures/admissions.jsonl, hand-written from the format), saying a tampered answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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
import { Quantity } from '../../src/policy/quantity';
import type { PodSpec } from '../../src/policy/types';
import { readRecording } from '../../src/sim/recording-reader';
import { differenceText, replay } from '../../src/sim/replay';
import { whatIf } from '../../src/sim/what-if';
import { whatIfText } from '../../src/sim/what-if-text';
import { tempDir } from '../support/temp-dir';

const root = path.join(__dirname, '..', '..', '..');
const fixture = path.join(root, 'test', 'unit', 'fixtures', 'admissions.jsonl');
const dir = tempDir('admissions');
const eviction: EvictionConfig = { evictionHard: { 'memory.available': '1Gi' } };
const policy = compileConfig(eviction);
const node = { memory: { availableBytes: 512 * 2 ** 20, workingSetBytes: 60 * 2 ** 30 } };
const trigger: PassTrigger = { sources: { test: 1 }, firstEventNs: null, firstNotifiedNs: 0n };

/** Passes on `pods` synthetic pods, one second apart (512 MiB available: under the 1Gi line, MemoryPressure). */
function passes(pods: number, n: number): Decision[] {
  const jp = joined(syntheticPods(pods));
  let state = initialState();
  return Array.from({ length: n }, (_, i) => {
    const d = decide(policy, state, (i + 1) * 1e9, node, jp);
    state = d.evaluation.state;
    return d;
  });
}

/** A BestEffort pod (no cpu or memory) as admission sees it, with what a recording must leave out. */
const offered: PodSpec = {
  namespace: 'web',
  name: 'be',
  uid: 'pending',
  priority: 0,
  annotations: { 'kubernetes.io/config.source': 'api', 'secret.example/token': 'hunter2' },
  containers: [{ name: 'app', requests: {}, limits: { 'ephemeral-storage': Quantity.parse('1Gi') } }],
  volumes: [],
  tolerations: [{ key: 'example/gpu', operator: 'Exists' }],
};

test('an answer lands after the pass lines queued before it, and reads back beside them', async () => {
  const file = path.join(dir, 'order.jsonl');
  let now = 0n;
  const rec = new Recorder({
    path: file,
    maxBytes: 64 * 2 ** 20,
    eviction,
    policy,
    standingOrders: false,
    logger: pino({ level: 'silent' }),
    startNs: 0,
    clock: { now: () => now },
  });
  const [d1, d2, d3] = passes(2000, 3);
  rec.pass(trigger, d1!);
  rec.pass(trigger, d2!);
  now = 2_500_000_000n;
  rec.admission(offered, ['MemoryPressure'], { admit: false, reason: 'Evicted' });
  assert.equal(rec.stats.passes, 0, 'both pass lines still queued');
  rec.pass(trigger, d3!);
  await rec.close();
  const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
  assert.deepEqual(
    lines.map((l) => Object.keys(JSON.parse(l) as object)[0]),
    ['evictdRecording', 'at', 'at', 'admission', 'at'],
  );
  assert.deepEqual(JSON.parse(lines[3]!), {
    admission: {
      at: '2.5s',
      // no uid, no other annotation; the toleration as admit() reads it
      pod: {
        name: 'be',
        namespace: 'web',
        annotations: { 'kubernetes.io/config.source': 'api' },
        containers: [{ name: 'app', limits: { 'ephemeral-storage': '1Gi' } }],
        tolerations: [{ key: 'example/gpu', operator: 'Exists' }],
      },
      conditions: ['MemoryPressure'],
      admit: false,
      reason: 'Evicted',
    },
  });
  assert.equal(rec.stats.admissions, 1);
  const back = readRecording(fs.readFileSync(file, 'utf8'));
  assert.deepEqual(
    back.passes.map((p) => p.line),
    [2, 3, 5],
  );
  assert.equal(back.admissions.length, 1);
  const a = back.admissions[0]!;
  assert.deepEqual(
    { line: a.line, afterPasses: a.afterPasses, atNs: a.atNs, admit: a.admit, pod: `${a.pod.namespace}/${a.pod.name}` },
    { line: 4, afterPasses: 2, atNs: 2.5e9, admit: false, pod: 'web/be' },
  );
  // the live passes held MemoryPressure: the answer replays as given
  assert.deepEqual(replay(back).differences, []);
});

test('an answer given when no line waits is written at once; answers count toward the size bound and start a part', async () => {
  const file = path.join(dir, 'bound.jsonl');
  const rec = new Recorder({
    path: file,
    maxBytes: 3000,
    eviction,
    policy,
    standingOrders: false,
    logger: pino({ level: 'silent' }),
    startNs: 0,
    clock: { now: () => 1_500_000_000n },
  });
  const [d1] = passes(2, 1);
  rec.pass(trigger, d1!);
  await rec.flushed();
  const before = rec.stats.bytes;
  for (let i = 0; i < 20; i++) rec.admission({ ...offered, name: `be-${i}` }, ['MemoryPressure'], { admit: false, reason: 'Evicted' });
  assert.equal(rec.stats.admissions, 20, 'written as given, no line waiting');
  assert.ok(rec.stats.bytes > before, 'counted');
  assert.ok(rec.stats.parts > 1, `rolled over (${rec.stats.parts} parts)`);
  await rec.close();
  // the part an answer started carries the state after the pass before it: the answers replay as given
  const last = readRecording(fs.readFileSync(file, 'utf8'));
  assert.equal(last.passes.length, 0);
  assert.ok(last.admissions.length > 0);
  assert.deepEqual(last.initial.conditions, ['MemoryPressure']);
  assert.deepEqual(replay(last).differences, []);
  const all = [`${file}.1`, file].flatMap((f) => readRecording(fs.readFileSync(f, 'utf8')).admissions.map((x) => x.pod.name));
  assert.equal(all.at(-1), 'be-19', 'the last answer is in the last part');
});

test('the fixture replays: every recorded answer is decided again as given, one given while a pass decided included', () => {
  const rec = readRecording(fs.readFileSync(fixture, 'utf8'));
  assert.equal(rec.passes.length, 3);
  assert.deepEqual(
    rec.passes.map((p) => p.line),
    [3, 6, 11],
  );
  assert.deepEqual(
    rec.admissions.map((a) => `${a.pod.name} after ${a.afterPasses}`),
    ['early after 0', 'be after 1', 'be-while-deciding after 1', 'be after 2', 'bu after 2', 'be-tolerating after 2', 'static-be after 2', 'be-after after 3'],
  );
  const r = replay(rec);
  assert.equal(r.admissions, 8);
  assert.deepEqual(r.differences, []);
  const cli = spawnSync(process.execPath, [path.join(root, 'bin', 'evictd.js'), 'simulate', fixture], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stdout + cli.stderr);
  assert.match(cli.stdout, /^replayed 3 passes and 8 admission answers: every decision as recorded/);
});

test('a tampered answer is a difference: its time, the pod, both answers; exit 1', () => {
  const text = fs
    .readFileSync(fixture, 'utf8')
    .replace(
      '"name":"bu","namespace":"web","containers":[{"name":"app","requests":{"memory":"64Mi"}}]},"conditions":["MemoryPressure"],"admit":true',
      '"name":"bu","namespace":"web","containers":[{"name":"app","requests":{"memory":"64Mi"}}]},"conditions":["MemoryPressure"],"admit":false,"reason":"Evicted"',
    );
  assert.notEqual(text, fs.readFileSync(fixture, 'utf8'));
  const r = replay(readRecording(text));
  assert.deepEqual(r.differences.map(differenceText), [
    'admission (at 2.6s, after pass 2), web/bu: recorded refuse (Evicted) under MemoryPressure; replayed admit under MemoryPressure',
  ]);
  const tampered = path.join(dir, 'tampered.jsonl');
  fs.writeFileSync(tampered, text);
  const cli = spawnSync(process.execPath, [path.join(root, 'bin', 'evictd.js'), 'simulate', tampered], { encoding: 'utf8' });
  assert.equal(cli.status, 1, cli.stdout + cli.stderr);
  assert.match(cli.stdout, /1 differences/);
  assert.match(cli.stdout, /admission \(at 2\.6s, after pass 2\), web\/bu: recorded refuse/);
});

test('a recording without answers reads as before: none', () => {
  const text = fs
    .readFileSync(fixture, 'utf8')
    .split('\n')
    .filter((l) => !l.startsWith('{"admission"'))
    .join('\n');
  const rec = readRecording(text);
  assert.deepEqual(rec.admissions, []);
  assert.deepEqual(
    rec.passes.map((p) => p.line),
    [2, 3, 4],
  );
  assert.deepEqual(replay(rec).differences, []);
});

test('what if: the answers another config would give otherwise are said, with the conditions of each run', () => {
  const rec = readRecording(fs.readFileSync(fixture, 'utf8'));
  const lower = whatIf(rec, compileConfig({ evictionHard: { 'memory.available': '10Mi' } }));
  // never under pressure at 10Mi: the refused BestEffort pods would be admitted, the rest as before
  assert.deepEqual(
    lower.admissions.map((a) => `${a.pod} ${a.at}: ${a.recorded} -> ${a.whatIf}`),
    [
      'web/be-while-deciding 2.001s: refuse (Evicted) under MemoryPressure -> admit under no condition',
      'web/be 2.5s: refuse (Evicted) under MemoryPressure -> admit under no condition',
      'web/be-after 3.5s: refuse (Evicted) under MemoryPressure -> admit under no condition',
    ],
  );
  assert.match(
    whatIfText(lower),
    /admission answers:\n {2}web\/be-while-deciding at 2\.001s: refuse \(Evicted\) under MemoryPressure; would be admit under no condition/,
  );
  const higher = whatIf(rec, compileConfig({ evictionHard: { 'memory.available': '600Mi' } }));
  assert.deepEqual(
    higher.admissions.map((a) => `${a.pod} ${a.at}`),
    ['web/be 1.5s'],
  );
  assert.deepEqual(whatIf(rec, rec.scenario.config).admissions, [], 'the same config changes no answer');
});
