import fs from 'node:fs';
import { addon } from './addon';
import { NativeBackedWatcher } from './native-watcher';
import type { KernelError, PsiWatcher } from './types';

// PSI triggers (Documentation/accounting/psi.rst): "some|full <stall us> <window us>" written to a
// pressure file; the fd polls POLLPRI when the stall within a window passes the threshold, at
// most once per window.

export interface PsiTrigger {
  kind: 'some' | 'full';
  stallUs: number;
  windowUs: number;
}

// Kernel bounds (kernel/sched/psi.c): windows from 500 ms to 10 s.
const WINDOW_MIN_US = 500_000;
const WINDOW_MAX_US = 10_000_000;
// Without CAP_SYS_RESOURCE a trigger must use a window that is a multiple of 2 s (it is served by
// the 2 s averaging work instead of an RT polling thread); anything else gives EINVAL.
const UNPRIVILEGED_WINDOW_US = 2_000_000;
const CAP_SYS_RESOURCE = 24;

/** Whether this process has CAP_SYS_RESOURCE in its effective set (root alone is not enough). */
export function hasCapSysResource(status = fs.readFileSync('/proc/self/status', 'utf8')): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  if (!m) return false;
  return ((BigInt(`0x${m[1]}`) >> BigInt(CAP_SYS_RESOURCE)) & 1n) === 1n;
}

/** The window the kernel will enforce: rounded up to a multiple of 2 s when unprivileged. */
export function psiWindowInForce(windowUs: number, privileged: boolean): number {
  if (privileged) return windowUs;
  return Math.ceil(windowUs / UNPRIVILEGED_WINDOW_US) * UNPRIVILEGED_WINDOW_US;
}

function checkTrigger(t: PsiTrigger): void {
  if (t.kind !== 'some' && t.kind !== 'full') throw new RangeError(`trigger.kind: ${JSON.stringify(t.kind)}: must be some or full`);
  if (!Number.isSafeInteger(t.windowUs) || t.windowUs < WINDOW_MIN_US || t.windowUs > WINDOW_MAX_US) {
    throw new RangeError(`trigger.windowUs: ${JSON.stringify(t.windowUs)}: must be an integer from ${WINDOW_MIN_US} to ${WINDOW_MAX_US}`);
  }
  if (!Number.isSafeInteger(t.stallUs) || t.stallUs <= 0 || t.stallUs > t.windowUs) {
    throw new RangeError(`trigger.stallUs: ${JSON.stringify(t.stallUs)}: must be an integer from 1 to windowUs (${t.windowUs})`);
  }
}

class NativePsiWatcher extends NativeBackedWatcher implements PsiWatcher {
  constructor(
    pressureFile: string,
    readonly trigger: string,
    readonly windowUs: number,
  ) {
    super('psi', pressureFile, (cb, onArmed) => {
      const native = addon().openPsiTrigger(pressureFile, trigger, cb);
      onArmed();
      return native;
    });
  }
}

/**
 * A PSI trigger on `pressureFile` (a cgroup2 memory.pressure, or /proc/pressure/memory). The
 * window is rounded up to the rule in force (see `windowUs` on the result); the stall is kept.
 * Events carry the file's averages and totals read at the event (some_avg10 ... full_total).
 */
export function watchPsi(pressureFile: string, trigger: PsiTrigger): PsiWatcher {
  checkTrigger(trigger);
  const privileged = hasCapSysResource();
  const windowUs = psiWindowInForce(trigger.windowUs, privileged);
  if (windowUs > WINDOW_MAX_US) {
    throw new RangeError(`trigger.windowUs: ${trigger.windowUs}: rounds up to ${windowUs} without CAP_SYS_RESOURCE, above the kernel's ${WINDOW_MAX_US}`);
  }
  const text = (w: number): string => `${trigger.kind} ${trigger.stallUs} ${w}`;
  try {
    return new NativePsiWatcher(pressureFile, text(windowUs), windowUs);
  } catch (err) {
    // The capability read can disagree with the credentials the kernel checks (those of the
    // opener, e.g. inside a user namespace): on EINVAL retry once with the unprivileged rule.
    const rounded = psiWindowInForce(trigger.windowUs, false);
    if ((err as KernelError).code === 'EINVAL' && rounded !== windowUs && rounded <= WINDOW_MAX_US) {
      return new NativePsiWatcher(pressureFile, text(rounded), rounded);
    }
    throw err;
  }
}
