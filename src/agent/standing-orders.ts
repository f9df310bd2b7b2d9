/**
 * Standing orders, the agent's half: the shell around the order book (order-book.ts), which holds
 * each order's life in one record. The rule that picks them is pure (src/policy/standing-order.ts);
 * the mechanism that keeps and uses them sits behind the line handles (Arming.setOrder,
 * WatchCallbacks.onOrderFired in ports.ts). Here: after each pass, hand the lines the orders it
 * decided, or withdraw them; withdraw them all when the pod set changes, when one is used, when a
 * pass evicted, and at stop; never place any in dry run (say what would be placed instead); and
 * log, count and journal what each transition of the book says happened.
 *
 * A used order means the pod is already dead: its record becomes a confirmation, which the next
 * passes turn into a 'confirm-order' action (report, CRI stop in the background) until both are
 * done. Nothing here is dropped: a confirmation lives until its stop is done.
 *
 * Runs on the main JS thread: passes call afterPass, the pod listing calls listed, the lines
 * call crossed and fired (the mechanism delivers on the loop).
 */
import type { Logger } from 'pino';
import { doublingMs } from '../policy/backoff';
import type { PolicyConfig } from '../policy/config';
import { confirmedEviction, type OrderChoice, type OrderDecision } from '../policy/standing-order';
import type { JoinedPod } from './active-pods';
import type { Arming } from './arming';
import { lineKey, signalOfLine, type LineKey } from './memory-lines';
import { OrderBook, type OrderRecord, type PendingConfirmation } from './order-book';
import { orderFields, usedFields } from './order-log';
import type { EvictionRecord } from './effects/eviction';
import type { AgentMetrics } from './metrics';
import { tagOf, type OrderJournal } from './order-journal';
import type { Clock, OrderFired } from './ports';

/** What one pass decided for standing orders, with what it decided on. */
export interface PassOrders {
  orders: readonly OrderDecision[];
  /** the pods the pass ranked (the victims are among them) */
  pods: readonly JoinedPod[];
  /** the runtime's ready pods the pass listed: the pod set the orders stand for */
  listedUids: ReadonlySet<string>;
}

export interface StandingOrdersOptions {
  /** the lines (null: no kernel notifications, so no order can be placed) */
  arming: () => Arming | null;
  logger: Logger;
  metrics: AgentMetrics;
  clock: Clock;
  dryRun: boolean;
  ttlMs: number;
  /** where each order goes before the mechanism holds it (absent: no state dir) */
  journal?: OrderJournal | null;
  /** the policy the orders' evictions are reported under (their message, grace) */
  policy: PolicyConfig;
}

export class StandingOrders {
  private readonly book = new OrderBook();
  /** the last listing's ready pods */
  private listedUids: ReadonlySet<string> | null = null;
  /** when a pass last decided orders (monotonic ns) */
  lastDecidedNs: bigint | null = null;
  /** per line, why the last wanted order could not be placed (logged when it changes) */
  private readonly unavailable = new Map<string, string>();
  private wouldPlace = '';
  private closed = false;

  constructor(private readonly o: StandingOrdersOptions) {}

  /** Orders in force now (lines). */
  get standingLines(): string[] {
    return this.book.standing().map((r) => r.line);
  }

  /** Used orders whose pods still wait for their report or their CRI stop. */
  pendingConfirmations(): PendingConfirmation[] {
    return this.book.confirming();
  }

  /**
   * After a pass (and after the lines moved to its numbers): places the orders it decided, or
   * withdraws them. Returns whether orders were placed (or, in dry run, would be), so the agent
   * refreshes them before they lapse, and whether the pod set moved under the pass, so the agent
   * runs another at once.
   */
  afterPass(p: PassOrders, evicted: boolean): { placed: boolean; stale: boolean } {
    if (this.closed) return { placed: false, stale: false };
    const now = this.o.clock.now();
    this.lastDecidedNs = now;
    this.book.prune(now);
    // An eviction this pass (or a confirmation) changed the node: the next pass, which the
    // eviction asked for, decides on fresh numbers.
    if (evicted) {
      this.withdrawAll('evicted');
      return { placed: false, stale: false };
    }
    // The listing moved since the pass listed (a background refresh): its ranking is stale.
    if (this.listedUids !== null && !sameSet(p.listedUids, this.listedUids)) {
      this.withdrawAll('pod-set');
      return { placed: false, stale: true };
    }
    const wanted = p.orders.flatMap((d) => (d.order ? [d.order] : []));
    // No lines (no kernel notifications): nothing could hold an order, live or rehearsed.
    const arming = this.o.arming();
    if (!arming) return { placed: false, stale: false };
    if (this.o.dryRun) {
      this.rehearse(wanted);
      return { placed: wanted.length > 0, stale: false };
    }
    const byUid = new Map(p.pods.map((j) => [j.runtime.uid, j]));
    // On disk before the mechanism can use it: a kill its thread writes while this process dies
    // is found by the next start (order-journal.ts).
    for (const c of wanted) this.journal(c, byUid.get(c.pod.uid));
    // Lines crossed with their order on: left as they stand, wanted or not, until the use arrives
    // or the hold is over (OrderBook.crossed).
    const kept = this.book.heldLines(now);
    for (const choice of wanted) {
      const line = lineKey(choice.signal, choice.thresholdIndex);
      if (kept.has(line)) continue;
      const pod = byUid.get(choice.pod.uid);
      const pl = pod
        ? arming.setOrder(line, {
            podCgroupDir: choice.podCgroupDir,
            ...(choice.podMemoryDir !== undefined ? { podMemoryDir: choice.podMemoryDir } : {}),
            ttlMs: choice.ttlMs,
            tag: tagOf(choice),
          })
        : { placed: false, why: 'refused' as const };
      if (!pl.placed || !pod) {
        this.noteUnavailable(line, pl.why ?? 'refused', pl.mechanism);
        continue;
      }
      kept.add(line);
      this.unavailable.delete(line);
      const { record, refreshed, replaced } = this.book.place(line, choice, pod, now);
      const fields = orderFields(record.line, record.choice);
      if (refreshed) {
        this.o.logger.debug(fields, 'standing order refreshed');
      } else {
        this.o.metrics.ordersPlaced.inc({ signal: choice.signal });
        this.o.logger.info({ ...fields, replaces: replaced ? replaced.choice.pod.name : undefined }, 'standing order placed');
      }
    }
    // Orders this pass did not place again and not held: withdrawn, saying why.
    const why = new Map(p.orders.map((d) => [lineKey(d.signal, d.thresholdIndex), d.order ? 'refused' : d.why]));
    for (const r of this.book.standing()) {
      if (kept.has(r.line)) continue;
      const reason = why.get(r.line) ?? 'no-line';
      this.withdraw(r, reason);
      this.o.metrics.ordersWithdrawn.inc({ reason });
      this.o.logger.info({ ...orderFields(r.line, r.choice), reason }, 'standing order withdrawn');
    }
    this.setGauge();
    return { placed: this.book.standing().length > 0, stale: false };
  }

  /** Writes the order's eviction (as a use would report it, at the line) to the order journal. */
  private journal(c: OrderChoice, pod: JoinedPod | undefined): void {
    if (!this.o.journal || !pod) return;
    const { eviction } = confirmedEviction(this.o.policy, { order: c, availableBytes: Math.max(0, c.lineBytes - 1), crossedNs: 0n, killedNs: 0n });
    this.o.journal.placed({
      tag: tagOf(c),
      pod: eviction.pod,
      sandboxId: pod.runtime.sandboxId,
      signal: eviction.signal,
      message: eviction.message,
      gracePeriodSeconds: eviction.gracePeriodSeconds,
      annotations: eviction.annotations,
    });
  }

  /**
   * A listing of the runtime's pods (a pass's or a background refresh): when the pod set is not
   * the one the orders stand for, they are withdrawn (a new pod may rank first; a gone one cannot
   * be the kubelet's pick). True when it withdrew: the agent then runs a pass to place new ones.
   */
  listed(uids: ReadonlySet<string>): boolean {
    const changed = this.listedUids !== null && !sameSet(uids, this.listedUids);
    this.listedUids = new Set(uids);
    if (!changed || this.book.standing().length === 0) return false;
    this.withdrawAll('pod-set');
    return true;
  }

  /** A line's own wake-up: its order, if it holds one, is left alone until its use can have arrived (OrderBook.crossed). */
  crossed(line: LineKey): void {
    this.book.crossed(line, this.o.clock.now());
  }

  /** A line went away (its mechanism closed it, or it ended): its order went with it. */
  lineGone(line: LineKey): void {
    const r = this.book.standingOn(line);
    if (!r) return;
    this.book.withdraw(r, 'no-line');
    this.o.metrics.ordersWithdrawn.inc({ reason: 'no-line' });
    this.o.logger.info({ ...orderFields(r.line, r.choice), reason: 'no-line' }, 'standing order withdrawn');
    this.setGauge();
  }

  /**
   * A line's mechanism used its order: the pod was killed at the crossing (or the kill failed,
   * `error`). Logged and counted; the order's record becomes a confirmation; every other order
   * is withdrawn (the pod set just changed). True when a pass must run at once.
   */
  fired(line: LineKey, f: OrderFired): boolean {
    const now = this.o.clock.now();
    this.book.prune(now);
    const outcome = this.book.used(line, f, now);
    const record = outcome.kind === 'unknown' ? undefined : outcome.record;
    const signal = record?.choice.signal ?? signalOfLine(line);
    const fields = usedFields(line, signal, f, record?.choice, 'availableBytes' in outcome ? outcome.availableBytes : undefined);
    this.withdrawAll('used');
    if (outcome.kind === 'kill-failed') {
      // Nothing was killed: the pass this wakes sees the line crossed and evicts as usual.
      this.o.metrics.evictionFailures.inc({ signal, step: 'standing-order-kill' });
      this.o.logger.warn({ ...fields, error: f.error }, 'standing order used but its kill failed; the pass decides');
      return true;
    }
    this.o.metrics.ordersUsed.inc({ signal });
    this.o.metrics.orderAge.observe({ signal }, f.ageMs / 1000);
    this.o.metrics.orderCrossedToKilled.observe({ signal }, Math.max(0, Number(f.killedNs - f.crossedNs)) / 1e9);
    switch (outcome.kind) {
      case 'unknown':
        // Not one of ours (or remembered past its TTL): the kill happened; the pass sees what is left.
        this.o.logger.error(fields, 'standing order used for a pod evictd holds no order for');
        return true;
      case 'superseded':
        this.o.logger.info(fields, 'standing order used on a pod already evicted; reported once, under this threshold');
        return false;
      case 'duplicate':
        // Another line's order on the same pod, or a pass that saw the crossing first (the line's
        // wake-up can reach the loop before the order thread's report) and evicted it: one kill
        // of ours already stands for this eviction, and it is reported once.
        this.o.logger.info(fields, 'standing order used on a pod already evicted; reported once');
        return false;
      case 'confirming':
        this.o.logger.warn(fields, 'standing order used: pod killed as the line was crossed; the next pass stops and reports it');
        return true;
    }
  }

  /** Every eviction record: a confirmation's marks it reported (over, when its sandbox is stopped too), else counts an attempt. */
  recorded(rec: EvictionRecord): void {
    const now = this.o.clock.now();
    if (rec.action === 'standing-order') {
      this.book.reported(rec.pod.uid, rec.ok, now);
      return;
    }
    if (!rec.ok || rec.dryRun) return;
    // A pass evicted this pod itself: that eviction is the report, its stop the stop. A used
    // order on it that reached the loop while the pass acted is not confirmed a second time.
    const ended = this.book.passEvictedPod(rec.pod.uid, rec.sandboxId, now);
    if (ended) {
      this.o.logger.info(
        { pod: `${rec.pod.namespace}/${rec.pod.name}`, uid: rec.pod.uid, line: ended.line },
        'standing order used on a pod the pass evicted; reported once',
      );
    }
  }

  /** A confirmation's background stop ended: null when the sandbox is stopped, else why not (a later pass tries again). */
  stopped(uid: string, error: string | null): void {
    this.book.stopped(uid, error, this.o.clock.now());
  }

  /** When to try failed confirmations again: 1 s, doubling per failure, at most `capMs`; null when none failed. */
  retryInMs(capMs: number): number | null {
    const attempts = this.book.failedAttempts();
    return attempts === 0 ? null : doublingMs(attempts, 1000, capMs);
  }

  /** Withdraws every order in force (uses racing this are still confirmed), but held ones (OrderBook.crossed), unless `all`. */
  withdrawAll(reason: string, o: { all?: boolean } = {}): void {
    const held = o.all ? new Set<LineKey>() : this.book.heldLines(this.o.clock.now());
    const had = this.book.standing().filter((r) => !held.has(r.line));
    for (const r of had) this.withdraw(r, reason);
    this.wouldPlace = '';
    if (had.length > 0) {
      this.o.metrics.ordersWithdrawn.inc({ reason }, had.length);
      this.o.logger.info({ reason, lines: had.map((r) => r.line), pods: had.map((r) => r.choice.pod.name) }, 'standing orders withdrawn');
    }
    this.setGauge();
  }

  /** Takes the order off its line and marks its record withdrawn. */
  private withdraw(r: OrderRecord, reason: string): void {
    this.book.withdraw(r, reason);
    this.o.arming()?.setOrder(r.line, null);
  }

  /** At stop: no order may outlive the agent. */
  close(): void {
    this.withdrawAll('agent-stop', { all: true });
    this.closed = true;
    const pending = this.book.confirming();
    if (pending.length > 0) {
      this.o.logger.warn(
        { pods: pending.map((p) => `${p.confirmation.order.pod.namespace}/${p.confirmation.order.pod.name}`) },
        'stopping with pods killed by a standing order but not yet stopped through the runtime',
      );
    }
  }

  /** Dry run: the orders that would be placed, said when they change. */
  private rehearse(wanted: readonly OrderChoice[]): void {
    const key = wanted.map((c) => `${lineKey(c.signal, c.thresholdIndex)}=${c.pod.uid}`).join(',');
    if (key === this.wouldPlace) return;
    this.wouldPlace = key;
    for (const c of wanted) {
      this.o.logger.info({ ...orderFields(lineKey(c.signal, c.thresholdIndex), c), dryRun: true }, 'would place standing order (dry run)');
    }
  }

  private noteUnavailable(line: string, why: string, mechanism: string | undefined): void {
    this.o.metrics.ordersUnavailable.inc({ line, why });
    if (this.unavailable.get(line) === why) return;
    this.unavailable.set(line, why);
    this.o.logger.info({ line, why, mechanism }, 'standing order not placed: the line cannot hold one');
  }

  private setGauge(): void {
    this.o.metrics.ordersStanding.reset();
    for (const r of this.book.standing()) this.o.metrics.ordersStanding.set({ line: r.line }, 1);
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
