/** The process's own monotonic clock: the one `Clock` the agent runs on outside tests. */
import type { Clock, Timer } from './ports';

export const systemClock: Clock = {
  now: () => process.hrtime.bigint(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  after: (ms, fn, background = false) => {
    const t = setTimeout(fn, ms);
    if (background) t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** Milliseconds from `a` to `b`, both monotonic ns. */
export const msBetween = (a: bigint, b: bigint): number => Number(b - a) / 1e6;

/** Milliseconds from a monotonic ns reading to now. */
export const msSince = (clock: Clock, at: bigint): number => msBetween(at, clock.now());

/** Cancels a timer that may not be set; always returns null, for `this.t = cancel(this.t)`. */
export function cancel(timer: Timer | null): null {
  timer?.cancel();
  return null;
}
