// A recording with a field of the wrong kind is refused with the line and field named, before
// any replay: no TypeError, no replay that calls a broken file clean.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../../src/errors';
import { readRecording } from '../../src/sim/recording-reader';
import { tempDir } from '../support/temp-dir';

const root = path.join(__dirname, '..', '..', '..');
const example = fs.readFileSync(path.join(root, 'examples', 'demo-recording.jsonl'), 'utf8');
const lines = example
  .trimEnd()
  .split('\n')
  .map((l) => JSON.parse(l) as Record<string, unknown>);
/** The first pass that confirmed an order's use. */
const confirming = lines.findIndex((l) => Array.isArray(l.confirmed) && l.confirmed.length > 0);

/** The example with line `i` (0-based) replaced by what `edit` makes of it. */
function tampered(i: number, edit: (l: Record<string, unknown>) => unknown): string {
  return lines.map((l, j) => JSON.stringify(j === i ? edit(structuredClone(l)) : l)).join('\n') + '\n';
}

const set = (key: string, value: unknown) => (l: Record<string, unknown>) => {
  l[key] = value;
  return l;
};

test('the example reads as it is, and has a pass with a confirmed use to tamper with', () => {
  assert.ok(confirming > 0);
  assert.equal(readRecording(example).passes.length, lines.length - 1);
});

test('each field of the wrong kind is one UsageError naming the line and the field', () => {
  const cases: [string, string, RegExp][] = [
    [tampered(2, () => null), 'a null line', /^line 3: null: must be a JSON object$/],
    [tampered(2, () => [1]), 'a list line', /^line 3: \[1\]: must be a JSON object$/],
    [tampered(0, set('config', 'x')), 'config not a map', /^line 1\.config: "x": must be a map$/],
    [tampered(0, set('standingOrders', 'yes')), 'standingOrders not a boolean', /^line 1\.standingOrders: "yes": must be true or false$/],
    [tampered(0, set('startedAt', 'yesterday')), 'startedAt not a time', /^line 1\.startedAt: "yesterday": must be a date and time/],
    [tampered(0, set('pressureTransitionPeriod', '-5m')), 'a negative period', /^line 1\.pressureTransitionPeriod: "-5m": must not be negative$/],
    [tampered(0, set('state', { firstObservedAt: 'x' })), 'state lists not lists', /^line 1\.state\.firstObservedAt: "x": must be a list$/],
    [tampered(0, set('state', { conditions: ['Hungry'] })), 'an unknown condition', /^line 1\.state\.conditions\[0\]: "Hungry": must be one of MemoryPressure/],
    [tampered(1, set('wake', 'start')), 'wake not a map', /^line 2\.wake: "start": must be a map of numbers$/],
    [tampered(1, set('wake', { start: 'one' })), 'a wake count not a number', /^line 2\.wake\.start: "one": must be a number$/],
    [tampered(1, set('crossed', 0)), 'crossed not a list', /^line 2\.crossed: 0: must be a list$/],
    [tampered(1, set('ms', { decide: 'fast' })), 'ms.decide not a number', /^line 2\.ms\.decide: "fast": must be a number$/],
    [tampered(1, set('brakes', [null])), 'a null brake', /^line 2\.brakes\[0\]: null: must be a map$/],
    [tampered(1, set('brakes', [{ uid: 'u', since: '-1s' }])), 'a brake from before the start', /^line 2\.brakes\[0\]\.since: "-1s": must not be negative$/],
    [tampered(1, set('confirmed', {})), 'confirmed not a list', /^line 2\.confirmed: \{\}: must be a list$/],
    [tampered(1, set('relaxed', {})), 'relaxed not a list', /^line 2\.relaxed: \{\}: must be a list$/],
    [tampered(1, set('relaxed', [{ uid: '', container: 'c', ok: true }])), 'a relax without a uid', /^line 2\.relaxed\[0\]\.uid: "": must be a pod uid$/],
    [
      tampered(1, set('relaxed', [{ uid: 'u', ok: true }])),
      'a relax without a container',
      /^line 2\.relaxed\[0\]\.container: undefined: must be a container name$/,
    ],
    [
      tampered(1, set('relaxed', [{ uid: 'u', container: 'c', ok: 'yes' }])),
      'a relax outcome not a boolean',
      /^line 2\.relaxed\[0\]\.ok: "yes": must be true or false$/,
    ],
    [
      tampered(1, set('relaxed', [{ uid: 'u', container: 'c', ok: true, after: { at: '1s', high: -1, max: 0 } }])),
      'a negative counter',
      /^line 2\.relaxed\[0\]\.after\.high: -1: must be a count/,
    ],
    [
      tampered(1, set('relaxed', [{ uid: 'u', container: 'c', ok: true, after: { at: 'soon', high: 1, max: 0 } }])),
      'a relax read at no time',
      /^line 2\.relaxed\[0\]\.after\.at: "soon": /,
    ],
  ];
  const confirmedAs = (c: Record<string, unknown>) =>
    tampered(confirming, (l) => ({ ...l, confirmed: [{ ...(l.confirmed as Record<string, unknown>[])[0], ...c }] }));
  cases.push(
    [
      confirmedAs({ line: 'memory.available[3]' }),
      'a use on a line the config has not',
      /^line \d+\.confirmed\[0\]\.line: "memory\.available\[3\]": must name a hard threshold/,
    ],
    [
      confirmedAs({ line: 'nodefs.available[0]' }),
      'a use on a signal no order stands on',
      /^line \d+\.confirmed\[0\]\.line: "nodefs\.available\[0\]": must name a hard threshold/,
    ],
    [confirmedAs({ pod: 42 }), 'a pod not namespace/name', /^line \d+\.confirmed\[0\]\.pod: 42: must be namespace\/name$/],
    [confirmedAs({ availableBytes: '1Gi' }), 'bytes not a number', /^line \d+\.confirmed\[0\]\.availableBytes: "1Gi": must be a number$/],
    [confirmedAs({ crossedAt: 5 }), 'a crossing time not a duration', /^line \d+\.confirmed\[0\]\.crossedAt: 5: must be a duration string$/],
    [confirmedAs({ reported: 'no' }), 'reported not a boolean', /^line \d+\.confirmed\[0\]\.reported: "no": must be true or false$/],
  );
  for (const [text, what, re] of cases) {
    assert.throws(
      () => readRecording(text),
      (err: unknown) => err instanceof UsageError && re.test(err.message) && !err.message.includes('\n'),
      what,
    );
  }
});

test('evictd simulate on a tampered recording: one line naming line and field, exit 2, no stack', () => {
  const dir = tempDir('rec-bad');
  try {
    const file = path.join(dir, 'bad.jsonl');
    fs.writeFileSync(file, tampered(1, set('ms', null)));
    const r = spawnSync(process.execPath, [path.join(root, 'bin', 'evictd.js'), 'simulate', file], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /^evictd: line 2\.ms: null: must be a map\n$/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
