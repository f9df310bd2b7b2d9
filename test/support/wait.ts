import { slow } from './environment';

/**
 * Polls `fn` until it returns something truthy, and returns that; fails naming `what` after
 * `timeoutMs`, scaled by EVICTD_SLOW (the emulated VM), since this waits for what must happen.
 * The one wait of every suite: a condition, never a fixed sleep.
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  everyMs = 10,
): Promise<T> {
  timeoutMs = slow(timeoutMs);
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The same wait on a fake clock (fake-node.ts FakeClock): steps it `stepMs` at a time, firing
 * the timers due, until `fn` holds; fails naming `what` after `maxMs` of the clock's time. No
 * real time passes: what a backoff or a refresh waits for is stepped, as the kubelet's tests do.
 */
export async function stepUntil<T>(
  clock: { step(ms: number): Promise<void> },
  what: string,
  fn: () => T | undefined | null | false,
  maxMs: number,
  stepMs = 10,
): Promise<T> {
  for (let t = 0; ; t += stepMs) {
    const v = fn();
    if (v) return v;
    if (t >= maxMs) throw new Error(`${what}: not after ${maxMs} ms of the fake clock`);
    await clock.step(stepMs);
  }
}
