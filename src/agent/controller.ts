/**
 * The agent's loop: notifications only wake it, a pass decides on fresh numbers.
 *
 * Invariants (all on the main JS thread):
 * - at most one pass runs at a time;
 * - notifications that arrive while a pass runs merge into ONE follow-up pass (a count per
 *   source and the earliest timestamp are all that is kept, so an event storm costs constant
 *   memory: the state is one small map bounded by the number of distinct sources);
 * - when nothing has woken it for `housekeepingIntervalMs`, a housekeeping pass runs anyway
 *   (the fallback when a notification is missed or a mechanism is unavailable);
 * - a pass may ask to run again at once (after an eviction: re-evaluate as soon as the memory
 *   is back) by returning `{ again: true }`;
 * - a pass that throws is counted and reported, and the loop goes on.
 */
import { cancel, systemClock } from './clock';
import type { Clock, Timer } from './ports';

export interface PassTrigger {
  /** notifications merged into this pass, by source ("housekeeping" and "again" included) */
  sources: Record<string, number>;
  /** CLOCK_MONOTONIC ns of the earliest kernel event merged into this pass, if any */
  firstEventNs: bigint | null;
  /** the clock's monotonic ns when the first notification of this pass arrived */
  firstNotifiedNs: bigint;
}

export type PassResult = { again?: boolean } | void;
export type PassFn = (trigger: PassTrigger) => Promise<PassResult>;

export interface ControllerOptions {
  housekeepingIntervalMs: number;
  /** stamps firstNotifiedNs and sets the housekeeping timer (default: the process's monotonic clock) */
  clock?: Clock;
  onError?: (err: unknown) => void;
}

/** Distinct sources kept per pending pass; beyond it they count under "other". */
const MAX_SOURCES = 64;

export class Controller {
  /** passes run, notifications received, notifications merged into an already pending pass */
  readonly stats = { passes: 0, notifications: 0, merged: 0, errors: 0 };
  private pending: { sources: Map<string, number>; firstEventNs: bigint | null; firstNotifiedNs: bigint } | null = null;
  private running = false;
  private scheduled = false;
  private stopped = true;
  private timer: Timer | null = null;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly pass: PassFn,
    private readonly opts: ControllerOptions,
  ) {}

  get busy(): boolean {
    return this.running || this.scheduled;
  }

  /** Starts the loop with one pass at once. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.notify('start');
  }

  /** Stops scheduling; resolves when the running pass (if any) has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.pending = null;
    this.timer = cancel(this.timer);
    await this.idle();
  }

  /** Resolves when no pass runs or is scheduled. */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Something may have changed: schedule a pass (or merge into the pending one).
   * `monotonicNs` is the kernel event's CLOCK_MONOTONIC timestamp when there is one.
   */
  notify(source: string, monotonicNs?: bigint, count = 1): void {
    if (this.stopped) return;
    this.stats.notifications += count;
    if (this.pending) {
      this.stats.merged += count;
    } else {
      this.pending = { sources: new Map(), firstEventNs: null, firstNotifiedNs: (this.opts.clock ?? systemClock).now() };
    }
    const p = this.pending;
    const key = p.sources.has(source) || p.sources.size < MAX_SOURCES ? source : 'other';
    p.sources.set(key, (p.sources.get(key) ?? 0) + count);
    if (monotonicNs !== undefined && (p.firstEventNs === null || monotonicNs < p.firstEventNs)) p.firstEventNs = monotonicNs;
    if (!this.running && !this.scheduled) {
      this.scheduled = true;
      // setImmediate: every notification delivered in the same loop turn joins this pass.
      setImmediate(() => void this.loop());
    }
  }

  private async loop(): Promise<void> {
    this.scheduled = false;
    this.running = true;
    this.timer = cancel(this.timer);
    try {
      while (this.pending && !this.stopped) {
        const p = this.pending;
        this.pending = null;
        const trigger: PassTrigger = { sources: Object.fromEntries(p.sources), firstEventNs: p.firstEventNs, firstNotifiedNs: p.firstNotifiedNs };
        this.stats.passes++;
        let result: PassResult = undefined;
        try {
          result = await this.pass(trigger);
        } catch (err) {
          this.stats.errors++;
          try {
            this.opts.onError?.(err);
          } catch {
            // a failing error reporter must not stop the loop
          }
        }
        if (result && result.again) this.notify('again');
      }
    } finally {
      this.running = false;
      if (!this.stopped) {
        this.timer = (this.opts.clock ?? systemClock).after(this.opts.housekeepingIntervalMs, () => this.notify('housekeeping'));
      }
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
