import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { rootWorkingSetBytes } from '../../src/kernel/kubelet-memory';
import { tripwireStatus, tripwireUnavailable, watchTripwire } from '../../src/kernel/tripwire';
import type { OrderEvent } from '../../src/kernel/types';
import { measureReader } from '../../src/kernel/working-set';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { readCgroupMemory } from '../../src/node/memory';
import { needsPureV2, skipped, slow } from '../support/environment';
import { MiB, missingKernel, Recorder, scratchDir, sleep, victimPod, writePageCache } from './support';

// Working-set lines: the tripwire compares the kubelet's own number, computed by the BPF
// program at each charge (enum tripwire_measure, native/bpf/memcg_tripwire.h), not usage. Pure
// cgroup v2 only (the VM), as the other tripwire tests.

const V2 = '/sys/fs/cgroup';

function missingTripwire(): string | null {
  if (!fs.readFileSync(`${V2}/cgroup.subtree_control`, 'utf8').includes('memory'))
    return 'the memory controller is not enabled for children of the cgroup2 root';
  const why = tripwireUnavailable();
  return why === null ? null : `memcg tripwire unavailable: ${why}`;
}

test("a node working-set line on the v2 root: page cache does not cross it, anonymous memory does, at the kubelet's number", async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const cg = ScratchCgroup.create(V2, 'tripwire-ws-node', 2);
  t.after(() => cg.remove());
  const file = path.join(scratchDir(), `evictd-ws-node-${process.pid}.bin`);
  t.after(() => fs.rmSync(file, { force: true }));
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());

  const ws0 = rootWorkingSetBytes();
  const line = ws0 + 96 * MiB;
  const w = watchTripwire(V2, line, 'working-set');
  t.after(() => w.close());
  assert.equal(w.measure, 'working-set');
  const rec = new Recorder(w);
  // What evictd computes for the node (src/node/memory.ts) is the same number.
  const node = readCgroupMemory(V2, 2, { root: true })!;
  assert.ok(Math.abs(node.workingSetBytes - rootWorkingSetBytes()) < 8 * MiB, 'readCgroupMemory(root) and rootWorkingSetBytes() agree');

  // 160 MiB of clean page cache: usage (MemTotal - MemFree) passes where a usage line would be,
  // the kubelet's working set does not move by much (written pages land on the inactive list).
  const usage0 = measureReader(V2, 'usage').read();
  writePageCache(cg.dir, file, 160 * MiB);
  await sleep(200);
  const usage1 = measureReader(V2, 'usage').read();
  t.diagnostic(`page cache: usage +${((usage1 - usage0) / MiB).toFixed(1)} MiB, working set +${((rootWorkingSetBytes() - ws0) / MiB).toFixed(1)} MiB`);
  assert.ok(usage1 - usage0 > 96 * MiB, 'usage passed a line 96 MiB up');
  assert.equal(rec.events.filter((e) => e.counters?.above === 1).length, 0, 'page cache alone does not cross a working-set line');

  // Anonymous memory does.
  await hog.alloc(160 * MiB);
  const up = await rec.waitEvent((e) => e.counters?.above === 1, 10_000);
  const at = up.counters!.usage_bytes;
  const now = rootWorkingSetBytes();
  t.diagnostic(
    `crossing: the program computed ${(at / MiB).toFixed(2)} MiB, line ${(line / MiB).toFixed(2)} MiB (${((at - line) / MiB).toFixed(2)} MiB past); /proc/meminfo right after: ${(now / MiB).toFixed(2)} MiB`,
  );
  assert.ok(at >= line, 'fired at or past the line');
  // One anonymous charge batch (64 pages per CPU, 2 MiB for a huge page) plus the per-CPU
  // vmstat deltas not yet folded into the global counters (/proc/meminfo has the same lag).
  assert.ok(at - line < 8 * MiB, `fired ${(at - line) / MiB} MiB past the line`);
  assert.ok(now >= line - 8 * MiB, '/proc/meminfo agrees the working set is at the line');
});

test("a cgroup working-set line fires when its working set crosses, while usage sits flat at the cgroup's limit", async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const cg = ScratchCgroup.create(V2, 'tripwire-ws-pod', 2);
  t.after(() => cg.remove());
  cg.write('memory.max', 256 * MiB);
  const file = path.join(scratchDir(), `evictd-ws-pod-${process.pid}.bin`);
  t.after(() => fs.rmSync(file, { force: true }));
  // Page cache fills the cgroup up to near its limit.
  writePageCache(cg.dir, file, 224 * MiB);
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const read = measureReader(cg.dir, 'working-set').read;
  const ws0 = read();
  const line = ws0 + 96 * MiB;
  const w = watchTripwire(cg.dir, line, 'working-set');
  t.after(() => w.close());
  const rec = new Recorder(w);
  const usageBefore = Number(cg.read('memory.current'));

  // Anonymous memory replaces the page cache: the counter stays at the limit (the cgroup reclaims
  // its own cache), the working set climbs through the line.
  await hog.alloc(160 * MiB);
  const up = await rec.waitEvent((e) => e.counters?.above === 1, 10_000);
  const at = up.counters!.usage_bytes;
  // memory.stat read now folds the kernel's statistics: the fresh working set.
  const fresh = read();
  const usageAfter = Number(cg.read('memory.current'));
  t.diagnostic(
    `usage ${(usageBefore / MiB).toFixed(1)} -> ${(usageAfter / MiB).toFixed(1)} MiB; the program computed ${(at / MiB).toFixed(2)} MiB at the crossing, line ${(line / MiB).toFixed(2)}; fresh working set after ${(fresh / MiB).toFixed(2)} MiB`,
  );
  assert.ok(usageBefore > 200 * MiB, 'the cgroup was near its limit before');
  assert.ok(at >= line, 'fired at or past the line');
  // inactive_file as last folded lags the truth: the program's working set is at most that lag
  // ahead of or behind the kubelet's; the event still fires within a few MiB of the line.
  assert.ok(at - line < 8 * MiB, `fired ${(at - line) / MiB} MiB past the line`);
  assert.ok(fresh >= line - 8 * MiB, `the kubelet's working set ${fresh / MiB} MiB is at the line when it fired`);
});

/** A victim "pod": a cgroup with one sleeping process. */
async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await sleep(5);
}

test('a standing order kills its pod from the order thread at the crossing, while the JS loop is blocked', async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const hogCg = ScratchCgroup.create(V2, 'tripwire-order-hog', 2);
  const victim = victimPod(t, 'tripwire-order-victim');
  await waitFor(() => victim.cg.pids().length === 1, 5000);
  const hog = await Memhog.start([hogCg.dir]);
  const line = Number(hogCg.read('memory.current')) + 32 * MiB;
  const w = watchTripwire(hogCg.dir, line, 'working-set');
  // The line before its cgroup: removing a watched cgroup ends the line with an error.
  t.after(async () => {
    await w.close();
    hog.kill();
    await hog.exited;
    await hogCg.remove();
  });
  const orders: OrderEvent[] = [];
  w.on('order', (o: OrderEvent) => orders.push(o));
  assert.equal(w.setOrder!(victim.cg.dir, 30_000), true, 'the order is placed');

  // The hog ramps in its own process; this loop is busy until the victim is gone, as during a
  // long pass (not a fixed window: a loaded machine slows the hog's ramp, not the kill).
  const alloc = hog.alloc(96 * MiB);
  const busyUntil = process.hrtime.bigint() + BigInt(slow(10_000)) * 1_000_000n;
  let victimGoneAt: bigint | null = null;
  while (victimGoneAt === null && process.hrtime.bigint() < busyUntil) {
    if (victim.cg.pids().length === 0) victimGoneAt = process.hrtime.bigint();
  }
  await alloc;
  await waitFor(() => orders.length > 0, 5000);
  assert.ok(victimGoneAt !== null, 'the victim was killed while the JS loop was blocked');
  assert.equal(await victim.exited, 'SIGKILL');
  assert.equal(orders.length, 1, 'one order, one use');
  const o = orders[0];
  assert.equal(o.errno, 0);
  assert.equal(o.podCgroupDir, victim.cg.dir);
  assert.ok(o.usageBytes >= line && o.lineBytes <= line + 4096, `crossed at ${o.usageBytes} for line ${o.lineBytes}`);
  assert.ok(o.killedNs >= o.firedNs && o.firedNs >= o.chargeBeganNs, 'charge began <= fired <= killed');
  assert.ok(o.killedNs <= victimGoneAt!, 'killed before the loop saw the victim gone');
  t.diagnostic(
    `crossing charge -> kill written: ${(Number(o.killedNs - o.chargeBeganNs) / 1e3).toFixed(0)} µs (fired -> killed ${(Number(o.killedNs - o.firedNs) / 1e3).toFixed(0)} µs), order age ${(Number(o.firedNs - o.placedNs) / 1e6).toFixed(0)} ms; unlisted at the kill ${(o.unlistedBytes / MiB).toFixed(2)} MiB`,
  );
});

test("the node's lines are re-checked in the kernel every millisecond while the root has lines, and only then", async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  // A line on another cgroup keeps the program loaded once the root's line is gone.
  const cg = ScratchCgroup.create(V2, 'tripwire-node-poll', 2);
  const other = watchTripwire(cg.dir, 1024 * MiB, 'usage');
  t.after(async () => {
    await other.close();
    await cg.remove();
  });
  const polls = () => tripwireStatus().nodePolls ?? 0;
  const node = watchTripwire(V2, rootWorkingSetBytes() + 512 * MiB, 'working-set');
  assert.equal(tripwireStatus().nodePollNs, 1_000_000, 'the poll period: 1 ms');
  // Arming the root's line starts the poll (the addon runs the program's start; no charge does).
  await sleep(100);
  const p0 = polls();
  await sleep(500);
  const made = polls() - p0;
  t.diagnostic(`${made} polls of the node's lines in 500 ms`);
  assert.ok(made >= 100, `the node's lines are polled about every millisecond (${made} in 500 ms)`);
  await node.close();
  await sleep(50);
  const p1 = polls();
  await sleep(300);
  assert.equal(polls(), p1, 'no root line: the poll stopped itself');
  // A new root line starts it again.
  const again = watchTripwire(V2, rootWorkingSetBytes() + 512 * MiB, 'working-set');
  t.after(() => again.close());
  await sleep(100);
  const p2 = polls();
  await sleep(500);
  const resumed = polls() - p2;
  assert.ok(resumed >= 100, `a new root line restarts the poll (${resumed} polls in 500 ms)`);
  assert.equal(tripwireStatus().nodePollError ?? 0, 0, 'no start of the poll failed');
});

test('a standing order is never used once expired or withdrawn', async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const hogCg = ScratchCgroup.create(V2, 'tripwire-order-hog2', 2);
  const expired = victimPod(t, 'tripwire-order-expired');
  const withdrawn = victimPod(t, 'tripwire-order-withdrawn');
  await waitFor(() => expired.cg.pids().length === 1 && withdrawn.cg.pids().length === 1, 5000);
  const hog = await Memhog.start([hogCg.dir]);
  const base = Number(hogCg.read('memory.current'));
  const a = watchTripwire(hogCg.dir, base + 16 * MiB, 'working-set');
  const b = watchTripwire(hogCg.dir, base + 24 * MiB, 'working-set');
  t.after(async () => {
    await Promise.all([a.close(), b.close()]);
    hog.kill();
    await hog.exited;
    await hogCg.remove();
  });
  const used: OrderEvent[] = [];
  a.on('order', (o: OrderEvent) => used.push(o));
  b.on('order', (o: OrderEvent) => used.push(o));
  assert.equal(a.setOrder!(expired.cg.dir, 20), true);
  assert.equal(b.setOrder!(withdrawn.cg.dir, 30_000), true);
  assert.equal(b.setOrder!(null), true);
  await sleep(100);
  await hog.alloc(64 * MiB);
  await sleep(300);
  assert.equal(used.length, 0, 'no order used');
  assert.equal(expired.cg.pids().length, 1, 'the expired order killed nobody');
  assert.equal(withdrawn.cg.pids().length, 1, 'the withdrawn order killed nobody');
});

test('a working-set line re-armed at or below its measure reports the crossing (its in-flight event is dropped by the re-arm)', async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const cg = ScratchCgroup.create(V2, 'tripwire-ws-rearm', 2);
  const hog = await Memhog.start([cg.dir]);
  const read = measureReader(cg.dir, 'working-set').read;
  const w = watchTripwire(cg.dir, read() + 256 * MiB, 'working-set');
  t.after(async () => {
    await w.close();
    hog.kill();
    await hog.exited;
    await cg.remove();
  });
  const rec = new Recorder(w);
  await hog.alloc(32 * MiB);
  await sleep(200);
  assert.equal(rec.events.length, 0, 'far below the line: nothing');
  const line = read() - 8 * MiB;
  await w.rearm(line);
  const e = await rec.waitEvent((x) => x.counters?.above === 1, 5000);
  assert.ok(e.counters!.usage_bytes >= line, 'the event carries the fresh working set, past the line');
});
