/**
 * Which order a use was of: the replay checks a confirmed use against the order in force at its
 * crossing, not against the last one named before the pass that confirms it. A use reaches the
 * agent's loop when the loop is free, which can be after a later pass named another pod (a CI
 * run of the demo in the lab: hog-1's use confirmed after a pass had named api-burstable).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { readRecording } from '../../src/sim/recording-reader';
import { inForce, replay } from '../../src/sim/replay';

const ms = 1e6;

test('the order in force at a crossing: the last one decided before it, and the one before within the placement slack', () => {
  const namings = [
    { pod: 'demo/hog-1', decidedNs: 1000 * ms },
    { pod: 'demo/hog-1', decidedNs: 1500 * ms },
    { pod: 'demo/api', decidedNs: 2000 * ms },
    { pod: null, decidedNs: 3000 * ms },
  ];
  assert.deepEqual(inForce(namings, 1800 * ms), ['demo/hog-1'], 'crossed before the pass that named api decided');
  assert.deepEqual(inForce(namings, 2100 * ms), ['demo/hog-1', 'demo/api'], 'just after it: the new order may not be placed yet');
  assert.deepEqual(inForce(namings, 2600 * ms), ['demo/api'], 'well after it: only the new one');
  assert.deepEqual(inForce(namings, 3100 * ms), ['demo/api'], 'withdrawn a moment before: the withdrawal may not be in the kernel yet');
  assert.deepEqual(inForce(namings, 3600 * ms), [], 'withdrawn: nothing to check against');
  assert.deepEqual(inForce(namings, 500 * ms), [], 'before any naming: nothing to check against');
  assert.deepEqual(inForce(namings, Infinity), [], 'no crossing time: the last pass, which named none');
});

/** The real demo recording whose passes 3 and 6 confirm hog-1's and hog-2's kills (4 and 7 again), with pass lines changed. */
function fixture(change: (pass: Record<string, unknown>, n: number) => void): string {
  let n = 0;
  return (
    fs
      .readFileSync(path.join(__dirname, '..', '..', '..', 'test', 'unit', 'fixtures', 'demo-reconfirmed.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const o = JSON.parse(l) as Record<string, unknown>;
        if ('at' in o) change(o, ++n);
        return JSON.stringify(o);
      })
      .join('\n') + '\n'
  );
}

const confirms = (r: ReturnType<typeof replay>) => r.differences.filter((d) => d.what === 'confirm');

test('a use on the pod its line named replays clean; on a pod no order named, it is a difference', () => {
  assert.deepEqual(confirms(replay(readRecording(fixture(() => undefined)))), []);
  const tampered = replay(
    readRecording(
      fixture((p, n) => {
        if (n === 6) (p.confirmed as { pod: string }[])[0]!.pod = 'demo/web-guaranteed';
      }),
    ),
  );
  assert.deepEqual(
    confirms(tampered).map((d) => [d.pass, d.recorded, d.replayed]),
    [[6, ['order on memory.available[0] used on demo/web-guaranteed'], ['order on memory.available[0] named demo/hog-2']]],
  );
});

test('a use confirmed after a later pass named another pod is checked against the order in force at its crossing', () => {
  // Pass 8 (15.5 s) confirms a use on hog-1, after pass 5 named hog-2 (passes 6 and 7 confirm
  // nothing here). Crossed at 1.5 s, while pass 2's order on hog-1 stood: clean, though the last
  // order named before pass 8 was hog-2's. Crossed at 5.426 s, under pass 5's order: a difference.
  const late = replay(
    readRecording(
      fixture((p, n) => {
        if (n === 6 || n === 7) delete p.confirmed;
        if (n === 8) p.confirmed = [{ line: 'memory.available[0]', pod: 'demo/hog-1', availableBytes: 100 * 2 ** 20, crossedAt: '1.5s', reported: true }];
      }),
    ),
  );
  assert.deepEqual(confirms(late), [], JSON.stringify(late.differences));
  const wrong = replay(
    readRecording(
      fixture((p, n) => {
        if (n === 6 || n === 7) delete p.confirmed;
        if (n === 8)
          p.confirmed = [{ line: 'memory.available[0]', pod: 'demo/hog-1', availableBytes: 100 * 2 ** 20, crossedAt: '5.426375058s', reported: true }];
      }),
    ),
  );
  assert.deepEqual(
    confirms(wrong).map((d) => d.replayed),
    [['order on memory.available[0] named demo/hog-2']],
  );
});
