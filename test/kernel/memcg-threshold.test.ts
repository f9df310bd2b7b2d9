import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { watchMemcgThreshold } from '../../src/kernel/memcg';
import type { OrderEvent } from '../../src/kernel/types';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { needsV1, skipped, slow } from '../support/environment';
import { readKubeletMemory } from '../../src/kernel/kubelet-memory';
import { MiB, missingKernel, Recorder, sleep, v1Root, victimPod } from './support';

/**
 * The kubelet's line, in working-set terms, of a usage line on `dir` as the agent arms it (the
 * working-set line plus inactive_file read now): an order's kill is confirmed against it.
 */
function wsLineOf(dir: string, usageLine: number): number {
  return usageLine - readKubeletMemory(dir, 'v1')!.inactiveFileBytes;
}

async function setup(t: { after(fn: () => Promise<void> | void): void }) {
  const cg = ScratchCgroup.create(v1Root(), 'test', 1);
  t.after(() => cg.remove());
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const base = Number(cg.read('memory.usage_in_bytes'));
  return { cg, hog, base };
}

test('a memcg threshold fires when a child allocation crosses it, and again when usage falls', async (t) => {
  if (skipped(t, missingKernel()) || needsV1(t)) return;
  const { cg, hog, base } = await setup(t);
  const threshold = base + 32 * MiB;
  const w = watchMemcgThreshold(cg.dir, threshold);
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();

  const before = process.hrtime.bigint();
  // 160 MiB past a line 32 MiB up: the ramp goes on well after the crossing, so "before the end"
  // below is a real bound (tens of ms), not a race with the last page
  const step = await hog.alloc(192 * MiB, cg.file('memory.usage_in_bytes'), threshold);
  const up = await rec.waitEvent(() => true, slow(5000));
  assert.equal(up.kind, 'memcg-threshold');
  assert.equal(up.source, cg.file('memory.usage_in_bytes'));
  assert.ok(up.count >= 1);
  assert.ok(up.monotonicNs > before && up.monotonicNs <= process.hrtime.bigint(), 'timestamp on CLOCK_MONOTONIC, within the step');
  // After the crossing: usage read at the event is at or past the line, and the wake-up is no
  // earlier than the allocation's start. Before the end: it came while the hog was still
  // allocating, with usage short of the ramp's top.
  const usage = up.counters?.usage_in_bytes ?? NaN;
  assert.ok(usage >= threshold, `usage at the event ${usage} >= the line ${threshold}`);
  assert.ok(step.crossNs > 0n, 'the hog stamped its crossing');
  assert.ok(up.monotonicNs >= step.startNs, 'the event followed the start of the allocation');
  assert.ok(up.monotonicNs < step.endNs, `the event (${up.monotonicNs}) came before the allocation ended (${step.endNs})`);
  assert.ok(usage < base + 192 * MiB, `usage at the event ${usage} below the ramp's top ${base + 192 * MiB}`);

  const n = rec.events.length;
  await hog.free();
  const down = await rec.waitEvent((e) => (e.counters?.usage_in_bytes ?? Infinity) < threshold, slow(5000), n);
  assert.equal(down.kind, 'memcg-threshold');
  assert.equal(rec.errors.length, 0);
});

test('several thresholds on one cgroup each fire', async (t) => {
  if (skipped(t, missingKernel()) || needsV1(t)) return;
  const { cg, hog, base } = await setup(t);
  const low = new Recorder(watchMemcgThreshold(cg.dir, base + 16 * MiB));
  const high = new Recorder(watchMemcgThreshold(cg.dir, base + 48 * MiB));
  const never = new Recorder(watchMemcgThreshold(cg.dir, base + 512 * MiB));
  t.after(() => Promise.all([low.watcher.close(), high.watcher.close(), never.watcher.close()]).then(() => undefined));
  await Promise.all([low.watcher.ready(), high.watcher.ready(), never.watcher.ready()]);
  await hog.alloc(64 * MiB);
  await low.waitEvent(() => true, slow(5000));
  await high.waitEvent(() => true, slow(5000));
  await sleep(200);
  assert.equal(never.events.length, 0, 'a threshold above the usage does not fire');
});

test('rearm leaves no gap: a crossing while the new line is being registered is reported', async (t) => {
  if (skipped(t, missingKernel()) || needsV1(t)) return;
  const { cg, hog, base } = await setup(t);
  const w = watchMemcgThreshold(cg.dir, base + 16 * MiB);
  t.after(() => w.close());
  const rec = new Recorder(w);
  await w.ready();
  // The allocation crosses the old line (16 MiB) and the new one (24 MiB) while the new
  // registration is written off the loop. Which of the two is in force at the crossing is a race;
  // that one of them reports it is not: the old registration is released only after the new one.
  const rearmed = w.rearm(base + 24 * MiB);
  const step = await hog.alloc(32 * MiB);
  const e = await rec.waitEvent(() => true, slow(5000));
  const usage = e.counters?.usage_in_bytes ?? NaN;
  assert.ok(usage >= base + 16 * MiB, `usage at the event ${usage} is past the old line ${base + 16 * MiB}`);
  assert.ok(e.monotonicNs >= step.startNs, 'the event followed the start of the crossing allocation');
  await rearmed;
  assert.equal(w.thresholdBytes, base + 24 * MiB, 'the new line is in force once rearm resolves');
  assert.equal(rec.errors.length, 0);
});

test('rearm moves the threshold: the old one stops firing, the new one fires', async (t) => {
  if (skipped(t, missingKernel()) || needsV1(t)) return;
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
  const e = await rec.waitEvent(() => true, slow(5000));
  assert.ok((e.counters?.usage_in_bytes ?? 0) >= base + 96 * MiB);
});

test('a memsw threshold fires where memory.memsw.usage_in_bytes exists', async (t) => {
  if (skipped(t, missingKernel()) || needsV1(t)) return;
  const { cg, hog, base } = await setup(t);
  if (skipped(t, fs.existsSync(cg.file('memory.memsw.usage_in_bytes')) ? null : 'no memory.memsw.usage_in_bytes (swap accounting off)')) return;
  const w = watchMemcgThreshold(cg.dir, base + 16 * MiB, { memsw: true });
  t.after(() => w.close());
  const rec = new Recorder(w);
  assert.equal(w.source, cg.file('memory.memsw.usage_in_bytes'));
  await w.ready();
  await hog.alloc(32 * MiB);
  const e = await rec.waitEvent(() => true, slow(5000));
  assert.ok((e.counters?.memsw_usage_in_bytes ?? 0) >= base + 16 * MiB);
});

test("a standing order on a memcg threshold kills its pod from the addon's thread at the crossing, while the JS loop is blocked", async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true })) || needsV1(t)) return;
  const { cg, hog, base } = await setup(t);
  const victim = victimPod(t, 'memcg-order-victim');
  const deadline = Date.now() + 5000;
  while (victim.cg.pids().length !== 1 && Date.now() < deadline) await sleep(5);
  const line = base + 32 * MiB;
  const w = watchMemcgThreshold(cg.dir, line);
  t.after(() => w.close());
  const orders: OrderEvent[] = [];
  w.on('order', (o: OrderEvent) => orders.push(o));
  // A re-arm carries the order to the new registration, at the new line (the kubelet's line moved
  // with it, as when capacity changes).
  const moved = base + 48 * MiB;
  const wsMoved = wsLineOf(cg.dir, moved);
  assert.equal(w.setOrder!(victim.cg.dir, 30_000, wsMoved), false, 'not before the registration is in force');
  await w.ready();
  assert.equal(w.setOrder!(victim.cg.dir, 30_000, wsMoved), true, 'the order is placed');
  await w.rearm(moved);

  // The hog allocates in its own process; this loop is busy until the victim is gone, as during a
  // long pass. Not a fixed window: on a loaded machine (a compile beside the suite) the hog took
  // more than 300 ms to reach the line, and the kill came after the loop had let go.
  const alloc = hog.alloc(96 * MiB);
  const busyFrom = process.hrtime.bigint();
  const busyUntil = busyFrom + BigInt(slow(10_000)) * 1_000_000n;
  let victimGoneAt: bigint | null = null;
  while (victimGoneAt === null && process.hrtime.bigint() < busyUntil) {
    if (victim.cg.pids().length === 0) victimGoneAt = process.hrtime.bigint();
  }
  await alloc;
  const until = Date.now() + 5000;
  while (orders.length === 0 && Date.now() < until) await sleep(5);
  assert.ok(victimGoneAt !== null, 'the victim was killed while the JS loop was blocked');
  assert.equal(await victim.exited, 'SIGKILL');
  assert.equal(orders.length, 1, 'one order, one use');
  const o = orders[0]!;
  assert.equal(o.errno, 0);
  assert.equal(o.podCgroupDir, victim.cg.dir);
  assert.equal(o.lineBytes, wsMoved, "the order's kill was checked against the kubelet's line");
  assert.ok(o.usageBytes >= wsMoved, `the working set at the kill ${o.usageBytes} is past the line ${wsMoved}`);
  assert.ok(o.killedNs >= o.firedNs && o.killedNs <= victimGoneAt!, 'woken <= killed, before the loop saw the victim gone');
  t.diagnostic(
    `eventfd wake-up -> kill written: ${(Number(o.killedNs - o.firedNs) / 1e3).toFixed(0)} µs, order age ${(Number(o.firedNs - o.placedNs) / 1e6).toFixed(0)} ms, loop blocked ${(Number(victimGoneAt! - busyFrom) / 1e6).toFixed(0)} ms until the victim was gone`,
  );
  // Once used, the order is spent: the way down and up again kill nobody else.
  await hog.free();
  await hog.alloc(96 * MiB);
  await sleep(100);
  assert.equal(orders.length, 1, 'a used order is never used again');
});

test("a memcg threshold's standing order kills within one charge batch of the crossing, though the kernel checks the threshold only every 512 KiB", async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true })) || needsV1(t)) return;
  const { cg, hog } = await setup(t);
  // 50 MiB/s: the kernel's check every 128 page events (512 KiB) is 10 ms of this ramp, its
  // eventfd alone 5 ms late on average. The order's thread reads the usage itself near the line.
  const rate = 50 * MiB;
  const usageFile = cg.file('memory.usage_in_bytes');
  const lateMs: number[] = [];
  const pastKiB: number[] = [];
  for (let i = 0; i < 5; i++) {
    const victim = victimPod(t, `memcg-order-batch-${i}`);
    const deadline = Date.now() + 5000;
    while (victim.cg.pids().length !== 1 && Date.now() < deadline) await sleep(5);
    const line = Number(cg.read('memory.usage_in_bytes')) + 24 * MiB + i * 64 * 1024;
    const w = watchMemcgThreshold(cg.dir, line);
    const orders: OrderEvent[] = [];
    w.on('order', (o: OrderEvent) => orders.push(o));
    await w.ready();
    assert.equal(w.setOrder!(victim.cg.dir, 30_000, wsLineOf(cg.dir, line)), true);
    const step = await hog.alloc(32 * MiB, usageFile, line, rate);
    const until = Date.now() + 5000;
    while (orders.length === 0 && Date.now() < until) await sleep(5);
    await w.close();
    await hog.free();
    assert.equal(orders.length, 1, `trial ${i}: the order was used`);
    assert.equal(await victim.exited, 'SIGKILL');
    const o = orders[0]!;
    assert.ok(step.crossNs > 0n, `trial ${i}: the hog stamped its crossing`);
    lateMs.push(Number(o.killedNs - step.crossNs) / 1e6);
    pastKiB.push((o.usageBytes - o.lineBytes) / 1024);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  t.diagnostic(
    `crossing -> kill written, ms: ${lateMs.map((x) => x.toFixed(2)).join(', ')}; working set read past the line, KiB: ${pastKiB.map((x) => x.toFixed(0)).join(', ')}`,
  );
  // The hog stamps its last read below the line, at most 16 pages (1.25 ms of this ramp) before
  // the counter crossed; a read after the next charge batch (256 KiB: 5 ms) is late by far more.
  assert.ok(median(lateMs) < 3, `the kill within about one read of the crossing (median ${median(lateMs).toFixed(2)} ms at 50 MiB/s)`);
  assert.ok(median(pastKiB) <= 256, `the working set read at the kill within one charge batch past the line (median ${median(pastKiB).toFixed(0)} KiB)`);
});

test("a memcg threshold's standing order is never used once expired or withdrawn, nor on the way down", async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true })) || needsV1(t)) return;
  const { cg, hog, base } = await setup(t);
  await hog.alloc(64 * MiB);
  const expired = victimPod(t, 'memcg-order-expired');
  const withdrawn = victimPod(t, 'memcg-order-withdrawn');
  const down = victimPod(t, 'memcg-order-down');
  const deadline = Date.now() + 5000;
  while ([expired, withdrawn, down].some((v) => v.cg.pids().length !== 1) && Date.now() < deadline) await sleep(5);
  const a = watchMemcgThreshold(cg.dir, base + 96 * MiB);
  const b = watchMemcgThreshold(cg.dir, base + 112 * MiB);
  // Below usage now: crossed on the way down when the hog frees.
  const c = watchMemcgThreshold(cg.dir, base + 32 * MiB);
  t.after(() => Promise.all([a.close(), b.close(), c.close()]).then(() => undefined));
  await Promise.all([a.ready(), b.ready(), c.ready()]);
  const used: OrderEvent[] = [];
  for (const w of [a, b, c]) w.on('order', (o: OrderEvent) => used.push(o));
  assert.equal(a.setOrder!(expired.cg.dir, 20, wsLineOf(cg.dir, base + 96 * MiB)), true);
  assert.equal(b.setOrder!(withdrawn.cg.dir, 30_000, wsLineOf(cg.dir, base + 112 * MiB)), true);
  assert.equal(b.setOrder!(null), true);
  assert.equal(c.setOrder!(down.cg.dir, 30_000, wsLineOf(cg.dir, base + 32 * MiB)), true);
  await sleep(100);
  await hog.free();
  await sleep(300);
  assert.equal(down.cg.pids().length, 1, 'crossed on the way down: nobody killed');
  assert.equal(c.setOrder!(null), true);
  await hog.alloc(128 * MiB);
  await sleep(300);
  assert.equal(used.length, 0, 'no order used');
  for (const v of [expired, withdrawn, down]) assert.equal(v.cg.pids().length, 1, `${v.cg.dir} was not killed`);
});
