/** Real-time scheduling: for the kill threads only (evictd run), inherited by nobody, undone; the calling thread for measurements. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { missingRoot, skipped } from '../support/environment';
import { addon, nativeAvailable } from '../../src/kernel/addon';
import { schedulingPolicy, setKillThreadPriority, setRealtimePriority } from '../../src/kernel';
import { watchMemcgThreshold } from '../../src/kernel/memcg';
import { tripwireUnavailable, watchTripwire } from '../../src/kernel/tripwire';
import { ScratchCgroup } from '../../src/lab/workload';
import { MiB, memory, missingKernel, v2Root } from './support';

const SCHED_OTHER = 0;
const SCHED_FIFO = 1;

test('SCHED_FIFO for the main thread; children start with normal scheduling; 0 restores it', (t) => {
  if (skipped(t, missingRoot() ?? (nativeAvailable() ? null : 'native addon not built'))) return;
  assert.equal(schedulingPolicy(), SCHED_OTHER);
  setRealtimePriority(10);
  try {
    assert.equal(schedulingPolicy(), SCHED_FIFO);
    const child = execFileSync('/bin/sh', ['-c', 'cat /proc/$$/stat'], { encoding: 'utf8' });
    assert.equal(Number(child.slice(child.lastIndexOf(')') + 2).split(' ')[38]), SCHED_OTHER, 'SCHED_RESET_ON_FORK keeps children out');
  } finally {
    setRealtimePriority(0);
  }
  assert.equal(schedulingPolicy(), SCHED_OTHER);
});

test('a priority the kernel refuses is an error with code, errno and syscall', (t) => {
  if (skipped(t, nativeAvailable() ? null : 'native addon not built')) return;
  assert.throws(() => setRealtimePriority(100), RangeError);
  assert.throws(
    () => addon().setRealtimePriority(1000),
    (e: NodeJS.ErrnoException) => e.code === 'EINVAL' && e.syscall === 'sched_setscheduler' && typeof e.errno === 'number',
  );
  assert.equal(schedulingPolicy(), SCHED_OTHER);
});

/** The scheduling policy of this process's thread named `comm`, or null when there is none. */
function threadPolicy(comm: string): number | null {
  for (const tid of fs.readdirSync('/proc/self/task')) {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== comm) continue;
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[41 - 3]);
  }
  return null;
}

test('a kill-thread priority the kernel refuses is an error, and nothing changes', (t) => {
  if (skipped(t, nativeAvailable() ? null : 'native addon not built')) return;
  assert.throws(() => setKillThreadPriority(100), RangeError);
  assert.throws(
    () => addon().setKillThreadPriority!(1000),
    (e: NodeJS.ErrnoException) => e.code === 'EINVAL' && e.syscall === 'sched_setscheduler',
  );
  assert.equal(schedulingPolicy(), SCHED_OTHER);
});

test("the standing orders' thread, and only it, runs SCHED_FIFO: the main thread keeps normal scheduling", async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true, memory: true }))) return;
  const m = memory();
  // As `evictd run` does it: the class first, then the lines (whose first load starts the thread).
  setKillThreadPriority(10);
  assert.equal(schedulingPolicy(), SCHED_OTHER, 'the main thread is left as it was');
  // The line's mechanism on this kernel: the memcg v1 eventfd, or the eBPF tripwire on pure v2.
  if (m.version === 2 && skipped(t, tripwireUnavailable())) {
    setKillThreadPriority(0);
    return;
  }
  const cg = ScratchCgroup.create(m.root, 'sched-order', m.version);
  const victim = ScratchCgroup.create(v2Root(), 'sched-order-victim', 2);
  const w = m.version === 1 ? watchMemcgThreshold(cg.dir, 1024 * MiB) : watchTripwire(cg.dir, 1024 * MiB, 'usage');
  try {
    await w.ready();
    assert.equal(w.setOrder!(victim.dir, 30_000, 1024 * MiB), true, 'the order is placed');
    // The thread names itself and sets its class as it starts.
    const until = Date.now() + 2000;
    while (threadPolicy('evictd-order') !== SCHED_FIFO && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    assert.equal(threadPolicy('evictd-order'), SCHED_FIFO, 'the order thread is SCHED_FIFO');
    assert.equal(schedulingPolicy(), SCHED_OTHER, 'the main thread is not');
  } finally {
    setKillThreadPriority(0);
    w.setOrder!(null);
    await w.close();
    await cg.remove();
    await victim.remove();
  }
});
