/**
 * Whether the loop is alive and ready, from when its last pass succeeded: live while passes
 * complete (a runtime that is down does not stop them: they decide on the last known pods),
 * ready when the runtime answers too (its outage makes evictd not ready, not dead).
 */
import { msSince } from './clock';
import type { Health } from './http-server';
import type { Clock } from './ports';

export class PassHealth {
  /** monotonic ns of the last pass that ended without an error; null before the first */
  private lastOkAt: bigint | null = null;
  private lastProblem = 'no pass yet';

  constructor(
    private readonly clock: Clock,
    private readonly housekeepingIntervalMs: number,
  ) {}

  passed(): void {
    this.lastOkAt = this.clock.now();
    this.lastProblem = '';
  }

  failed(problem: string): void {
    this.lastProblem = problem;
  }

  /** How long without a successful pass (or with a runtime failing) before evictd is unhealthy. */
  staleMs(): number {
    return 3 * this.housekeepingIntervalMs + 5000;
  }

  /** Why the last pass's conditions are too old to answer admission with, or null. */
  conditionsStale(): string | null {
    if (this.lastOkAt === null) return this.lastProblem;
    const sinceMs = Math.round(msSince(this.clock, this.lastOkAt));
    return sinceMs > this.staleMs() ? `no successful pass for ${sinceMs} ms (${this.lastProblem})` : null;
  }

  liveness(): Health {
    const stale = this.conditionsStale();
    return stale === null ? { ok: true, reason: '' } : { ok: false, reason: stale };
  }

  /** Ready: live, and the runtime has not been failing for longer than a pass may be stale. */
  readiness(runtime: { failingForMs: number; problem: string }): Health {
    const live = this.liveness();
    if (!live.ok) return live;
    const failingMs = Math.round(runtime.failingForMs);
    if (failingMs > this.staleMs()) return { ok: false, reason: `${runtime.problem} (for ${failingMs} ms)` };
    return { ok: true, reason: '' };
  }
}
