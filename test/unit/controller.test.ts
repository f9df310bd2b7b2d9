import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, type PassTrigger } from '../../src/agent/controller';
import { FakeClock } from '../support/fake-node';
import { waitFor } from '../support/wait';

/** A fake pass that records its triggers, tracks overlap and takes `ms` per pass. */
function fakePass(ms: number) {
  const triggers: PassTrigger[] = [];
  let active = 0;
  let maxActive = 0;
  const fn = async (t: PassTrigger) => {
    triggers.push(t);
    active++;
    maxActive = Math.max(maxActive, active);
    await sleep(ms);
    active--;
  };
  return { fn, triggers, maxActive: () => maxActive };
}

test('one notification schedules one pass', async () => {
  const p = fakePass(1);
  const c = new Controller(p.fn, { housekeepingIntervalMs: 60_000 });
  c.start();
  await c.idle();
  assert.equal(p.triggers.length, 1);
  assert.deepEqual(p.triggers[0]!.sources, { start: 1 });
  c.notify('memcg-threshold', 123n);
  await c.idle();
  assert.equal(p.triggers.length, 2);
  assert.deepEqual(p.triggers[1]!.sources, { 'memcg-threshold': 1 });
  assert.equal(p.triggers[1]!.firstEventNs, 123n);
  await c.stop();
});

test('notifications in the same turn share one pass', async () => {
  const p = fakePass(1);
  const c = new Controller(p.fn, { housekeepingIntervalMs: 60_000 });
  c.start();
  await c.idle();
  c.notify('a');
  c.notify('b');
  c.notify('a');
  await c.idle();
  assert.equal(p.triggers.length, 2);
  assert.deepEqual(p.triggers[1]!.sources, { a: 2, b: 1 });
  await c.stop();
});

test('events during a pass merge into exactly one follow-up pass; passes never overlap', async () => {
  const p = fakePass(50);
  const c = new Controller(p.fn, { housekeepingIntervalMs: 60_000 });
  c.start();
  await sleep(10); // the first pass is running now
  c.notify('psi', 500n);
  c.notify('memcg-threshold', 400n);
  c.notify('psi', 600n, 3);
  await c.idle();
  assert.equal(p.triggers.length, 2);
  assert.deepEqual(p.triggers[1]!.sources, { psi: 4, 'memcg-threshold': 1 });
  assert.equal(p.triggers[1]!.firstEventNs, 400n, 'the earliest event time is kept');
  assert.equal(p.maxActive(), 1);
  assert.equal(c.stats.merged, 4);
  await c.stop();
});

test('the housekeeping tick runs a pass when nothing else does, never more often than its interval', async () => {
  // On a clock the test steps: the tick's interval is counted from the end of the last pass.
  const clock = new FakeClock();
  const at: bigint[] = [];
  const c = new Controller(
    async (t) => {
      if (t.sources.housekeeping) at.push(clock.now());
    },
    { housekeepingIntervalMs: 40, clock },
  );
  c.start();
  await c.idle();
  const t0 = clock.now();
  await clock.step(39);
  assert.deepEqual(at, [], 'not before its interval');
  await clock.step(1);
  await c.idle();
  assert.deepEqual(at, [t0 + 40_000_000n]);
  // A pass woken by something else puts the next tick a whole interval after it.
  await clock.step(20);
  c.notify('psi');
  await c.idle();
  await clock.step(39);
  assert.equal(at.length, 1);
  await clock.step(1);
  await c.idle();
  assert.deepEqual(at, [t0 + 40_000_000n, t0 + 100_000_000n]);
  await c.stop();
  await clock.step(1000);
  assert.equal(at.length, 2, 'no pass after stop');
});

test('a pass that throws is reported and the loop goes on', async () => {
  const errors: unknown[] = [];
  let calls = 0;
  const c = new Controller(
    async () => {
      calls++;
      if (calls === 1) throw new Error('runtime gone');
    },
    { housekeepingIntervalMs: 60_000, onError: (e) => errors.push(e) },
  );
  c.start();
  await c.idle();
  c.notify('x');
  await c.idle();
  assert.equal(calls, 2);
  assert.equal(errors.length, 1);
  assert.equal(c.stats.errors, 1);
  await c.stop();
});

test('a pass can ask to run again at once', async () => {
  let calls = 0;
  const seen: PassTrigger[] = [];
  const c = new Controller(
    async (t) => {
      seen.push(t);
      calls++;
      return { again: calls < 3 };
    },
    { housekeepingIntervalMs: 60_000 },
  );
  c.start();
  await c.idle();
  assert.equal(calls, 3);
  assert.deepEqual(seen[1]!.sources, { again: 1 });
  await c.stop();
});

test('stop waits for the running pass', async () => {
  let started = false;
  let finished = false;
  const c = new Controller(
    async () => {
      started = true;
      await sleep(60);
      finished = true;
    },
    { housekeepingIntervalMs: 60_000 },
  );
  c.start();
  await waitFor('the first pass to start', () => started, 10_000);
  await c.stop();
  assert.equal(finished, true);
});

test('an event storm (100k+ notifications a second) stays one pass at a time with bounded memory', async () => {
  const p = fakePass(20);
  const c = new Controller(p.fn, { housekeepingIntervalMs: 60_000 });
  c.start();
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const deadline = Date.now() + 1000;
  let sent = 0;
  while (Date.now() < deadline) {
    for (let i = 0; i < 10_000; i++) c.notify(`src${i % 100}`, BigInt(i));
    sent += 10_000;
    await new Promise((r) => setImmediate(r));
  }
  const heapDuring = process.memoryUsage().heapUsed;
  await c.idle();
  await c.stop();
  assert.ok(sent >= 100_000, `sent ${sent}`);
  assert.equal(p.maxActive(), 1);
  // Passes take 20 ms: about 50 in a second, never one per event.
  assert.ok(p.triggers.length <= 80, `passes ${p.triggers.length}`);
  const total = p.triggers.reduce((s, t) => s + Object.values(t.sources).reduce((a, b) => a + b, 0), 0);
  assert.equal(total, sent + 1, 'every notification is accounted for in some pass');
  for (const t of p.triggers) assert.ok(Object.keys(t.sources).length <= 65);
  assert.ok(heapDuring - heapBefore < 32 * 1024 * 1024, `heap grew ${heapDuring - heapBefore} bytes`);
});
