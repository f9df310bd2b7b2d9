/**
 * Standing orders, the agent's half. The rule that picks them is pure
 * (src/policy/standing-order.ts); the mechanism that keeps and uses them sits behind the line
 * handles (ThresholdHandle.setOrder, WatchCallbacks.onOrderFired in ports.ts). Here: after each
 * pass, place the orders it decided on their lines (Arming.placeOrders) or withdraw them; keep
 * what each order named, so that a used one can be confirmed; withdraw them all when the pod set
 * changes, when one is used, when a pass evicted, and at stop; never place any in dry run (say
 * what would be placed instead).
 *
 * A used order means the pod is already dead: it is held as a pending confirmation, which the
 * next passes turn into a 'confirm-order' action (report, CRI stop in the background) until both
 * are done. Nothing here is dropped: a confirmation lives until its stop is done.
 *
 * Runs on the main JS thread: passes call afterPass, the pod listing calls listed, the lines
 * call fired (the mechanism delivers on the loop).
 */
import type { Logger } from 'pino';
import { doublingMs } from '../policy/backoff';
import type { PolicyConfig } from '../policy/config';
import { availableAtCrossing, confirmedEviction, reportedUnder, type OrderChoice, type OrderConfirmation, type OrderDecision } from '../policy/standing-order';
import type { JoinedPod } from './active-pods';
import type { Arming } from './arming';
import { lineKey, signalOfLine, type LineKey } from './memory-lines';
import { orderFields, usedFields } from './order-log';
import { msBetween } from './clock';
import type { EvictionRecord } from './effects/eviction';
import type { AgentMetrics } from './metrics';
import { tagOf, type OrderJournal } from './order-journal';
import type { Clock, OrderFired } from './ports';

/** A used order waiting for its report and its CRI stop. */
export interface PendingConfirmation {
  confirmation: OrderConfirmation;
  /** the pod as the placing pass joined it (sandbox, cgroup): by now it may be gone from the listing */
  pod: JoinedPod;
  line: string;
  /** the sandbox is stopped (with `confirmation.reported`, the confirmation is over) */
  stopped: boolean;
  /** attempts that failed so far (a stop, or a report that waited for a stop) */
  attempts: number;
}

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

interface Placed {
  choice: OrderChoice;
  pod: JoinedPod;
  line: LineKey;
  placedNs: bigint;
}

/** how long a confirmed pod's uid is remembered, so a second line's use of the same kill is not confirmed twice */
const DONE_MEMORY_MS = 60_000;
/** how long past its TTL an order is still recognized when its use reaches the loop (see `recent`) */
const RECENT_GRACE_MS = 60_000;

export class StandingOrders {
  /** orders in force, by line */
  private readonly standing = new Map<LineKey, Placed>();
  /**
   * Every order the mechanism may still use, by line and pod dir, until its TTL is over and
   * RECENT_GRACE_MS more: a use can race a withdrawal (the kill is written on another thread), and
   * its report reaches the loop only when the loop is free, which may be after the TTL (the lab
   * saw an order used at 965 ms of its 1 s reach the loop after it); either way the kill happened
   * and must still be confirmed.
   */
  private readonly recent = new Map<string, Placed & { untilNs: bigint }>();
  private readonly pending = new Map<string, PendingConfirmation>();
  /**
   * Pods whose eviction is over, by uid, with the sandbox it stopped: a use on the same sandbox
   * is that eviction's; a use on another sandbox of the uid is the pod restarted in place (the
   * kubelet keeps the uid), a new eviction to report.
   */
  private readonly done = new Map<string, { at: bigint; sandboxId: string }>();
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
    return [...this.standing.keys()];
  }

  /** Used orders whose pods still wait for their CRI stop. */
  pendingConfirmations(): PendingConfirmation[] {
    return [...this.pending.values()];
  }

  /** Pods the passes must leave out of their ranking: their kill was written, their confirmation is pending. */
  isConfirming(uid: string): boolean {
    return this.pending.has(uid);
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
    this.prune(now);
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
    const placements = arming.placeOrders(
      wanted.map((c) => ({ signal: c.signal, thresholdIndex: c.thresholdIndex, order: { podCgroupDir: c.podCgroupDir, ttlMs: c.ttlMs, tag: tagOf(c) } })),
    );
    const placedLines = new Set<string>();
    placements.forEach((pl, i) => {
      const choice = wanted[i]!;
      const pod = byUid.get(choice.pod.uid);
      if (pl.why === 'held') {
        // Crossed with its order on: left as it stands until the use arrives or the order lapses.
        if (this.standing.has(pl.line)) placedLines.add(pl.line);
        return;
      }
      if (!pl.placed || !pod) {
        this.noteUnavailable(pl.line, pl.why ?? 'refused', pl.mechanism);
        return;
      }
      placedLines.add(pl.line);
      this.unavailable.delete(pl.line);
      const before = this.standing.get(pl.line);
      const placed: Placed = { choice, pod, line: pl.line, placedNs: now };
      this.standing.set(pl.line, placed);
      this.recent.set(recentKey(pl.line, choice.podCgroupDir), { ...placed, untilNs: now + BigInt(choice.ttlMs) * 1_000_000n });
      const fields = orderFields(placed.line, placed.choice);
      if (before?.choice.pod.uid === choice.pod.uid) {
        this.o.logger.debug(fields, 'standing order refreshed');
      } else {
        this.o.metrics.ordersPlaced.inc({ signal: choice.signal });
        this.o.logger.info({ ...fields, replaces: before ? before.choice.pod.name : undefined }, 'standing order placed');
      }
    });
    // Lines that held an order and no longer do (placeOrders withdrew them): say why.
    const why = new Map(p.orders.map((d) => [lineKey(d.signal, d.thresholdIndex), d.order ? 'refused' : d.why]));
    const held = new Set(arming.heldLines());
    for (const [line, placed] of [...this.standing]) {
      if (placedLines.has(line) || held.has(line)) continue;
      this.standing.delete(line);
      const reason = why.get(line) ?? 'no-line';
      this.o.metrics.ordersWithdrawn.inc({ reason });
      this.o.logger.info({ ...orderFields(placed.line, placed.choice), reason }, 'standing order withdrawn');
    }
    this.setGauge();
    return { placed: this.standing.size > 0, stale: false };
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
    if (!changed || this.standing.size === 0) return false;
    this.withdrawAll('pod-set');
    return true;
  }

  /**
   * A line's mechanism used its order: the pod was killed at the crossing (or the kill failed,
   * `error`). Logged and counted; the order's pod becomes a pending confirmation; every other
   * order is withdrawn (the pod set just changed). True when a pass must run at once.
   */
  fired(line: string, f: OrderFired): boolean {
    const now = this.o.clock.now();
    this.prune(now);
    const placed = this.recent.get(recentKey(line, f.podCgroupDir));
    const signal = placed?.choice.signal ?? signalOfLine(line);
    const available = placed ? availableAtCrossing(placed.choice, f) : undefined;
    const fields = usedFields(line, signal, f, placed?.choice, available);
    this.withdrawAll('used');
    if (f.error !== undefined) {
      // Nothing was killed: the pass this wakes sees the line crossed and evicts as usual.
      this.o.metrics.evictionFailures.inc({ signal, step: 'standing-order-kill' });
      this.o.logger.warn({ ...fields, error: f.error }, 'standing order used but its kill failed; the pass decides');
      return true;
    }
    this.o.metrics.ordersUsed.inc({ signal });
    this.o.metrics.orderAge.observe({ signal }, f.ageMs / 1000);
    this.o.metrics.orderCrossedToKilled.observe({ signal }, Math.max(0, Number(f.killedNs - f.crossedNs)) / 1e9);
    if (!placed) {
      // Not one of ours (or remembered past its TTL): the kill happened; the pass sees what is left.
      this.o.logger.error(fields, 'standing order used for a pod evictd holds no order for');
      return true;
    }
    const uid = placed.choice.pod.uid;
    const pending = this.pending.get(uid);
    if (pending && !pending.confirmation.reported && reportedUnder(pending.confirmation.order, placed.choice) === placed.choice) {
      // The other line's use reached the loop first; the eviction is reported, once, under this one.
      pending.confirmation = { ...pending.confirmation, order: placed.choice, availableBytes: available! };
      pending.line = line;
      this.o.logger.info(fields, 'standing order used on a pod already evicted; reported once, under this threshold');
      return false;
    }
    if (this.pending.has(uid) || this.done.get(uid)?.sandboxId === placed.pod.runtime.sandboxId) {
      // Another line's order on the same pod, or a pass that saw the crossing first (the line's
      // wake-up can reach the loop before the order thread's report) and evicted it: one kill
      // of ours already stands for this eviction, and it is reported once.
      this.o.logger.info(fields, 'standing order used on a pod already evicted; reported once');
      return false;
    }
    this.pending.set(uid, {
      confirmation: { order: placed.choice, availableBytes: available!, crossedNs: f.crossedNs, killedNs: f.killedNs },
      pod: placed.pod,
      line,
      stopped: false,
      attempts: 0,
    });
    this.o.logger.warn(fields, 'standing order used: pod killed as the line was crossed; the next pass stops and reports it');
    return true;
  }

  /** Every eviction record: a confirmation's marks it reported (over, when its sandbox is stopped too), else counts an attempt. */
  recorded(rec: EvictionRecord): void {
    if (rec.action !== 'standing-order') {
      if (!rec.ok || rec.dryRun) return;
      // A pass evicted this pod itself: that eviction is the report, its stop the stop. A used
      // order on it that reached the loop while the pass acted is not confirmed a second time.
      const p = this.pending.get(rec.pod.uid);
      if (p && !p.confirmation.reported) {
        this.pending.delete(rec.pod.uid);
        this.o.logger.info(
          { pod: `${rec.pod.namespace}/${rec.pod.name}`, uid: rec.pod.uid, line: p.line },
          'standing order used on a pod the pass evicted; reported once',
        );
      }
      this.done.set(rec.pod.uid, { at: this.o.clock.now(), sandboxId: rec.sandboxId });
      return;
    }
    const p = this.pending.get(rec.pod.uid);
    if (!p) return;
    if (rec.ok) p.confirmation.reported = true;
    else p.attempts++;
    this.endIfDone(rec.pod.uid, p);
  }

  /** A confirmation's background stop ended: null when the sandbox is stopped, else why not (a later pass tries again). */
  stopped(uid: string, error: string | null): void {
    const p = this.pending.get(uid);
    if (!p) return;
    if (error === null) p.stopped = true;
    else p.attempts++;
    this.endIfDone(uid, p);
  }

  private endIfDone(uid: string, p: PendingConfirmation): void {
    if (!p.stopped || !p.confirmation.reported) return;
    this.pending.delete(uid);
    this.done.set(uid, { at: this.o.clock.now(), sandboxId: p.pod.runtime.sandboxId });
  }

  /** When to try failed confirmations again: 1 s, doubling per failure, at most `capMs`; null when none failed. */
  retryInMs(capMs: number): number | null {
    let attempts = 0;
    for (const p of this.pending.values()) attempts = Math.max(attempts, p.attempts);
    if (attempts === 0) return null;
    return doublingMs(attempts, 1000, capMs);
  }

  /**
   * Withdraws every order in force (uses racing this are still confirmed), but those of lines
   * crossed with their order on, whose use may be on its way (Arming's `held`), unless `all`.
   */
  withdrawAll(reason: string, o: { all?: boolean } = {}): void {
    const arming = this.o.arming();
    const lines = arming?.withdrawOrders(o) ?? [];
    const held = new Set(o.all ? [] : (arming?.heldLines() ?? []));
    const had = [...this.standing.values()].filter((p) => !held.has(p.line));
    for (const p of had) this.standing.delete(p.line);
    this.wouldPlace = '';
    if (had.length > 0 || lines.length > 0) {
      this.o.metrics.ordersWithdrawn.inc({ reason }, Math.max(had.length, lines.length));
      this.o.logger.info({ reason, lines: had.map((p) => p.line), pods: had.map((p) => p.choice.pod.name) }, 'standing orders withdrawn');
    }
    this.setGauge();
  }

  /** At stop: no order may outlive the agent. */
  close(): void {
    this.withdrawAll('agent-stop', { all: true });
    this.closed = true;
    if (this.pending.size > 0) {
      this.o.logger.warn(
        { pods: [...this.pending.values()].map((p) => `${p.confirmation.order.pod.namespace}/${p.confirmation.order.pod.name}`) },
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
    for (const line of this.standing.keys()) this.o.metrics.ordersStanding.set({ line }, 1);
  }

  private prune(now: bigint): void {
    for (const [k, r] of this.recent) if (r.untilNs + BigInt(RECENT_GRACE_MS) * 1_000_000n < now) this.recent.delete(k);
    for (const [uid, d] of this.done) if (msBetween(d.at, now) > DONE_MEMORY_MS) this.done.delete(uid);
  }
}

const recentKey = (line: string, dir: string): string => `${line}\n${dir}`;

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
