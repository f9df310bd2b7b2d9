/**
 * The standing orders' two timers: a pass before the orders in force lapse (half their TTL after
 * a pass placed them), and a pass to try a failed confirmation's stop again (with its backoff).
 * Both wake the loop through the controller, as every wake-up does.
 */
import { nearHardMemoryLine } from '../policy/standing-order';
import type { PolicyConfig } from '../policy/config';
import type { NodeStats } from '../policy/types';
import type { Arming } from './arming';
import { cancel, msSince } from './clock';
import type { Clock, Timer, Wakeup } from './ports';
import type { StandingOrders } from './standing-orders';

export interface OrderTimersOptions {
  orders: StandingOrders;
  policy: PolicyConfig;
  ttlMs: number;
  /** the cap of the retry's backoff */
  housekeepingIntervalMs: number;
  clock: Clock;
  wake: (w: Wakeup) => void;
}

export class OrderTimers {
  /** a pass before the orders in force lapse */
  private refresh: Timer | null = null;
  /** a pass to retry the stop of a pod a used order killed */
  private retryTimer: Timer | null = null;
  private stopped = false;

  constructor(private readonly o: OrderTimersOptions) {}

  /**
   * After a pass: orders in force are refreshed by a pass at half their TTL, so they never lapse
   * while the node stays near a line; a pass whose pod set moved under it runs again at once; a
   * failed confirmation's stop is retried.
   */
  afterPass(after: { placed: boolean; stale: boolean }): void {
    this.refresh = cancel(this.refresh);
    if (this.stopped) return;
    if (after.stale) this.o.wake({ source: 'standing-order' });
    else if (after.placed) {
      this.refresh = this.o.clock.after(Math.max(1, Math.floor(this.o.ttlMs / 2)), () => {
        this.refresh = null;
        this.o.wake({ source: 'standing-order' });
      });
    }
    this.retry();
  }

  /** A pass to try a failed confirmation again, with the backoff (see StandingOrders.retryInMs). */
  retry(): void {
    this.retryTimer = cancel(this.retryTimer);
    const inMs = this.stopped ? null : this.o.orders.retryInMs(this.o.housekeepingIntervalMs);
    if (inMs === null) return;
    this.retryTimer = this.o.clock.after(inMs, () => {
      this.retryTimer = null;
      this.o.wake({ source: 'standing-order-retry' });
    });
  }

  /**
   * The drift tick's numbers: whether they put a hard line near (the tick then comes faster). And
   * when they do and no order stands or is on its way, a pass to place one (no kernel event
   * announces that a ramp is getting close): at most one per half TTL, and only where some
   * line's mechanism can hold an order.
   */
  observed(node: NodeStats, arming: Arming): boolean {
    const near = nearHardMemoryLine(this.o.policy, node);
    if (!near || this.refresh || !arming.canHoldOrders()) return near;
    const last = this.o.orders.lastDecidedNs;
    if (last === null || msSince(this.o.clock, last) >= this.o.ttlMs / 2) this.o.wake({ source: 'standing-order' });
    return near;
  }

  stop(): void {
    this.stopped = true;
    this.refresh = cancel(this.refresh);
    this.retryTimer = cancel(this.retryTimer);
  }
}
