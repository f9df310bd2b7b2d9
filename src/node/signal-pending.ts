/**
 * Whether a signal is queued for a process and not yet delivered: /proc/PID/status's SigPnd (the
 * thread's queue) and ShdPnd (the process's), hexadecimal masks with bit N-1 for signal N. A
 * throttled task (asleep in memory.high's penalty, which only a fatal signal cuts short) keeps a
 * SIGTERM pending until the penalty ends; the brake waits for it (effects/memory-brake.ts).
 */
import fs from 'node:fs';

export const SIGTERM_NUMBER = 15;

/** From one status file's text: is `signal` pending for the thread or the process? */
export function signalPendingIn(statusText: string, signal: number): boolean {
  const bit = 1n << BigInt(signal - 1);
  for (const key of ['SigPnd', 'ShdPnd']) {
    const m = new RegExp(`^${key}:\\s*([0-9a-fA-F]+)$`, 'm').exec(statusText);
    if (m && (BigInt(`0x${m[1]}`) & bit) !== 0n) return true;
  }
  return false;
}

/** Whether any of `pids` has `signal` pending (a process gone meanwhile has not). */
export function signalPending(pids: readonly number[], signal: number, procRoot = '/proc'): boolean {
  for (const pid of pids) {
    let text: string;
    try {
      text = fs.readFileSync(`${procRoot}/${pid}/status`, 'utf8');
    } catch {
      continue;
    }
    if (signalPendingIn(text, signal)) return true;
  }
  return false;
}
