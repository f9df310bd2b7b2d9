/**
 * A seam for the crash-point tests (test/agent/crash-points.test.ts): the process SIGKILLs itself
 * at a named point, as an OOM kill or a node failure would stop it, so a test can show what the
 * next start makes of each half-done step. Only test code can arm it: test/support/crash-at.ts,
 * loaded with `node --require`, installs the hook (and reads EVICTD_CRASH_AT); the shipped files
 * have neither the hook nor a way to set it, so no environment variable can make an agent kill
 * itself. Unarmed (always, but in those tests) it is one property read.
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

/** Where test/support/crash-at.ts puts its hook. */
export const CRASH_HOOK = Symbol.for('evictd.crashPoint');

export function crashPoint(name: CrashPoint): void {
  (globalThis as { [CRASH_HOOK]?: (name: CrashPoint) => void })[CRASH_HOOK]?.(name);
}
