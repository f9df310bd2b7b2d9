/**
 * A NotificationPort for unit tests: memory lines on named "cgroups" whose usage the test sets.
 * A line crossed upward wakes its callback once per crossing (on a later tick, as the kernel's
 * does), `rearm` moves it, `close` ends it. test/support/notification-contract.ts holds the
 * expectations this fake and the real port (test/kernel/notification-contract.test.ts) share.
 *
 * Standing orders (off unless `holdsOrders`): a line then keeps the order `setOrder` gives it for
 * its TTL (on `orderClock`), and a crossing upward while the order stands does what the kernel
 * side does: the kill first (`onKill`, or a failure with `killError`), the order spent, then
 * `onOrderFired` and the wake-up on a later tick.
 */
import type { Clock, NotificationPort, OrderFired, StandingOrder, ThresholdHandle, WatchCallbacks, WatchHandle } from '../../src/agent/ports';

interface Line {
  dir: string;
  bytes: number;
  cb: WatchCallbacks;
  closed: boolean;
  above: boolean;
  order: { order: StandingOrder; placedNs: bigint } | null;
  /** bumped by every setOrder: with dropsStaleUses, a use reaches only the generation it was made for (the strictest a mechanism could be) */
  generation: number;
}

export class FakeNotifications implements NotificationPort {
  readonly mechanism = 'polling' as const;
  /** every line as created: the cgroup dir and the bytes it was armed at */
  readonly created: { dir: string; bytes: number }[] = [];
  /** what each line says watches it (the arming moves a v1 eventfd line less eagerly) */
  lineMechanism = 'memcg-threshold-eventfd';
  /** every rearm, in bytes */
  readonly rearms: number[] = [];
  /** lines keep standing orders (setOrder) */
  holdsOrders = false;
  /** setOrder says false (the mechanism refuses) */
  refuseOrders = false;
  /** every setOrder call: the line's dir and the order (null: withdrawn) */
  readonly orderCalls: { dir: string; order: StandingOrder | null }[] = [];
  /** what orders age and lapse on (default: the process's monotonic clock) */
  orderClock: Clock | null = null;
  /** the kill an order writes, by the victim's pod cgroup dir */
  onKill: ((podCgroupDir: string) => void) | null = null;
  /** set: the kill fails with this error (nothing is killed) */
  killError: string | null = null;
  /** every use of an order */
  readonly fired: OrderFired[] = [];
  /** set: a use reaches the loop this many ms after the crossing's wake-up (the order thread lagging the line's event) */
  orderFiredDelayMs: number | null = null;
  /** as the addon does: a use whose order was replaced or withdrawn before it reached the loop is dropped */
  dropsStaleUses = false;
  /**
   * false: a delayed use is not written yet when a pass flushes (the order thread itself lags);
   * true (the default): the kill is written, only its report waits for the loop, and
   * flushOrderUses() delivers it at once, as the addon does.
   */
  usesFlushable = true;
  private readonly undelivered = new Set<() => void>();
  private readonly usage = new Map<string, number>();
  private readonly lines: Line[] = [];

  /** Sets a cgroup's usage; every open line it crosses upward wakes. */
  setUsage(dir: string, bytes: number): void {
    this.usage.set(dir, bytes);
    for (const l of this.lines) if (l.dir === dir) this.check(l);
  }

  private check(l: Line): void {
    const above = (this.usage.get(l.dir) ?? 0) >= l.bytes;
    if (above && !l.above && !l.closed) {
      const at = process.hrtime.bigint();
      this.useOrder(l);
      setImmediate(() => {
        if (!l.closed) l.cb.onWakeup({ source: 'fake-threshold', monotonicNs: at, count: 1 });
      });
    }
    l.above = above;
  }

  private now(): bigint {
    return this.orderClock ? this.orderClock.now() : process.hrtime.bigint();
  }

  /** The kernel side at a crossing: a standing order not lapsed kills its pod, then says so on the loop. */
  private useOrder(l: Line): void {
    const o = l.order;
    l.order = null;
    if (!o || l.closed) return;
    const crossedNs = this.now();
    const ageMs = Number(crossedNs - o.placedNs) / 1e6;
    if (ageMs > o.order.ttlMs) return;
    const fired: OrderFired = {
      podCgroupDir: o.order.podCgroupDir,
      crossedNs,
      killedNs: crossedNs + 40_000n,
      ageMs,
      valueBytes: this.usage.get(l.dir) ?? 0,
      lineBytes: l.bytes,
    };
    if (this.killError !== null) fired.error = this.killError;
    else this.onKill?.(o.order.podCgroupDir);
    this.fired.push(fired);
    const generation = l.generation;
    const deliver = () => {
      if (this.dropsStaleUses && l.generation !== generation) return;
      l.cb.onOrderFired?.(fired);
    };
    // Delivered once, by whichever comes first: the loop's turn, or a flush.
    const once = () => {
      if (!this.undelivered.delete(once)) return;
      deliver();
    };
    this.undelivered.add(once);
    // A delay is on the order clock where there is one (the test steps it), as every wait of the agent.
    if (this.orderFiredDelayMs === null) setImmediate(once);
    else if (this.orderClock) this.orderClock.after(this.orderFiredDelayMs, once);
    else setTimeout(once, this.orderFiredDelayMs);
    if (!this.usesFlushable) this.unflushable.add(once);
  }

  private readonly unflushable = new Set<() => void>();

  flushOrderUses(): void {
    for (const d of [...this.undelivered]) if (!this.unflushable.has(d)) d();
  }

  watchMemoryUsage(dir: string, bytes: number, cb: WatchCallbacks): ThresholdHandle {
    this.created.push({ dir, bytes });
    const line: Line = { dir, bytes, cb, closed: false, above: (this.usage.get(dir) ?? 0) >= bytes, order: null, generation: 0 };
    this.lines.push(line);
    const rearms = this.rearms;
    const usage = this.usage;
    const setOrder = (order: StandingOrder | null): boolean => {
      this.orderCalls.push({ dir, order });
      line.generation++;
      if (order && this.refuseOrders) return false;
      line.order = order ? { order, placedNs: this.now() } : null;
      return true;
    };
    return {
      ...(this.holdsOrders ? { setOrder } : {}),
      mechanism: this.lineMechanism,
      get lineBytes() {
        return line.bytes;
      },
      rearm(b: number) {
        rearms.push(b);
        line.bytes = b;
        line.above = (usage.get(dir) ?? 0) >= b;
      },
      close: async () => {
        line.closed = true;
      },
    };
  }

  watchPsi(_file: string, trigger: { windowUs: number }): WatchHandle & { windowUs: number } {
    // The unprivileged kernel rule: a window is a multiple of 2 s.
    return { windowUs: Math.ceil(trigger.windowUs / 2_000_000) * 2_000_000, close: async () => {} };
  }

  watchFile(): WatchHandle {
    return { close: async () => {} };
  }
}
