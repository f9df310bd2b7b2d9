/**
 * Real-time scheduling. On a busy node the workload being policed can hold the CPU a woken
 * thread needs for a whole scheduler slice; SCHED_FIFO lets the wake-up preempt it. Needs
 * CAP_SYS_NICE (root has it).
 *
 * `evictd run --realtime-priority` gives it to the threads that kill at the line only (the
 * standing orders' threads: setKillThreadPriority). Node's main thread keeps normal scheduling:
 * after a kill, on a node of two CPUs, a real-time JS thread would compete with the dying pod's
 * exit (the race in docs/benchmarks.md measured it), and no kill waits for it.
 */
import fs from 'node:fs';
import { addon } from './addon';

/** The highest SCHED_FIFO priority Linux accepts. */
export const MAX_RT_PRIORITY = 99;

function checkPriority(priority: number): void {
  if (!Number.isInteger(priority) || priority < 0 || priority > MAX_RT_PRIORITY) {
    throw new RangeError(`real-time priority must be a whole number from 0 to ${MAX_RT_PRIORITY}, got ${priority}`);
  }
}

/**
 * Puts the calling thread in SCHED_FIFO at `priority` (1-99), or back to normal scheduling with
 * 0. Child processes start with normal scheduling. Throws a KernelError (code EPERM without
 * CAP_SYS_NICE). For measurements (bench notify); the agent uses setKillThreadPriority.
 */
export function setRealtimePriority(priority: number): void {
  checkPriority(priority);
  addon().setRealtimePriority(priority);
}

/**
 * SCHED_FIFO at `priority` (1-99) for the threads that kill at the line (running ones from their
 * next wake-up, new ones from their start), 0 for normal scheduling; no other thread changes.
 * The kernel is asked first, on a thread of its own: a refusal throws a KernelError (EPERM) and
 * changes nothing.
 */
export function setKillThreadPriority(priority: number): void {
  checkPriority(priority);
  const a = addon();
  if (!a.setKillThreadPriority) throw new Error('this build of the addon has no setKillThreadPriority: rebuild it (npm run install)');
  a.setKillThreadPriority(priority);
}

/** The calling process's scheduling policy as /proc reports it (field 41 of stat: 0 other, 1 fifo). */
export function schedulingPolicy(): number {
  const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
  // the command name may hold spaces: fields are counted after its closing parenthesis
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[41 - 3]);
}
