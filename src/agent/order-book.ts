/**
 * The standing orders' state: one record per order, from its placement to the end of its
 * confirmation. Pure: no I/O and no clock of its own (every transition takes `now`); each
 * transition says what happened, and the shell (standing-orders.ts) logs, counts and calls the
 * lines accordingly.
 *
 * An order's life:
 *
 *   standing ──(its line crossed)──> standing, held ──(used)──> confirming ──(reported and stopped)──> over
 *      │                                  │                          └─(a pass evicted the pod first)──> over
 *      └──(withdrawn, replaced, lapsed)───┴──> withdrawn ──(a use that raced it)──> confirming ...
 *   used on a pod already confirming or evicted ──> over (a duplicate, or it takes the confirmation
 *   over when the eviction is reported under its threshold: the first is then superseded)
 *
 * A use reaches the loop after the kill, by up to the loop's busiest turn, so a record is looked up
 * in every phase until its TTL and RECENT_GRACE_MS more: a use that raced a withdrawal, or a busy
 * loop past the TTL, still finds the order it used, and the kill is still confirmed.
 */
import { availableAtCrossing, reportedUnder, type OrderChoice, type OrderConfirmation } from '../policy/standing-order';
import type { JoinedPod } from './active-pods';
import type { LineKey } from './memory-lines';
import type { OrderFired } from './ports';

export type OrderId = number & { readonly __brand: 'OrderId' };
export type OrderPhase = 'standing' | 'withdrawn' | 'confirming' | 'over';
/** How an order that was used came to its end. */
export type OrderEnd = 'confirmed' | 'duplicate' | 'superseded' | 'pass-evicted' | 'kill-failed';

/** A used order's confirmation: the eviction its kill stands for, reported and stopped once each. */
export interface OrderUse {
  confirmation: OrderConfirmation;
  /** the sandbox is stopped (with `confirmation.reported`, the confirmation is over) */
  stopped: boolean;
  /** attempts that failed so far (a stop, or a report that waited for a stop) */
  attempts: number;
}

export interface OrderRecord {
  readonly id: OrderId;
  readonly line: LineKey;
  /** what the order names (a refresh replaces it with the refreshing pass's choice) */
  choice: OrderChoice;
  /** the pod as the placing pass joined it (sandbox, cgroup): by the time it is confirmed it may be gone from the listing */
  pod: JoinedPod;
  phase: OrderPhase;
  /** when the mechanism drops it unless refreshed (monotonic ns) */
  untilNs: bigint;
  /** its line was crossed while it stood: left as it is until its use arrives or this passes */
  heldUntilNs: bigint | null;
  /** why it was withdrawn, while `withdrawn` */
  withdrawnBecause: string | null;
  /** from its use on: the eviction it stands for */
  use: OrderUse | null;
  /** from `over` on: how, and when */
  end: OrderEnd | null;
  endedNs: bigint | null;
}

/** A used order whose pod waits for its report and its CRI stop, as a pass takes it. */
export interface PendingConfirmation extends OrderUse {
  pod: JoinedPod;
  line: LineKey;
}

/** What a use came to. */
export type UseOutcome =
  /** no record named that pod on that line (not ours, or forgotten past its TTL and the grace) */
  | { kind: 'unknown' }
  /** the mechanism could not kill: nothing to confirm */
  | { kind: 'kill-failed'; record: OrderRecord | undefined }
  /** the pod was killed: its confirmation begins */
  | { kind: 'confirming'; record: OrderRecord; availableBytes: number }
  /** the pod's confirmation was under way from another line's use: now reported under this order's threshold */
  | { kind: 'superseded'; record: OrderRecord; superseded: OrderRecord; availableBytes: number }
  /** the pod's eviction already stands (another use, or a pass that evicted it): reported once */
  | { kind: 'duplicate'; record: OrderRecord; availableBytes: number };

/** how long a confirmed pod's uid is remembered, so a second line's use of the same kill is not confirmed twice */
const DONE_MEMORY_NS = 60_000n * 1_000_000n;
/** how long past its TTL an order is still recognized when its use reaches the loop */
const RECENT_GRACE_NS = 60_000n * 1_000_000n;

export class OrderBook {
  private readonly records = new Map<OrderId, OrderRecord>();
  /**
   * Pods a pass evicted itself (not through an order), by uid, with the sandbox it stopped: a use
   * on the same sandbox is that eviction's; a use on another sandbox of the uid is the pod
   * restarted in place (the kubelet keeps the uid), a new eviction to report.
   */
  private readonly passEvicted = new Map<string, { at: bigint; sandboxId: string }>();
  private nextId = 1;

  /** The order standing on a line, if any. */
  standingOn(line: LineKey): OrderRecord | undefined {
    for (const r of this.records.values()) if (r.phase === 'standing' && r.line === line) return r;
    return undefined;
  }

  standing(): OrderRecord[] {
    return [...this.records.values()].filter((r) => r.phase === 'standing');
  }

  /** Lines whose order was crossed while standing and whose use may still be on its way. */
  heldLines(now: bigint): Set<LineKey> {
    return new Set(this.standing().flatMap((r) => (r.heldUntilNs !== null && r.heldUntilNs >= now ? [r.line] : [])));
  }

  /** Used orders whose pods still wait for their report or their CRI stop. */
  confirming(): PendingConfirmation[] {
    return [...this.records.values()].flatMap((r) => (r.phase === 'confirming' && r.use ? [{ ...r.use, pod: r.pod, line: r.line }] : []));
  }

  private confirmingFor(uid: string): OrderRecord | undefined {
    for (const r of this.records.values()) if (r.phase === 'confirming' && r.choice.pod.uid === uid) return r;
    return undefined;
  }

  /** Every record, for tests and the walk in the docs. */
  all(): readonly OrderRecord[] {
    return [...this.records.values()];
  }

  /**
   * The mechanism holds this order on its line now. The same pod on the same line is a refresh
   * (the record lives on with the new TTL); another pod replaces the standing one, which is withdrawn.
   */
  place(line: LineKey, choice: OrderChoice, pod: JoinedPod, now: bigint): { record: OrderRecord; refreshed: boolean; replaced: OrderRecord | null } {
    const untilNs = now + BigInt(choice.ttlMs) * 1_000_000n;
    const before = this.standingOn(line);
    if (before && before.choice.pod.uid === choice.pod.uid && before.choice.podCgroupDir === choice.podCgroupDir) {
      before.choice = choice;
      before.pod = pod;
      before.untilNs = untilNs;
      return { record: before, refreshed: true, replaced: null };
    }
    if (before) this.withdraw(before, 'replaced');
    const record: OrderRecord = {
      id: this.nextId++ as OrderId,
      line,
      choice,
      pod,
      phase: 'standing',
      untilNs,
      heldUntilNs: null,
      withdrawnBecause: null,
      use: null,
      end: null,
      endedNs: null,
    };
    this.records.set(record.id, record);
    return { record, refreshed: false, replaced: before ?? null };
  }

  /**
   * The line was crossed: its standing order may have been used, and the use reaches the loop
   * after the line's own wake-up (by up to 150 ms in the pure v2 lab). A mechanism that delivered
   * a use only to the order in force would lose it if the order were replaced or withdrawn in
   * between, so the order is held as it is until its use arrives or its TTL is over.
   */
  crossed(line: LineKey, now: bigint): void {
    const r = this.standingOn(line);
    if (r) r.heldUntilNs = now + BigInt(r.choice.ttlMs) * 1_000_000n;
  }

  withdraw(r: OrderRecord, because: string): void {
    if (r.phase !== 'standing') return;
    r.phase = 'withdrawn';
    r.withdrawnBecause = because;
    r.heldUntilNs = null;
  }

  /**
   * A line's mechanism used an order (or tried: `f.error`). The record it used is looked up in
   * every phase (see the header), and the use becomes its confirmation, unless the pod's eviction
   * already stands: then it is the same eviction, reported once (under this order's threshold
   * when that one wins, reportedUnder).
   */
  used(line: LineKey, f: OrderFired, now: bigint): UseOutcome {
    const record = this.find(line, f.podCgroupDir);
    const unused = record && (record.phase === 'standing' || record.phase === 'withdrawn') ? record : undefined;
    if (f.error !== undefined) {
      if (unused) this.end(unused, 'kill-failed', now);
      return { kind: 'kill-failed', record };
    }
    if (!record) return { kind: 'unknown' };
    const availableBytes = availableAtCrossing(record.choice, f);
    const uid = record.choice.pod.uid;
    const first = this.confirmingFor(uid);
    if (unused && first?.use && !first.use.confirmation.reported && reportedUnder(first.use.confirmation.order, unused.choice) === unused.choice) {
      // Both lines' orders named the pod and one charge crossed both; the other line's use reached
      // the loop first. One kill (its times, stop and attempts are the first's), reported under this threshold.
      unused.phase = 'confirming';
      unused.pod = first.pod;
      unused.use = { ...first.use, confirmation: { ...first.use.confirmation, order: unused.choice, availableBytes } };
      first.use = null;
      this.end(first, 'superseded', now);
      return { kind: 'superseded', record: unused, superseded: first, availableBytes };
    }
    if (!unused || first || this.evicted(uid, record.pod.runtime.sandboxId, now)) {
      if (unused) this.end(unused, 'duplicate', now);
      return { kind: 'duplicate', record, availableBytes };
    }
    unused.phase = 'confirming';
    unused.heldUntilNs = null;
    unused.use = { confirmation: { order: unused.choice, availableBytes, crossedNs: f.crossedNs, killedNs: f.killedNs }, stopped: false, attempts: 0 };
    return { kind: 'confirming', record: unused, availableBytes };
  }

  /**
   * A pass evicted this pod itself: that eviction is the report, its stop the stop. A confirmation
   * under way on it (a use that reached the loop while the pass acted) is over; returned, if any.
   */
  passEvictedPod(uid: string, sandboxId: string, now: bigint): OrderRecord | null {
    const r = this.confirmingFor(uid);
    const ended = r?.use && !r.use.confirmation.reported ? r : null;
    if (ended) this.end(ended, 'pass-evicted', now);
    this.passEvicted.set(uid, { at: now, sandboxId });
    return ended;
  }

  /** The confirmation's report was written (ok) or failed. */
  reported(uid: string, ok: boolean, now: bigint): void {
    const r = this.confirmingFor(uid);
    if (!r?.use) return;
    if (ok) r.use.confirmation.reported = true;
    else r.use.attempts++;
    this.endIfDone(r, now);
  }

  /** The confirmation's CRI stop ended: null when the sandbox is stopped, else why not. */
  stopped(uid: string, error: string | null, now: bigint): void {
    const r = this.confirmingFor(uid);
    if (!r?.use) return;
    if (error === null) r.use.stopped = true;
    else r.use.attempts++;
    this.endIfDone(r, now);
  }

  /** The most failed attempts of any confirmation (0: none failed). */
  failedAttempts(): number {
    let n = 0;
    for (const c of this.confirming()) n = Math.max(n, c.attempts);
    return n;
  }

  /** Forgets what no use can name any more: orders past their TTL and the grace, evictions past their memory. */
  prune(now: bigint): void {
    for (const [id, r] of this.records) {
      if (r.phase === 'confirming') continue;
      // A held order stands until its hold is over, past its TTL too (see `crossed`).
      if (r.phase === 'standing' && (r.untilNs >= now || (r.heldUntilNs !== null && r.heldUntilNs >= now))) continue;
      const known = r.untilNs + RECENT_GRACE_NS >= now;
      const remembered = r.end === 'confirmed' && r.endedNs !== null && r.endedNs + DONE_MEMORY_NS >= now;
      if (r.phase === 'standing') this.withdraw(r, 'lapsed');
      if (!known && !remembered) this.records.delete(id);
    }
    for (const [uid, d] of this.passEvicted) if (d.at + DONE_MEMORY_NS < now) this.passEvicted.delete(uid);
  }

  private find(line: LineKey, podCgroupDir: string): OrderRecord | undefined {
    let found: OrderRecord | undefined;
    for (const r of this.records.values()) if (r.line === line && r.choice.podCgroupDir === podCgroupDir && (!found || r.id > found.id)) found = r;
    return found;
  }

  /** Whether this pod's eviction on this sandbox is over (an order's, confirmed, or a pass's). */
  private evicted(uid: string, sandboxId: string, now: bigint): boolean {
    if (this.passEvicted.get(uid)?.sandboxId === sandboxId) return true;
    for (const r of this.records.values()) {
      if (r.end === 'confirmed' && r.choice.pod.uid === uid && r.pod.runtime.sandboxId === sandboxId && r.endedNs! + DONE_MEMORY_NS >= now) return true;
    }
    return false;
  }

  private endIfDone(r: OrderRecord, now: bigint): void {
    if (r.use?.stopped && r.use.confirmation.reported) this.end(r, 'confirmed', now);
  }

  private end(r: OrderRecord, how: OrderEnd, now: bigint): void {
    r.phase = 'over';
    r.end = how;
    r.endedNs = now;
    r.heldUntilNs = null;
  }
}
