import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { watchUsageThreshold } from '../../src/kernel/select';
import { parseCounters } from '../../src/kernel/counters';
import { pollCounters, pollMemoryUsage } from '../../src/kernel/polling';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { missingRoot, skipped, slow } from '../support/environment';
import { memory, memoryHierarchy, MiB, Recorder, v2Root } from './support';

test('parseCounters reads single values, flat keyed files and PSI lines', () => {
  assert.deepEqual(parseCounters('123\n', 'usage_in_bytes'), { usage_in_bytes: 123 });
  assert.deepEqual(parseCounters('populated 1\nfrozen 0\n'), { populated: 1, frozen: 0 });
  assert.deepEqual(parseCounters('some avg10=1.50 avg60=0.00 avg300=0.00 total=42\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n'), {
    some_avg10: 1.5,
    some_avg60: 0,
    some_avg300: 0,
    some_total: 42,
    full_avg10: 0,
    full_avg60: 0,
    full_avg300: 0,
    full_total: 7,
  });
});

test('the polling fallback reports usage crossings both ways, and cgroup.events changes', async (t) => {
  if (skipped(t, missingRoot() ?? (memoryHierarchy() === null ? 'no memory controller' : null))) return;
  // It polls memory.usage_in_bytes on v1, memory.current on pure v2.
  const mem = memory();
  const cg = ScratchCgroup.create(mem.root, 'test', mem.version);
  t.after(() => cg.remove());
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const threshold = Number(cg.read(mem.usage)) + 16 * MiB;
  const w = pollMemoryUsage(cg.dir, threshold, 20);
  t.after(() => w.close());
  assert.equal(w.mechanism, 'polling');
  assert.equal(w.source, cg.file(mem.usage));
  const key = mem.usage.replace(/^memory\./, '');
  const rec = new Recorder(w);
  await hog.alloc(32 * MiB);
  const up = await rec.waitEvent(() => true, slow(5000));
  assert.ok((up.counters?.[key] ?? 0) >= threshold);
  await hog.free();
  const down = await rec.waitEvent((e) => (e.counters?.[key] ?? Infinity) < threshold, slow(5000));
  assert.equal(down.kind, 'memcg-threshold');

  const v2 = ScratchCgroup.create(v2Root(), 'test', 2);
  t.after(() => v2.remove());
  const hog2 = await Memhog.start([v2.dir]);
  const events = new Recorder(pollCounters(v2.file('cgroup.events'), 20));
  t.after(() => events.watcher.close());
  await hog2.exit();
  const e = await events.waitEvent((ev) => ev.counters?.populated === 0, slow(5000));
  assert.equal(e.kind, 'cgroup-events');
  await v2.remove();
  const err = (await events.waitError(slow(5000))) as NodeJS.ErrnoException;
  assert.equal(err.code, 'ENOENT');
});

test('without a kernel mechanism the usage threshold falls back to the adaptive poller and says so', async (t) => {
  // A stand-in cgroup dir (a cgroup v2 memory.current file in a temp dir): this unit test is about
  // the selection and the poller, not the kernel.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-v2-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'memory.current'), String(10 * MiB));
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const w = watchUsageThreshold(dir, 20 * MiB, {
    intervalMs: 10,
    log: { warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }) },
  });
  t.after(() => w.close());
  assert.equal(w.mechanism, 'polling');
  assert.equal(w.lineMechanism, 'adaptive-poll');
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0].fields.mechanism, 'adaptive-poll');
  assert.match(String(warnings[0].fields.reason), /cgroup\.event_control/);
  const rec = new Recorder(w);
  fs.writeFileSync(path.join(dir, 'memory.current'), String(30 * MiB));
  const e = await rec.waitEvent(() => true, slow(2000));
  assert.equal(e.counters?.usage_bytes, 30 * MiB);
});
