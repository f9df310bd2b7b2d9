/** The process's own monotonic clock: the one `Clock` the agent runs on outside tests. */
import type { Clock } from './ports';

export const systemClock: Clock = {
  now: () => process.hrtime.bigint(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Milliseconds from `a` to `b`, both monotonic ns. */
export const msBetween = (a: bigint, b: bigint): number => Number(b - a) / 1e6;

/** Milliseconds from a monotonic ns reading to now. */
export const msSince = (clock: Clock, at: bigint): number => msBetween(at, clock.now());
