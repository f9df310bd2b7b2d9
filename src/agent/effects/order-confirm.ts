/**
 * Confirming a used standing order: the kernel-side mechanism already killed the pod (cgroup.kill
 * from its own thread, as the line was crossed), so what is left of the eviction is the runtime's
 * StopPodSandbox (grace 0, as any hard eviction), the wait for the memory, and the report, the
 * same record, log line, metric and status write-back as any eviction of that pod for that
 * signal. No second kill: the processes are gone, and the stop kills whatever a fork race left.
 *
 * Unlike the other evictions, a pod whose cgroup is gone is still stopped and reported: the kill
 * that emptied it was evictd's own. A failed stop is a failed record; the agent keeps the
 * confirmation and the next pass tries the stop again, until it is done (never dropped).
 */
import type { OrderConfirmation } from '../../policy/standing-order';
import { msBetween } from '../clock';
import { EvictionEffect, newRecord, podLog, type EvictInput, type EvictionRecord } from './eviction';

export interface ConfirmInput extends EvictInput {
  confirmation: OrderConfirmation;
}

export class ConfirmOrder extends EvictionEffect {
  async run(input: ConfirmInput): Promise<EvictionRecord> {
    const { d } = this;
    const c = input.confirmation;
    const rec = newRecord(input, false);
    rec.action = 'standing-order';
    rec.kill = { method: 'cgroup.kill', signalled: 0 };
    // The crossing is the event this eviction answers, and the kill was sent from the kernel side.
    rec.at.event = String(c.crossedNs);
    rec.at.killSent = String(c.killedNs);
    rec.at.stopSent = String(d.clock.now());
    try {
      await d.runtime.stopPod(input.pod.runtime, input.eviction.gracePeriodSeconds);
      rec.at.stopDone = String(d.clock.now());
      d.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(input.stamps.decisionNs, d.clock.now()) / 1000);
    } catch (err) {
      rec.error = err instanceof Error ? err.message : String(err);
      d.metrics.runtimeErrors.inc({ call: 'stopPod' });
      d.metrics.evictionFailures.inc({ signal: input.eviction.signal, step: 'stop' });
      d.logger.warn({ ...podLog(input), err }, 'StopPodSandbox after a standing order failed; the pod is already killed, the stop is tried again next pass');
      return rec;
    }
    await this.waitReleased(input, rec);
    return this.succeeded(input, rec);
  }
}
