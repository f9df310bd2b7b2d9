/**
 * Soft thresholds, the brake's bound and KEP-5986's grace periods: a pass exactly when the
 * earliest pending grace period ends or the earliest brake reaches its bound, even when nothing
 * else wakes the loop.
 */
import { nextDeadline } from '../policy/actions';
import type { ActiveBrake } from '../policy/brake';
import type { PolicyConfig } from '../policy/config';
import type { Evaluation } from '../policy/evaluate';
import { cancel } from './clock';
import type { Clock, Timer, Wakeup } from './ports';

export interface DeadlineTimerOptions {
  policy: PolicyConfig;
  /** the brakes in force (none when the brake is off) */
  brakes: () => readonly ActiveBrake[];
  /** the earliest KEP-5986 grace period's end ahead (monotonic ns), or null */
  memoryPressureDue?: (nowNs: number) => number | null;
  clock: Clock;
  wake: (w: Wakeup) => void;
}

export class DeadlineTimer {
  private timer: Timer | null = null;
  private stopped = false;

  constructor(private readonly o: DeadlineTimerOptions) {}

  /** Sets the timer from a pass's evaluation and the brakes now in force (replacing the last one). */
  set(ev: Evaluation): void {
    this.timer = cancel(this.timer);
    if (this.stopped) return;
    const now = Number(this.o.clock.now());
    let next: { atNs: number; source: string } | null = nextDeadline(this.o.policy, ev, this.o.brakes(), now);
    const due = this.o.memoryPressureDue?.(now) ?? null;
    if (due !== null && (next === null || due < next.atNs)) next = { atNs: due, source: 'memory-pressure-grace' };
    if (next === null) return;
    const source = next.source;
    this.timer = this.o.clock.after(Math.max(0, Math.ceil((next.atNs - now) / 1e6)) + 1, () => this.o.wake({ source }));
  }

  stop(): void {
    this.stopped = true;
    this.timer = cancel(this.timer);
  }
}
