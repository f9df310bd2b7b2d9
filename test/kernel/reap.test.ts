/**
 * The reap after a kill (native/reap.h): the kernel frees a killed pod's memory at the reap, even
 * while the dying task itself cannot run; a live task is never touched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { skipped } from '../support/environment';
import { reapCgroup, reapCounts } from '../../src/kernel/reap';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { MiB, missingKernel, v2Root } from './support';

function rssKb(pid: number): number | null {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return null;
  }
}

test('a task that is not dying is not reaped: EINVAL, nothing freed, still alive', async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true }))) return;
  const cg = ScratchCgroup.create(v2Root(), 'reap-live', 2);
  const hog = await Memhog.start([cg.dir]);
  t.after(async () => {
    hog.kill();
    await hog.exited;
    await cg.remove();
  });
  await hog.alloc(32 * MiB);
  const before = rssKb(hog.pid)!;
  const r = await reapCgroup(cg.dir);
  assert.ok(r, 'the addon reaps');
  assert.equal(r.tasks, 1);
  assert.equal(r.reaped, 0);
  assert.equal(r.errno, os.constants.errno.EINVAL, 'the kernel refuses a task with no SIGKILL pending');
  assert.ok(rssKb(hog.pid)! >= before - 1024, 'its memory is where it was');
  assert.equal(typeof (await hog.free()), 'bigint', 'it still answers');
});

test("a killed task's memory comes back at the reap, before the task itself runs again", async (t) => {
  const cpus = os.cpus().length;
  if (skipped(t, missingKernel({ cgroup2: true }) ?? (cpus < 2 ? 'needs two CPUs (one held by a real-time spinner)' : null))) return;
  const cg = ScratchCgroup.create(v2Root(), 'reap-killed', 2);
  const hog = await Memhog.start([cg.dir]);
  const last = String(cpus - 1);
  const others = cpus === 2 ? '0' : `0-${cpus - 2}`;
  // This process (and its threadpool, started from it) away from the last CPU; the victim on it.
  execFileSync('taskset', ['-a', '-p', '-c', others, String(process.pid)], { stdio: 'ignore' });
  let spinner: ReturnType<typeof spawn> | null = null;
  t.after(async () => {
    spinner?.kill('SIGKILL');
    hog.kill();
    await hog.exited;
    await cg.remove();
    execFileSync('taskset', ['-a', '-p', '-c', `0-${cpus - 1}`, String(process.pid)], { stdio: 'ignore' });
  });
  await hog.alloc(256 * MiB);
  execFileSync('taskset', ['-p', '-c', last, String(hog.pid)], { stdio: 'ignore' });
  const before = rssKb(hog.pid)!;
  assert.ok(before > 200 * 1024, `the victim holds its memory (${before} kB)`);
  const counts0 = reapCounts();
  // A SCHED_FIFO spinner on the victim's CPU that ends itself after 600 ms (under the kernel's
  // 950 ms real-time budget per second; it never blocks, so nothing but its own clock may end
  // it): the killed victim cannot run to its own exit meanwhile. It says when it spins.
  const spin = 'import sys, time\nsys.stdout.write("spinning\\n"); sys.stdout.flush()\nend = time.monotonic() + 0.6\nwhile time.monotonic() < end: pass\n';
  spinner = spawn('chrt', ['-f', '50', 'taskset', '-c', last, 'python3', '-c', spin], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    spinner!.stdout!.once('data', () => resolve());
    spinner!.once('exit', (code) => reject(new Error(`the spinner exited (${code}) before spinning`)));
  });
  cg.write('cgroup.kill', '1');
  const r = await reapCgroup(cg.dir);
  const after = rssKb(hog.pid);
  assert.ok(r, 'the addon reaps');
  assert.deepEqual({ tasks: r.tasks, reaped: r.reaped, errno: r.errno }, { tasks: 1, reaped: 1, errno: 0 });
  assert.ok(after !== null && after < before / 10, `its memory is back at the reap (VmRSS ${before} -> ${after} kB), the task not yet gone`);
  const exit = await hog.exited;
  assert.equal(exit.signal, 'SIGKILL');
  const counts1 = reapCounts();
  assert.equal(counts1.pods - counts0.pods, 1);
  assert.equal(counts1.reaped - counts0.reaped, 1);
});
