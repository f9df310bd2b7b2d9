/**
 * A recording the size limit splits while a KEP-5986 grace period runs: the later part's header
 * carries KEP-5986's state (`state.memoryPressure`: each container's samples and relax, each
 * pod's grace period start), so the part replays as the agent went on. Without it the part's
 * replay starts the grace period and the rates afresh and misses the eviction. The passes are
 * made as the agent's pass makes them (the policy's functions, no I/O) and go through the
 * agent's Recorder, which rolls the file over.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { PassTrigger } from '../../src/agent/controller';
import type { Decision } from '../../src/agent/pass';
import { Recorder } from '../../src/agent/recorder';
import { decide, joined } from '../../src/lab/bench/recording-cost';
import { decideActions } from '../../src/policy/actions';
import { compileConfig, type EvictionConfig } from '../../src/policy/config';
import { assess, initialState } from '../../src/policy/evaluate';
import { afterRelaxes, decideMemoryPressure, initialMemoryPressureState, type MemoryPressureState, type RelaxResult } from '../../src/policy/memory-pressure';
import type { ActivePod } from '../../src/policy/types';
import { readRecordedPressure, recordedPressure } from '../../src/sim/recorded-pressure';
import { readRecording } from '../../src/sim/recording-reader';
import { replay } from '../../src/sim/replay';
import { tempDir } from '../support/temp-dir';

const dir = tempDir('recording-pressure-parts');
const eviction: EvictionConfig = {
  featureGates: { MemoryHighEviction: true },
  memoryHighEvictionThreshold: 1,
  memoryPressureEvictionGracePeriod: '3s',
  evictionHard: { 'memory.available': '1Mi' },
};
const policy = compileConfig(eviction);
const node = { memory: { availableBytes: 4 * 2 ** 30, workingSetBytes: 2 ** 30 } };
const trigger: PassTrigger = { sources: { 'container-memory-events': 1 }, firstEventNs: null, firstNotifiedNs: 0n };

/** BestEffort pod web, its container app at `high` memory.high events so far. */
const web = (high: number): ActivePod => ({
  spec: { namespace: 'default', name: 'web', uid: 'web-1', priority: 0, annotations: {}, volumes: [], containers: [{ name: 'app', requests: {}, limits: {} }] },
  usage: { containers: [{ name: 'app', memoryBytes: 2 ** 27, memoryEvents: { high, max: 0 } }], volumes: [] },
});

/**
 * Passes 1 s apart from 1 s, app throttled at 100 events a second throughout: pressure from 2 s,
 * the 3 s grace over at 5 s, relaxed (the counters read 0.3 s later, as a runtime's write takes),
 * the pressure goes on, so the grace started again at 5.3 s ends at 8.3 s: evicted at 9 s. The
 * file is bounded to about two passes a part. Returns the two parts kept, and each pass's actions.
 */
async function recorded(name: string) {
  const file = path.join(dir, name);
  const rec = new Recorder({ path: file, maxBytes: 1800, eviction, policy, standingOrders: false, logger: pino({ level: 'silent' }), startNs: 0 });
  let state = initialState();
  let pressure: MemoryPressureState = initialMemoryPressureState();
  const actions: string[][] = [];
  for (let s = 1; s <= 9; s++) {
    const now = s * 1e9;
    const pods = joined([web(100 * (s - 1))]);
    const base = decide(policy, state, now, node, pods);
    const kep = decideMemoryPressure(policy.memoryPressure!, policy.maxPodGracePeriodSeconds, pressure, now, [pods[0]!.active]);
    const d: Decision = {
      ...base,
      actions: decideActions(policy, assess(policy, state, { now, node, layout: 'single', crossed: [] }), base.evaluation, undefined, [], kep),
      given: { ...base.given, pressure: kep.state },
    };
    const relaxed: RelaxResult[] = kep.relax.map((r) => ({
      uid: r.pod.uid,
      container: r.container,
      ok: true,
      after: { atNs: now + 0.3e9, high: 100 * (s - 1) + 30, max: 0 },
    }));
    rec.pass(trigger, d, relaxed);
    state = base.evaluation.state;
    pressure = afterRelaxes(kep.state, relaxed);
    actions.push(d.actions.map((a) => a.type));
  }
  await rec.close();
  const parts = [`${file}.1`, file].map((f) => {
    const text = fs.readFileSync(f, 'utf8');
    const r = readRecording(text);
    return { text, rec: r, result: replay(r) };
  });
  return { parts, actions, stats: rec.stats };
}

const evicting = (parts: Awaited<ReturnType<typeof recorded>>['parts']) =>
  parts.find((x) => x.rec.passes.some((p) => p.decided.actions.some((a) => a.includes('memory.high.pressure'))));

test('a part begun in a KEP-5986 grace period after a relax carries that state and replays as the agent went on', async () => {
  const { parts, actions, stats } = await recorded('kep-rolled.jsonl');
  assert.deepEqual(
    actions.map((a, i) => `${i + 1}s ${a.join(',')}`).filter((x) => !x.endsWith(' ')),
    ['5s relax-memory-high', '9s evict-pressured'],
    'relaxed when the grace ended, evicted when the second one did',
  );
  assert.ok(stats.parts >= 3, `parts: ${stats.parts}`);
  for (const x of parts) assert.deepEqual(x.result.differences, [], `part ${x.rec.header.part} replays on its own`);
  const ev = evicting(parts);
  assert.ok(ev, 'one of the two last parts holds the eviction');
  assert.ok(ev.rec.scenario.steps[0]!.at > 5.3e9, 'and begins after the relax: its replay cannot see it happen');
  const mp = ev.rec.header.state?.memoryPressure;
  assert.ok(mp, 'its header carries KEP-5986 state');
  assert.deepEqual(mp.graceSince, [['web-1', '5.3s']], 'the grace period that started again at the relax');
  assert.equal(mp.containers[0]?.relax, 'done');
  assert.equal(mp.containers[0]?.relaxedAt, '5.3s');
  assert.deepEqual(
    ev.result.replayed.map((e) => `${e.pod} ${e.signal}`),
    ['default/web memory.high.pressure'],
  );
});

test('that part without its KEP-5986 state does not replay: the grace period would start again', async () => {
  const { parts } = await recorded('kep-stateless.jsonl');
  const ev = evicting(parts)!;
  const lines = ev.text.split('\n');
  const header = JSON.parse(lines[0]!) as { state: Record<string, unknown> };
  delete header.state.memoryPressure;
  lines[0] = JSON.stringify(header);
  const r = replay(readRecording(lines.join('\n')));
  assert.ok(
    r.differences.some((d) => d.what === 'actions' && d.recorded.some((a) => a.includes('memory.high.pressure'))),
    JSON.stringify(r.differences),
  );
});

test('KEP-5986 state reads back as it was written, times counted from the recording start', () => {
  const state: MemoryPressureState = {
    containers: new Map([
      [
        'web-1/app',
        {
          samples: [
            { atNs: 12e9, high: 40, max: 0 },
            { atNs: 13.25e9, high: 90, max: 2 },
          ],
          relax: 'done',
          relaxedNs: 12e9,
        },
      ],
      ['db-2/main', { samples: [{ atNs: 13e9, high: 0, max: 0 }], relax: 'failed' }],
    ]),
    graceSince: new Map([['web-1', 12.5e9]]),
  };
  const written = JSON.parse(JSON.stringify(recordedPressure(state, 10e9))) as unknown;
  const back = readRecordedPressure('state.memoryPressure', written);
  assert.deepEqual(back.graceSince, new Map([['web-1', 2.5e9]]));
  assert.deepEqual(back.containers.get('web-1/app'), {
    samples: [
      { atNs: 2e9, high: 40, max: 0 },
      { atNs: 3.25e9, high: 90, max: 2 },
    ],
    relax: 'done',
    relaxedNs: 2e9,
  });
  assert.deepEqual(back.containers.get('db-2/main'), { samples: [{ atNs: 3e9, high: 0, max: 0 }], relax: 'failed' });
  assert.equal(recordedPressure(initialMemoryPressureState(), 0), null, 'nothing seen: nothing written');
});

test('a bad KEP-5986 state in a header is refused naming its field', () => {
  const good = { containers: [{ uid: 'u', container: 'c', samples: [{ at: '1s', high: 1, max: 0 }] }], graceSince: [['u', '1s']] };
  const bad: [unknown, RegExp][] = [
    [{ ...good, containers: [{ ...good.containers[0], relax: 'maybe' }] }, /state\.memoryPressure\.containers\[0\]\.relax.*maybe.*done or failed/],
    [{ ...good, containers: [{ ...good.containers[0], samples: [] }] }, /containers\[0\]\.samples.*at least one/],
    [{ ...good, containers: [{ ...good.containers[0], samples: [{ at: '1s', high: -1, max: 0 }] }] }, /samples\[0\]\.high.*-1/],
    [{ ...good, containers: [{ ...good.containers[0], uid: 'a/b' }] }, /containers\[0\]\.uid.*a\/b.*pod uid/],
    [{ ...good, graceSince: [['u']] }, /graceSince\[0\].*pair/],
    [{ ...good, graceSince: [['u', '-1s']] }, /graceSince\[0\]\[1\].*negative/],
  ];
  for (const [v, re] of bad) assert.throws(() => readRecordedPressure('state.memoryPressure', v), re);
  assert.doesNotThrow(() => readRecordedPressure('state.memoryPressure', good));
});
