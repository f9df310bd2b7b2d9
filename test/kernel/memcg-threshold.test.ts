import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { watchMemcgThreshold } from '../../src/kernel/memcg';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { skipped } from '../support/environment';
import { MiB, missingKernel, Recorder, sleep, v1Root } from './support';

async function setup(t: { after(fn: () => Promise<void> | void): void }) {
  const cg = ScratchCgroup.create(v1Root(), 'test', 1);
  t.after(() => cg.remove());
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const base = Number(cg.read('memory.usage_in_bytes'));
  return { cg, hog, base };
}

test('a memcg threshold fires when a child allocation crosses it, and again when usage falls', async (t) => {
  if (skipped(t, missingKernel({ memcg: true }))) return;
  const { cg, hog, base } = await setup(t);
  const threshold = base + 32 * MiB;
  const w = watchMemcgThreshold(cg.dir, threshold);
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();

  const before = process.hrtime.bigint();
  await hog.alloc(64 * MiB);
  const up = await rec.waitEvent(() => true, 5000);
  assert.equal(up.kind, 'memcg-threshold');
  assert.equal(up.source, cg.file('memory.usage_in_bytes'));
  assert.ok(up.count >= 1);
  assert.ok(up.monotonicNs > before && up.monotonicNs <= process.hrtime.bigint(), 'timestamp on CLOCK_MONOTONIC, within the step');
  assert.ok((up.counters?.usage_in_bytes ?? 0) >= threshold, `usage at the event ${up.counters?.usage_in_bytes} >= ${threshold}`);

  const n = rec.events.length;
  await hog.free();
  const down = await rec.waitEvent((e) => (e.counters?.usage_in_bytes ?? Infinity) < threshold, 5000, n);
  assert.equal(down.kind, 'memcg-threshold');
  assert.equal(rec.errors.length, 0);
});

test('several thresholds on one cgroup each fire', async (t) => {
  if (skipped(t, missingKernel({ memcg: true }))) return;
  const { cg, hog, base } = await setup(t);
  const low = new Recorder(watchMemcgThreshold(cg.dir, base + 16 * MiB));
  const high = new Recorder(watchMemcgThreshold(cg.dir, base + 48 * MiB));
  const never = new Recorder(watchMemcgThreshold(cg.dir, base + 512 * MiB));
  t.after(() => Promise.all([low.watcher.close(), high.watcher.close(), never.watcher.close()]).then(() => undefined));
  await Promise.all([low.watcher.ready(), high.watcher.ready(), never.watcher.ready()]);
  await hog.alloc(64 * MiB);
  await low.waitEvent(() => true, 5000);
  await high.waitEvent(() => true, 5000);
  await sleep(200);
  assert.equal(never.events.length, 0, 'a threshold above the usage does not fire');
});

test('rearm keeps the old threshold reporting until the new one is in force', async (t) => {
  if (skipped(t, missingKernel({ memcg: true }))) return;
  const { cg, hog, base } = await setup(t);
  const w = watchMemcgThreshold(cg.dir, base + 16 * MiB);
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();
  // Cross the old line while the new registration is being written: the old one reports it.
  const rearmed = w.rearm(base + 512 * MiB);
  await hog.alloc(32 * MiB);
  await rec.waitEvent(() => true, 5000);
  await rearmed;
});

test('rearm moves the threshold: the old one stops firing, the new one fires', async (t) => {
  if (skipped(t, missingKernel({ memcg: true }))) return;
  const { cg, hog, base } = await setup(t);
  const w = watchMemcgThreshold(cg.dir, base + 16 * MiB);
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();
  await w.rearm(base + 96 * MiB);
  assert.equal(w.thresholdBytes, base + 96 * MiB);
  await hog.alloc(48 * MiB);
  await sleep(300);
  assert.equal(rec.events.length, 0, 'the old threshold (16 MiB) was released');
  await hog.alloc(64 * MiB);
  const e = await rec.waitEvent(() => true, 5000);
  assert.ok((e.counters?.usage_in_bytes ?? 0) >= base + 96 * MiB);
});

test('a memsw threshold fires where memory.memsw.usage_in_bytes exists', async (t) => {
  if (skipped(t, missingKernel({ memcg: true }))) return;
  const { cg, hog, base } = await setup(t);
  if (!fs.existsSync(cg.file('memory.memsw.usage_in_bytes'))) {
    t.skip('no memory.memsw.usage_in_bytes (swap accounting off)');
    return;
  }
  const w = watchMemcgThreshold(cg.dir, base + 16 * MiB, { memsw: true });
  t.after(() => w.close());
  const rec = new Recorder(w);
  assert.equal(w.source, cg.file('memory.memsw.usage_in_bytes'));
  await w.ready();
  await hog.alloc(32 * MiB);
  const e = await rec.waitEvent(() => true, 5000);
  assert.ok((e.counters?.memsw_usage_in_bytes ?? 0) >= base + 16 * MiB);
});
