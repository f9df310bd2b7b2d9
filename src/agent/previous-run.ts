/**
 * What a previous run of evictd left behind, taken over at start: the brakes it left on (released
 * or re-owned once this run can see and act) and the evictions it began but did not finish (a
 * journal entry, or a kill an order thread wrote before that run could confirm it), finished
 * here in the background: their stop, then their report.
 */
import type { Logger } from 'pino';
import { doublingMs } from '../policy/backoff';
import { cancel } from './clock';
import { reportAndEnd } from './effects/eviction';
import type { BrakeEntry } from './effects/brake-record';
import type { MemoryBrakes } from './effects/memory-brake';
import type { EvictionJournal, JournalEntry } from './eviction-journal';
import type { OrderJournal } from './order-journal';
import type { Clock, EvictionReporter, RuntimePort, Timer, Wakeup } from './ports';

/** How long a previous run's brakes wait for the first pass before they are released anyway. */
const BRAKE_RECOVERY_MAX_MS = 10_000;

export interface PreviousRunOptions {
  brakes: MemoryBrakes | null;
  journal: EvictionJournal | null;
  orderJournal: OrderJournal | null;
  runtime: RuntimePort;
  reporter?: EvictionReporter;
  logger: Logger;
  clock: Clock;
  dryRun: boolean;
  housekeepingIntervalMs: number;
  wake: (w: Wakeup) => void;
}

export class PreviousRun {
  /**
   * A previous run's brakes are released once this run can see and act (after its first pass
   * has armed the lines), not at start: until then the brake is all that holds a ramping pod.
   */
  private brakeRecovery: Timer | null = null;
  private recordedBrakes: BrakeEntry[] | null = null;
  /** retries of evictions a crashed run began, whose stop failed (finish) */
  private readonly finishRetries = new Set<Timer>();
  /** set by stop(): no retry is armed again, no wake-up asked for */
  private stopping = false;

  constructor(private readonly o: PreviousRunOptions) {}

  /** At start, before the first pass: reads the brake record, and finishes what the journals hold. */
  takeOver(): void {
    // Brakes a crashed run left on stay until the first pass has armed the lines (recoverBrakes).
    // Its bound: a first pass that hangs must not keep them on for good.
    const recorded = this.o.brakes?.readRecord({ dryRun: this.o.dryRun }) ?? null;
    if (recorded) {
      this.recordedBrakes = recorded;
      this.brakeRecovery = this.o.clock.after(BRAKE_RECOVERY_MAX_MS, () => this.recoverBrakes());
    }
    // An eviction a crashed run began is finished, in the background: its stop, then its report.
    const unfinished = this.o.journal?.takeUnfinished() ?? [];
    // A kill an order thread wrote before the last run could confirm it is an eviction to finish
    // too, unless the eviction journal holds that pod already.
    const used = this.o.orderJournal?.takeUsed(new Set(unfinished.map((e) => e.pod.uid))) ?? [];
    for (const e of [...unfinished, ...used]) void this.finish(e);
  }

  /**
   * Releases (or re-owns) the brakes a previous run left on, once: after the first pass, at the
   * bound, or when this run ends first. The pass after it brakes again if the pressure is there.
   */
  recoverBrakes(wakeAfter = true): void {
    if (!this.brakeRecovery) return;
    this.brakeRecovery = cancel(this.brakeRecovery);
    this.o.brakes!.restoreRecord(this.recordedBrakes, { dryRun: this.o.dryRun });
    this.recordedBrakes = null;
    if (wakeAfter && !this.stopping) this.o.wake({ source: 'brake-recovered' });
  }

  /** At stop (or in a dying process): no retry after this, and no wake-up. */
  stop(): void {
    this.stopping = true;
    for (const t of this.finishRetries) t.cancel();
    this.finishRetries.clear();
  }

  /**
   * An eviction a crashed run began: its stop, then its report. A failed stop is tried again
   * (from 250 ms, doubling up to the housekeeping interval) for as long as this run lives: right
   * after a crash the runtime may be busy (the lab saw the stop fail there), and the entry stays
   * in the journal for the next start meanwhile.
   */
  private async finish(e: JournalEntry, attempt = 0): Promise<void> {
    const o = this.o;
    const pod = `${e.pod.namespace}/${e.pod.name}`;
    if (attempt === 0) {
      o.journal!.begin(e);
      o.logger.warn(
        { pod, uid: e.pod.uid, signal: e.signal, began: new Date(e.atMs).toISOString() },
        'eviction from a previous run: finishing it (stop, then report)',
      );
    }
    try {
      // Idempotent in the runtime: a sandbox already stopped, or gone, is a success.
      await o.runtime.stopPod(
        { sandboxId: e.sandboxId, uid: e.pod.uid, name: e.pod.name, namespace: e.pod.namespace, labels: {}, annotations: {}, ready: true },
        e.gracePeriodSeconds,
      );
    } catch (err) {
      if (this.stopping) {
        o.logger.error({ pod, uid: e.pod.uid, err }, 'eviction from a previous run: its sandbox stop failed; kept for the next start');
        return;
      }
      const retryInMs = doublingMs(attempt + 1, 250, Math.max(250, o.housekeepingIntervalMs));
      o.logger.warn({ pod, uid: e.pod.uid, err, attempt: attempt + 1, retryInMs }, 'eviction from a previous run: its sandbox stop failed; trying again');
      const t = o.clock.after(retryInMs, () => {
        this.finishRetries.delete(t);
        void this.finish(e, attempt + 1);
      });
      this.finishRetries.add(t);
      return;
    }
    reportAndEnd(
      { reporter: o.reporter, journal: o.journal!, logger: o.logger },
      { pod: e.pod, signal: e.signal, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message, annotations: e.annotations, recovered: true },
    );
  }
}
