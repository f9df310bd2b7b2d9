/**
 * Real-time scheduling for the thread that receives kernel notifications. On a busy node the
 * workload being policed can hold the CPU the notified thread wakes on for a whole scheduler
 * slice; SCHED_FIFO lets the wake-up preempt it. Needs CAP_SYS_NICE (root has it).
 */
import fs from 'node:fs';
import { addon } from './addon';

/** The highest SCHED_FIFO priority Linux accepts. */
export const MAX_RT_PRIORITY = 99;

/**
 * Puts Node's main thread (where watcher callbacks and decisions run) in SCHED_FIFO at
 * `priority` (1-99), or back to normal scheduling with 0. Child processes start with normal
 * scheduling. Throws a KernelError (code EPERM without CAP_SYS_NICE).
 */
export function setRealtimePriority(priority: number): void {
  if (!Number.isInteger(priority) || priority < 0 || priority > MAX_RT_PRIORITY) {
    throw new RangeError(`real-time priority must be a whole number from 0 to ${MAX_RT_PRIORITY}, got ${priority}`);
  }
  addon().setRealtimePriority(priority);
}

/** The calling process's scheduling policy as /proc reports it (field 41 of stat: 0 other, 1 fifo). */
export function schedulingPolicy(): number {
  const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
  // the command name may hold spaces: fields are counted after its closing parenthesis
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[41 - 3]);
}
