import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watchCgroupEvents } from '../../src/kernel/cgroup-events';
import { watchOom } from '../../src/kernel/memcg';
import { parseCounters } from '../../src/kernel/counters';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { skipped, slow } from '../support/environment';
import { memory, MiB, missingKernel, Recorder, v2Root } from './support';

test('the memcg OOM notification reports a real OOM kill in a tiny memcg', async (t) => {
  if (skipped(t, missingKernel({ memory: true }))) return;
  // v1: memory.oom_control's eventfd; pure v2: memory.events, whose oom_kill counter wakes poll().
  const mem = memory();
  const cg = ScratchCgroup.create(mem.root, 'test', mem.version);
  t.after(() => cg.remove());
  cg.write(mem.limit, 16 * MiB);
  const w = mem.version === 1 ? watchOom(cg.dir) : watchCgroupEvents(cg.file('memory.events'));
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());

  // Without swap the allocation past the limit is OOM-killed: the reply never comes.
  hog.alloc(256 * MiB).catch(() => undefined);
  const exit = await hog.exited;
  assert.equal(exit.signal, 'SIGKILL', 'the kernel OOM-killed the workload');
  if (mem.version === 1) {
    const e = await rec.waitEvent(() => true, slow(5000));
    assert.equal(e.kind, 'memcg-oom');
    assert.equal(e.source, cg.file('memory.oom_control'));
    assert.ok(e.counters !== undefined && 'oom_kill' in e.counters && 'under_oom' in e.counters, JSON.stringify(e.counters));
    assert.ok((parseCounters(cg.read('memory.oom_control')).oom_kill ?? 0) >= 1);
  } else {
    // memory.max is also hit on the way (the "max" counter): wait for the event that shows the kill.
    const e = await rec.waitEvent((ev) => (ev.counters?.oom_kill ?? 0) >= 1, slow(5000));
    assert.equal(e.kind, 'memory-events');
    assert.equal(e.source, cg.file('memory.events'));
    assert.ok((e.counters?.oom ?? 0) >= 1 && (e.counters?.max ?? 0) >= 1, JSON.stringify(e.counters));
    assert.ok((parseCounters(cg.read('memory.events')).oom_kill ?? 0) >= 1);
  }
  assert.equal(rec.errors.length, 0);
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
  const e = await rec.waitEvent((ev) => ev.counters?.populated === 0, slow(5000));
  assert.equal(e.kind, 'cgroup-events');
  assert.equal(e.counters?.frozen, 0);
  assert.ok(e.monotonicNs > exitNs, 'the event comes after the workload exited');
});
