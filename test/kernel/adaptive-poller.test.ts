import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pollMarginBytes, watchAdaptivePoll } from '../../src/kernel/adaptive-poller';
import { rootUsageBytes } from '../../src/kernel/kubelet-memory';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { cgroup2Root, memcgV1Root, needsPureV2, skipped } from '../support/environment';
import { MiB, missingKernel, Recorder, sleep } from './support';

// The adaptive poller on real cgroups: v1's memory.usage_in_bytes on a hybrid host, v2's
// memory.current in the pure v2 VM, and the machine's usage for a cgroup2 root.

function memoryCgroup(): { root: string; version: 1 | 2; usage: string } | null {
  const v1 = memcgV1Root();
  if (v1 !== null) return { root: v1, version: 1, usage: 'memory.usage_in_bytes' };
  const v2 = cgroup2Root();
  if (v2 !== null && v2 === '/sys/fs/cgroup') return { root: v2, version: 2, usage: 'memory.current' };
  return null;
}

function missing(): string | null {
  return missingKernel() ?? (memoryCgroup() === null ? 'no memory cgroup (v1 memory controller or pure cgroup2)' : null);
}

test('the adaptive poller sees a ramp cross the line within its margin, and the way back', async (t) => {
  if (skipped(t, missing())) return;
  const m = memoryCgroup()!;
  const cg = ScratchCgroup.create(m.root, 'adaptive', m.version);
  t.after(() => cg.remove());
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const base = Number(cg.read(m.usage));
  const line = base + 32 * MiB;
  const w = watchAdaptivePoll(cg.dir, line);
  t.after(() => w.close());
  assert.equal(w.lineMechanism, 'adaptive-poll');
  const rec = new Recorder(w);
  await hog.alloc(96 * MiB);
  const up = await rec.waitEvent(() => true, 5000);
  assert.equal(up.counters?.above, 1);
  const past = (up.counters?.usage_bytes ?? 0) - line;
  assert.ok(past >= 0, 'seen at or above the line');
  // The workload allocates 96 MiB in one go, far below 10 GiB/s: the margin holds.
  assert.ok(past <= pollMarginBytes(), `${past} B past the line, margin ${pollMarginBytes()} B`);
  assert.ok(w.lastDelayMs < 100, `near the line the poller reads every ${w.lastDelayMs} ms (< a fixed 100 ms)`);
  const n = rec.events.length;
  await hog.free();
  const down = await rec.waitEvent(() => true, 5000, n);
  assert.equal(down.counters?.above, 0);
});

test('far from the line the adaptive poller idles at its slowest rate', async (t) => {
  if (skipped(t, missing())) return;
  const m = memoryCgroup()!;
  const cg = ScratchCgroup.create(m.root, 'adaptive-idle', m.version);
  t.after(() => cg.remove());
  const w = watchAdaptivePoll(cg.dir, Number(cg.read(m.usage)) + 64 * 1024 * MiB);
  t.after(() => w.close());
  await sleep(2500);
  assert.ok(w.reads <= 4, `${w.reads} reads in 2.5 s, 64 GiB from the line`);
  assert.equal(w.lastDelayMs, 1000);
});

test("on the cgroup v2 root the adaptive poller reads the kubelet's usage there (memory.stat anon + file)", async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true })) || needsPureV2(t)) return;
  const root = cgroup2Root()!;
  const w = watchAdaptivePoll(root, rootUsageBytes() + 64 * 1024 * MiB);
  t.after(() => w.close());
  assert.equal(w.source, `${root}/memory.stat`);
  await sleep(50);
  assert.ok(w.reads >= 1);
});
