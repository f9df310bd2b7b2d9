/**
 * Eviction by the runtime: StopPodSandbox (through RuntimePort.stopPod, which stops the
 * containers with the grace period first), then the wait for the pod's memory.
 */
import { isMemorySignal } from '../../policy/signals';
import type { Signal } from '../../policy/types';
import { msBetween } from '../clock';
import { EvictionEffect, podLog, type EvictInput, type EvictionRecord } from './eviction';
import { waitMemoryReleased } from './memory-release';

/** how long a failed stop's pod is watched for its memory coming back anyway */
const STOPPED_ANYWAY_CHECK_MS = 200;
/** below this working set, "released" (down to 1 MiB) says nothing about a stop */
const MIN_TELLING_BYTES = 8 * 1024 * 1024;

export class CriStop extends EvictionEffect {
  async run(input: EvictInput): Promise<EvictionRecord> {
    const { d } = this;
    const { rec, done } = this.start(input);
    if (done) return rec;
    rec.action = 'stop';
    rec.at.stopSent = String(d.clock.now());
    try {
      await d.runtime.stopPod(input.pod.runtime, input.eviction.gracePeriodSeconds);
      rec.at.stopDone = String(d.clock.now());
      d.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(input.stamps.decisionNs, d.clock.now()) / 1000);
    } catch (err) {
      rec.error = err instanceof Error ? err.message : String(err);
      d.metrics.runtimeErrors.inc({ call: 'stopPod' });
      if (await this.stoppedAnyway(input)) {
        rec.ok = true;
        rec.note = 'the runtime reported the stop as failed, but the pod released its memory; re-evaluating before any other eviction';
        d.logger.warn({ ...podLog(input), err }, rec.note);
        return rec;
      }
      return this.failed(input, rec, err);
    }
    await this.waitReleased(input, rec);
    return this.succeeded(input, rec);
  }

  /**
   * A stop that reports an error may still have done its work (the containers stopped, the
   * sandbox's stop timed out): if the pod's memory is back, evicting the next candidate would
   * evict a pod too many. Only for memory, and for a pod that held enough for its release to tell.
   */
  private async stoppedAnyway(input: EvictInput): Promise<boolean> {
    const c = input.pod.cgroup;
    const before = c?.usage.memoryWorkingSetBytes ?? 0;
    if (!c || !isMemorySignal(input.eviction.signal as Signal) || before < MIN_TELLING_BYTES) return false;
    const { d } = this;
    return (await waitMemoryReleased(d.cgroups, d.clock, d.cgroups.memoryDir(c.path), before, STOPPED_ANYWAY_CHECK_MS)).released;
  }
}
