/**
 * A seam for the crash-point tests (test/agent/crash-points.test.ts): with EVICTD_CRASH_AT set to
 * a point's name, the process SIGKILLs itself there, as an OOM kill or a node failure would stop
 * it, so a test can show what the next start makes of each half-done step. Unset (always, but in
 * those tests) it is one string comparison.
 */
export type CrashPoint =
  | 'eviction:journaled'
  | 'eviction:stopped'
  | 'eviction:reported'
  // a standing order: its kill written by the order thread, before the loop has done anything with it
  | 'order:killed'
  // the memory brake: before and after each write (record, memory.high)
  | 'brake:recorded'
  | 'brake:set'
  | 'brake:ease-recorded'
  | 'brake:eased'
  | 'brake:restored';

export function crashPoint(name: CrashPoint): void {
  if (process.env.EVICTD_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
