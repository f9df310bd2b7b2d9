import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watchCgroupEvents } from '../../src/kernel/cgroup-events';
import { watchOom } from '../../src/kernel/memcg';
import { parseCounters } from '../../src/kernel/counters';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { skipped } from '../support/environment';
import { MiB, missingKernel, Recorder, v1Root, v2Root } from './support';

test('the memcg OOM notification reports a real OOM kill in a tiny memcg', async (t) => {
  if (skipped(t, missingKernel({ memcg: true }))) return;
  const cg = ScratchCgroup.create(v1Root(), 'test', 1);
  t.after(() => cg.remove());
  cg.write('memory.limit_in_bytes', 16 * MiB);
  const w = watchOom(cg.dir);
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());

  // Without swap the allocation past the limit is OOM-killed: the reply never comes.
  hog.alloc(256 * MiB).catch(() => undefined);
  const exit = await hog.exited;
  assert.equal(exit.signal, 'SIGKILL', 'the kernel OOM-killed the workload');
  const e = await rec.waitEvent(() => true, 5000);
  assert.equal(e.kind, 'memcg-oom');
  assert.equal(e.source, cg.file('memory.oom_control'));
  assert.ok(e.counters !== undefined && 'oom_kill' in e.counters && 'under_oom' in e.counters, JSON.stringify(e.counters));
  assert.ok((parseCounters(cg.read('memory.oom_control')).oom_kill ?? 0) >= 1);
});

test('cgroup.events reports a cgroup emptying (populated 1 -> 0)', async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true }))) return;
  const cg = ScratchCgroup.create(v2Root(), 'test', 2);
  t.after(() => cg.remove());
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  assert.equal(parseCounters(cg.read('cgroup.events')).populated, 1);
  const w = watchCgroupEvents(cg.file('cgroup.events'));
  t.after(() => w.close());
  const rec = new Recorder(w);
  const exitNs = await hog.exit();
  const e = await rec.waitEvent((ev) => ev.counters?.populated === 0, 5000);
  assert.equal(e.kind, 'cgroup-events');
  assert.equal(e.counters?.frozen, 0);
  assert.ok(e.monotonicNs > exitNs, 'the event comes after the workload exited');
});
