import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { addon, packageRoot } from '../../src/kernel/addon';
import { watchCgroupEvents } from '../../src/kernel/cgroup-events';
import { watchMemcgThreshold, watchOom } from '../../src/kernel/memcg';
import { watchPsi } from '../../src/kernel/psi';
import type { KernelError, Watcher } from '../../src/kernel/types';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { memcgV1Root, needsV1, skipped, slow } from '../support/environment';
import { memory, MiB, missingKernel, openFds, Recorder, sleep, v1Root, v2Root } from './support';

const kernelModule = path.join(packageRoot, 'dist', 'src', 'kernel', 'index.js');
const psiTrigger = { kind: 'some' as const, stallUs: 100_000, windowUs: 2_000_000 };
/** Watchers on cgroup2 files; the others are the v1 memory controller's. */
const cgroup2Kinds = new Set(['psi', 'cgroup-events', 'memory-events']);

test('removing a watched cgroup ends each watcher with one ENODEV error and leaves no fd', async (t) => {
  if (skipped(t, missingKernel({ memory: true, cgroup2: true }))) return;
  // Every watcher kind the kernel has here: the v1 memory controller's on a hybrid host,
  // memory.events on pure cgroup v2.
  const v1 = memcgV1Root() !== null ? ScratchCgroup.create(v1Root(), 'test', 1) : null;
  const v2 = ScratchCgroup.create(v2Root(), 'test', 2);
  t.after(() => v1?.remove());
  t.after(() => v2.remove());
  const fdsBefore = openFds();
  const live = addon().liveSources();
  const watchers: Watcher[] = [
    ...(v1 !== null ? [watchMemcgThreshold(v1.dir, 64 * MiB), watchOom(v1.dir)] : [watchCgroupEvents(v2.file('memory.events'))]),
    watchPsi(v2.file('memory.pressure'), psiTrigger),
    watchCgroupEvents(v2.file('cgroup.events')),
  ];
  const recs = watchers.map((w) => new Recorder(w));
  await Promise.all(watchers.map((w) => w.ready()));
  assert.ok(openFds().length > fdsBefore.length);

  await v1?.remove();
  await v2.remove();
  for (const r of recs) {
    const err = (await r.waitError(slow(5000))) as KernelError;
    assert.equal(err.code, 'ENODEV', `${r.watcher.kind}: ${err.message}`);
    assert.equal(err.errno, -19);
    assert.ok(typeof err.syscall === 'string' && err.syscall.length > 0);
    assert.ok(err.path?.startsWith(cgroup2Kinds.has(r.watcher.kind) ? v2.dir : (v1?.dir ?? '(no v1)')), err.path);
    assert.equal(r.watcher.closed, true);
  }
  // No second error and no busy loop of events after the first error.
  await sleep(300);
  for (const r of recs) {
    assert.equal(r.errors.length, 1, r.watcher.kind);
    assert.equal(r.events.length, 0, r.watcher.kind);
  }
  await Promise.all(watchers.map((w) => w.close()));
  assert.deepEqual(openFds(), fdsBefore);
  assert.equal(addon().liveSources(), live);
});

test('3,000 open/close cycles on 64 lanes leave /proc/self/fd as it was', async (t) => {
  if (skipped(t, missingKernel({ memory: true, cgroup2: true }))) return;
  // Pure cgroup v2 has no v1 memory controller: memory.events stands in for its three kinds.
  const hasV1 = memcgV1Root() !== null;
  const v1 = hasV1 ? [1, 2, 3, 4].map(() => ScratchCgroup.create(v1Root(), 'test', 1)) : [];
  const v2 = [1, 2, 3, 4].map(() => ScratchCgroup.create(v2Root(), 'test', 2));
  for (const cg of [...v1, ...v2]) t.after(() => cg.remove());
  // Registering a memcg threshold, and closing a PSI trigger or an inotify fd, each wait for a
  // kernel grace period (10-30 ms here) on a threadpool thread: run 64 lanes on 64 threads, in
  // a child whose threadpool size is set before it starts.
  const script = `
    const fs = require('node:fs');
    const k = require(${JSON.stringify(kernelModule)});
    const addon = require(${JSON.stringify(path.join(packageRoot, 'dist', 'src', 'kernel', 'addon.js'))}).addon();
    const v1 = ${JSON.stringify(v1.map((c) => c.dir))};
    const v2 = ${JSON.stringify(v2.map((c) => c.dir))};
    const open = [
      (j) => k.watchCgroupEvents(v2[j % 4] + '/cgroup.events'),
      (j) => k.watchPsi(v2[j % 4] + '/memory.pressure', { kind: 'some', stallUs: 100000, windowUs: 2000000 }),
      ...(v1.length > 0 ? [
        (j) => k.watchMemcgThreshold(v1[j % 4], 1 + Math.floor(Math.random() * 1024 * 1048576)),
        (j) => k.watchOom(v1[j % 4]),
      ] : [
        (j) => k.watchCgroupEvents(v2[j % 4] + '/memory.events'),
      ]),
    ];
    // Node's own threads open and close fds of their own now and then (seen: fd 17 in use during
    // a listing at start, gone after): a listing counts once two, 20 ms apart, agree.
    const list = () => fs.readdirSync('/proc/self/fd').sort().join(',');
    const fds = () => {
      let a = list();
      for (;;) {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
        const b = list();
        if (b === a) return b;
        a = b;
      }
    };
    const before = fds();
    let next = 0;
    async function lane(j) {
      while (next < 3000) {
        const i = next++;
        const w = open[i % open.length](j);
        if (i % 3 === 0) w.stop();
        if (i % 2 === 0) await w.ready();
        // close() twice: idempotent, both resolve.
        await Promise.all([w.close(), w.close()]);
        if (!w.closed) throw new Error('not closed after close()');
      }
    }
    Promise.all(Array.from({ length: 64 }, (_, j) => lane(j))).then(() => {
      console.log(JSON.stringify({ cycles: next, same: fds() === before, before, after: fds(), live: addon.liveSources() }));
    });
  `;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: slow(120_000), env: { ...process.env, UV_THREADPOOL_SIZE: '64' } });
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal}: ${r.stderr}`);
  const result = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
  assert.equal(result.cycles, 3000);
  assert.equal(result.after, result.before, 'same fds before and after');
  assert.equal(result.live, 0, 'every native source released');
});

test('stop() holds eventfd signals in the kernel and start() delivers them', async (t) => {
  if (skipped(t, missingKernel()) || needsV1(t)) return;
  const cg = ScratchCgroup.create(v1Root(), 'test', 1);
  t.after(() => cg.remove());
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const w = watchMemcgThreshold(cg.dir, Number(cg.read('memory.usage_in_bytes')) + 16 * MiB);
  t.after(() => w.close());
  const rec = new Recorder(w);
  w.stop();
  await w.ready();
  await hog.alloc(32 * MiB);
  await sleep(200);
  assert.equal(rec.events.length, 0, 'no event while stopped');
  w.start();
  const e = await rec.waitEvent(() => true, slow(5000));
  assert.ok(e.count >= 1);
});

test('native errors carry code, errno, syscall and path like fs errors', (t) => {
  if (skipped(t, missingKernel({ memory: true, cgroup2: true }))) return;
  // The registration opens the usage file first: a missing cgroup fails there, v1 or not.
  const missing = path.join(memory().root, 'evictd-no-such-cgroup');
  assert.throws(
    () => watchMemcgThreshold(missing, 64 * MiB),
    (err: KernelError) =>
      err instanceof Error &&
      err.code === 'ENOENT' &&
      err.errno === -2 &&
      err.syscall === 'open' &&
      err.path === path.join(missing, 'memory.usage_in_bytes') &&
      err.message === `ENOENT: no such file or directory, open '${path.join(missing, 'memory.usage_in_bytes')}'`,
  );
  const events = path.join(v2Root(), 'evictd-no-such-cgroup', 'cgroup.events');
  assert.throws(
    () => watchCgroupEvents(events),
    (err: KernelError) => err.code === 'ENOENT' && err.syscall === 'open' && err.path === events,
  );
  // A trigger the kernel rejects: EINVAL from the write.
  assert.throws(
    () => addon().openPsiTrigger('/proc/pressure/memory', 'some 0 2000000', () => undefined),
    (err: KernelError) => err.code === 'EINVAL' && err.errno === -22 && err.syscall === 'write' && err.path === '/proc/pressure/memory',
  );
});

/** Runs a script in a fresh node; returns its exit status, signal, output and wall time. */
function runNode(script: string, timeoutMs: number) {
  const started = Date.now();
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started };
}

test("an unref'd watcher lets the process exit; a ref'd one keeps it alive", async (t) => {
  if (skipped(t, missingKernel())) return;
  const script = (unref: boolean) => `
    const k = require(${JSON.stringify(kernelModule)});
    const w = k.watchPsi('/proc/pressure/memory', { kind: 'some', stallUs: 100000, windowUs: 2000000 });
    ${unref ? 'w.unref();' : ''}
    console.log('armed');
  `;
  const unrefd = runNode(script(true), slow(10_000));
  assert.equal(unrefd.status, 0, unrefd.stderr);
  assert.equal(unrefd.stdout.trim(), 'armed');
  // The ref'd one: still running a second after it armed (then killed here).
  const child = spawn(process.execPath, ['-e', script(false)], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => (d.toString().includes('armed') ? resolve() : undefined));
    child.on('exit', (code) => reject(new Error(`exited (${code}) before it armed`)));
  });
  await sleep(1000);
  assert.equal(child.exitCode, null, "a ref'd watcher keeps the process alive");
  assert.equal(child.signalCode, null);
});

test('a listener that throws reaches uncaughtException; the watcher keeps working', (t) => {
  if (skipped(t, missingKernel({ cgroup2: true }))) return;
  const cg = ScratchCgroup.create(v2Root(), 'test', 2);
  t.after(() => cg.remove());
  const script = `
    const fs = require('node:fs');
    const { spawn } = require('node:child_process');
    const k = require(${JSON.stringify(kernelModule)});
    const w = k.watchCgroupEvents(${JSON.stringify(cg.file('cgroup.events'))});
    let n = 0;
    process.on('uncaughtException', (err) => {
      console.log('caught ' + err.message);
      if (++n === 2) w.close().then(() => console.log('closed'));
    });
    w.on('event', (e) => { throw new Error('listener ' + e.counters.populated); });
    // populated 0 -> 1 -> 0: a child joins the cgroup and exits.
    spawn('/bin/sh', ['-c', 'echo $$ > ${cg.file('cgroup.procs')}; sleep 0.1']);
  `;
  const r = runNode(script, slow(20_000));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /caught listener 1\ncaught listener 0\nclosed/);
});

test('a worker receives events, and terminating it with live watchers does not crash', async (t) => {
  if (skipped(t, missingKernel({ memory: true, cgroup2: true }))) return;
  const v1 = memcgV1Root() !== null ? ScratchCgroup.create(v1Root(), 'test', 1) : null;
  const v2 = ScratchCgroup.create(v2Root(), 'test', 2);
  t.after(() => v1?.remove());
  t.after(() => v2.remove());
  // 50 eventfd registrations on v1, or 50 memory.events watchers on pure v2.
  const many =
    v1 !== null
      ? `k.watchMemcgThreshold(${JSON.stringify(v1.dir)}, (i + 1) * 1048576 * 64)`
      : `k.watchCgroupEvents(${JSON.stringify(v2.file('memory.events'))})`;
  const worker = `
    const k = require(${JSON.stringify(kernelModule)});
    const { parentPort } = require('node:worker_threads');
    const events = k.watchCgroupEvents(${JSON.stringify(v2.file('cgroup.events'))});
    events.on('event', (e) => parentPort.postMessage('populated=' + e.counters.populated));
    for (let i = 0; i < 50; i++) ${many};
    for (let i = 0; i < 10; i++) k.watchPsi('/proc/pressure/memory', { kind: 'some', stallUs: 100000, windowUs: 2000000 });
    for (let i = 0; i < 10; i++) k.watchCgroupEvents(${JSON.stringify(v2.file('cgroup.events'))});
    parentPort.postMessage('armed');
  `;
  const main = `
    const fs = require('node:fs');
    const { Worker } = require('node:worker_threads');
    const fds = () => fs.readdirSync('/proc/self/fd').map((f) => { try { return f + '=' + fs.readlinkSync('/proc/self/fd/' + f); } catch { return f; } }).sort().join(' ');
    (async () => {
      // A first plain worker makes Node open what it keeps for workers (/dev/null): not ours.
      await new Promise((resolve) => new Worker('0', { eval: true }).on('exit', resolve));
      const before = fds();
      for (let round = 0; round < 3; round++) {
        const w = new Worker(${JSON.stringify(worker)}, { eval: true });
        const got = [];
        await new Promise((resolve) => w.on('message', (m) => { got.push(m); if (m === 'armed') resolve(); }));
        if (round === 0) {
          fs.writeFileSync(${JSON.stringify(v2.file('cgroup.procs'))}, String(process.pid));
          fs.writeFileSync(${JSON.stringify(path.join(v2Root(), 'cgroup.procs'))}, String(process.pid));
          await new Promise((resolve) => w.on('message', (m) => { if (m === 'populated=0') resolve(); }));
          console.log('worker event populated=0');
        }
        await w.terminate();
      }
      await new Promise((r) => setTimeout(r, 100));
      console.log(JSON.stringify({ before, after: fds() }));
    })();
  `;
  const r = runNode(main, slow(60_000));
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal}: ${r.stderr}`);
  assert.match(r.stdout, /worker event populated=0/);
  const fds = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
  assert.equal(fds.after, fds.before, 'no fd left behind by the terminated workers');
});
