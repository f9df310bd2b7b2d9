/**
 * A KEP-5986 relax in a recording (`relaxed` on the pass that carried it out): the agent starts
 * the relaxed container's rates at the counters it read once the runtime had written memory.high,
 * and the replay must do the same, or the events between the decision and the write (hundreds of
 * ms of a throttled container under emulation) read as pressure that outlived the relax, and the
 * replay evicts where the agent did not. Seen in the lab: a stage-1 test whose agent relaxed
 * and evicted nobody replayed with `evict ... memory.high.pressure`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readRecording } from '../../src/sim/recording-reader';
import { replay } from '../../src/sim/replay';
import { passLine } from '../../src/sim/recording';

const header = {
  evictdRecording: 1,
  config: {
    featureGates: { MemoryHighEviction: true },
    memoryHighEvictionThreshold: 1,
    memoryPressureEvictionGracePeriod: '1s',
    evictionHard: { 'memory.available': '1Mi' },
  },
  filesystems: 'single',
  standingOrders: false,
};
const node = { memory: { availableBytes: 4 * 2 ** 30, workingSetBytes: 2 ** 30 } };
/** BestEffort pod web, its container app at `high` memory.high events so far. */
const pods = (high: number) => [
  { name: 'web', namespace: 'default', uid: 'web-1', containers: [{ name: 'app', usage: { memory: 2 ** 27, memoryEvents: { high, max: 0 } } }] },
];
const decided = (actions: string[] = []) => ({ met: [], conditions: [], actions, orders: [] });

/**
 * What the agent did: high events at 10/s from 2 s (the rate counts over the 10 s window), so
 * pressure from 2 s, the 1 s grace over at 3 s: relaxed, with 50 more events counted by the time
 * memory.high read back max (3.5 s); then none: nothing more to do at 4 s (`at4s` varies that).
 */
const lines = (relaxed: unknown[] | undefined, at4s = { high: 250, actions: [] as string[] }) =>
  [
    header,
    { at: '1s', wake: { start: 1 }, node, pods: pods(0), ms: { decide: 1 }, decided: decided() },
    { at: '2s', wake: { 'memory-events': 1 }, node, pods: pods(100), ms: { decide: 1 }, decided: decided() },
    {
      at: '3s',
      wake: { deadline: 1 },
      node,
      pods: pods(200),
      ...(relaxed ? { relaxed } : {}),
      ms: { decide: 1 },
      decided: decided(['relax-memory-high default/web/app']),
    },
    { at: '4s', wake: { housekeeping: 1 }, node, pods: pods(at4s.high), ms: { decide: 1 }, decided: decided(at4s.actions) },
  ]
    .map((l) => JSON.stringify(l))
    .join('\n') + '\n';

test('a relax recorded with the counters read after it replays as the agent decided: no stage 2 for the events before the write', () => {
  const rec = readRecording(lines([{ uid: 'web-1', container: 'app', ok: true, after: { at: '3.5s', high: 250, max: 0 } }]));
  assert.deepEqual(rec.passes[2]!.relaxed, [{ uid: 'web-1', container: 'app', ok: true, after: { atNs: 3.5e9, high: 250, max: 0 } }]);
  assert.deepEqual(replay(rec).differences, []);
});

test('without it, the replay counts the 50 events between the decision and the write as pressure after the relax, and evicts', () => {
  const r = replay(readRecording(lines(undefined)));
  assert.deepEqual(
    r.differences.map((d) => [d.pass, d.what, d.recorded, d.replayed]),
    [[4, 'actions', [], ['evict default/web memory.high.pressure grace 0s']]],
  );
});

test('a relax the runtime refused is read and replayed as refused: stage 2 while the pressure lasts', () => {
  // Events still coming after the refusal (300 at 4 s): the agent evicted.
  const rec = readRecording(
    lines([{ uid: 'web-1', container: 'app', ok: false }], { high: 300, actions: ['evict default/web memory.high.pressure grace 0s'] }),
  );
  assert.deepEqual(rec.passes[2]!.relaxed, [{ uid: 'web-1', container: 'app', ok: false }]);
  assert.deepEqual(replay(rec).differences, []);
});

test('the recorder writes what the reader reads: relaxed on the pass line, times since the recording start', () => {
  const line = passLine({
    atNs: 3e9,
    startNs: 1e12,
    wake: { deadline: 1 },
    node: { memory: { availableBytes: 1, workingSetBytes: 1 } } as never,
    layout: 'single',
    headerLayout: 'single',
    pods: [],
    otherUids: [],
    noCgroup: [],
    crossed: [],
    confirmations: [],
    brakes: null,
    policy: { thresholds: [] } as never,
    met: [],
    conditions: [],
    actions: [],
    orders: [],
    relaxed: [
      { uid: 'u', container: 'c', ok: true, after: { atNs: 1e12 + 3.25e9, high: 7, max: 1 } },
      { uid: 'v', container: 'd', ok: false },
    ],
    decideMs: 1,
  });
  assert.deepEqual(line.relaxed, [
    { uid: 'u', container: 'c', ok: true, after: { at: '3.25s', high: 7, max: 1 } },
    { uid: 'v', container: 'd', ok: false },
  ]);
  const rec = readRecording(JSON.stringify(header) + '\n' + JSON.stringify({ ...line, pods: [] }) + '\n');
  assert.deepEqual(rec.passes[0]!.relaxed, [
    { uid: 'u', container: 'c', ok: true, after: { atNs: 3.25e9, high: 7, max: 1 } },
    { uid: 'v', container: 'd', ok: false },
  ]);
});
