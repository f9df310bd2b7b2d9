/**
 * Confirming a used standing order: the kernel-side mechanism already killed the pod (cgroup.kill
 * from its own thread, as the line was crossed), so what is left of the eviction is the runtime's
 * StopPodSandbox (grace 0, as any hard eviction) and the report: the same record, log line,
 * metric and status write-back as a fast kill of that pod for that signal. No second kill: the
 * processes are gone, and the stop kills whatever a fork race left.
 *
 * As after a fast kill, the stop runs in the background and the eviction is reported once the
 * memory is back: StopPodSandbox took 2-2.5 s for a killed pod in the pure v2 lab, and the pass
 * that confirms must not hold the loop that long. When the memory does not come back within the
 * bound, the stop decides, and a failed one is a failed record (reported later, never twice).
 * A background stop that fails after the report is handed to `onStopped` with its error; the
 * agent keeps the confirmation and a later pass runs the stop again (a run with `reported`
 * set): until it is done, it is never dropped.
 *
 * Unlike the other evictions, a pod whose cgroup is gone is still stopped and reported: the kill
 * that emptied it was evictd's own.
 */
import type { OrderConfirmation } from '../../policy/standing-order';
import { tagOf } from '../order-journal';
import { msBetween } from '../clock';
import type { Effect, Rehearsal } from './effect';
import { EvictionEffect, newRecord, podLog, type EvictInput, type EvictionDeps, type EvictionRecord } from './eviction';

export interface ConfirmInput extends EvictInput {
  confirmation: OrderConfirmation;
}

export class ConfirmOrder implements Effect<ConfirmInput, EvictionRecord | null> {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly base: Reporting;

  constructor(
    private readonly d: EvictionDeps,
    /** a background stop ended: null when the sandbox is stopped, else why not */
    private readonly onStopped: (uid: string, error: string | null) => void,
  ) {
    this.base = new Reporting(d);
  }

  isInFlight(uid: string): boolean {
    return this.inFlight.has(uid);
  }

  /** Waits for every background stop. */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** The record of the eviction, or null for a stop retried after the report (nothing new to report). */
  async run(input: ConfirmInput): Promise<EvictionRecord | null> {
    const { d } = this;
    const uid = input.pod.runtime.uid;
    if (this.inFlight.has(uid)) return null;
    const c = input.confirmation;
    const rec = newRecord(input, false);
    rec.action = 'standing-order';
    rec.kill = { method: 'cgroup.kill', signalled: 0 };
    // The crossing is the event this eviction answers, and the kill was sent from the kernel side.
    rec.at.event = String(c.crossedNs);
    rec.at.killSent = String(c.killedNs);
    // The kill is done (the order's thread wrote it): from here a crash must still see it reported,
    // and the eviction journal, not the order's use log, is what the next start finishes.
    if (!c.reported) {
      this.base.journal(input);
      d.orderJournal?.done(tagOf(c.order));
    }
    rec.at.stopSent = String(d.clock.now());
    const stop = this.stopInBackground(input, rec);
    if (c.reported) return null;
    await this.base.released(input, rec);
    if (!rec.releasedWithinBound) {
      // The kill did not bring the memory back: the runtime's stop decides success.
      await stop;
      if (rec.error) return this.base.failedStop(input, rec);
    }
    return this.base.reported(input, rec);
  }

  rehearse(input: ConfirmInput): Rehearsal<EvictionRecord | null> {
    return this.base.rehearse(input);
  }

  private stopInBackground(input: ConfirmInput, rec: EvictionRecord): Promise<void> {
    const { d } = this;
    const uid = input.pod.runtime.uid;
    const p = d.runtime
      .stopPod(input.pod.runtime, input.eviction.gracePeriodSeconds)
      .then(
        (timings) => {
          rec.at.stopDone = String(d.clock.now());
          d.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(input.stamps.decisionNs, d.clock.now()) / 1000);
          d.logger.info({ ...podLog(input), timings, stopDone: rec.at.stopDone }, 'pod sandbox stopped after its standing order');
          return null;
        },
        (err: unknown) => {
          rec.error = err instanceof Error ? err.message : String(err);
          d.metrics.runtimeErrors.inc({ call: 'stopPod' });
          d.metrics.evictionFailures.inc({ signal: input.eviction.signal, step: 'stop' });
          d.logger.warn({ ...podLog(input), err }, 'StopPodSandbox after a standing order failed; the pod is already killed, the stop is tried again');
          return rec.error;
        },
      )
      .then((error) => {
        this.inFlight.delete(uid);
        this.onStopped(uid, error);
      });
    this.inFlight.set(uid, p);
    return p;
  }
}

/** The shared eviction steps (release wait, failure, success and its report), as every eviction takes them. */
class Reporting extends EvictionEffect {
  run(): Promise<EvictionRecord> {
    return Promise.reject(new Error('not an effect of its own'));
  }
  released(input: EvictInput, rec: EvictionRecord): Promise<void> {
    return this.waitReleased(input, rec);
  }
  failedStop(input: EvictInput, rec: EvictionRecord): EvictionRecord {
    return this.failed(input, rec, rec.error);
  }
  reported(input: EvictInput, rec: EvictionRecord): EvictionRecord {
    return this.succeeded(input, rec);
  }
  journal(input: EvictInput): void {
    this.journaled(input);
  }
}
