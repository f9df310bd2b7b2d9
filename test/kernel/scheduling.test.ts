/** Real-time scheduling of the notified thread: set, inherited by nobody, and undone. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { missingRoot, skipped } from '../support/environment';
import { addon, nativeAvailable } from '../../src/kernel/addon';
import { schedulingPolicy, setRealtimePriority } from '../../src/kernel';

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
