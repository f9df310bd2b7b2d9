/**
 * Eviction by fast kill: SIGKILL every process of the pod through its cgroup (cgroup.kill), so
 * its memory comes back in milliseconds instead of after StopPodSandbox's 150-200 ms; the
 * runtime's stop follows in the background. Hard memory thresholds only (the actuator decides).
 *
 * A pod is "in flight" from the kill until its background stop is done: passes leave it out,
 * or they would pick it again while the runtime is still stopping it.
 */
import { msBetween } from '../clock';
import { EvictionEffect, podLog, type EvictInput, type EvictionDeps, type EvictionRecord } from './eviction';

export class FastKill extends EvictionEffect {
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    d: EvictionDeps,
    /** a background stop is done: the record, with stopDone stamped */
    private readonly onStopped: (rec: EvictionRecord) => void,
  ) {
    super(d);
  }

  isInFlight(uid: string): boolean {
    return this.inFlight.has(uid);
  }

  /** Waits for every background stop. */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }

  async run(input: EvictInput): Promise<EvictionRecord> {
    const { d } = this;
    const { rec, done } = this.start(input);
    if (done) return rec;
    rec.action = 'fast-kill';
    this.journaled(input);
    rec.at.killSent = String(d.clock.now());
    try {
      rec.kill = d.cgroups.kill(input.pod.cgroup!.path);
    } catch (err) {
      d.logger.warn({ err, ...podLog(input) }, 'fast kill failed; stopping through the runtime');
    }
    // The dying tasks' memory, reaped by the kernel now (off this thread), not when each exits.
    if (rec.kill && rec.kill.method !== 'none') this.reap(input);
    d.metrics.decisionToStop.observe({ action: 'kill' }, msBetween(input.stamps.decisionNs, d.clock.now()) / 1000);
    rec.at.stopSent = String(d.clock.now());
    const stop = this.stopInBackground(input, rec);
    await this.waitReleased(input, rec);
    if (!rec.releasedWithinBound) {
      // The kill did not bring the memory back: the runtime's stop decides success.
      await stop;
      if (rec.error) return this.failed(input, rec, rec.error);
    }
    return this.succeeded(input, rec);
  }

  private reap(input: EvictInput): void {
    const { d } = this;
    d.cgroups.reap?.(input.pod.cgroup!.path).then(
      (r) => d.logger.debug({ ...podLog(input), reap: r }, 'dying tasks reaped'),
      (err: unknown) => d.logger.warn({ ...podLog(input), err }, 'reap after the kill failed; the tasks free their memory as they exit'),
    );
  }

  private stopInBackground(input: EvictInput, rec: EvictionRecord): Promise<void> {
    const { d } = this;
    const uid = input.pod.runtime.uid;
    const pod = `${input.eviction.pod.namespace}/${input.eviction.pod.name}`;
    const p = d.runtime
      .stopPod(input.pod.runtime, 0)
      .then(
        (timings) => {
          rec.at.stopDone = String(d.clock.now());
          d.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(input.stamps.decisionNs, d.clock.now()) / 1000);
          d.logger.info({ pod, uid, timings, stopDone: rec.at.stopDone }, 'pod sandbox stopped');
          this.onStopped(rec);
        },
        (err: unknown) => {
          rec.error = err instanceof Error ? err.message : String(err);
          d.metrics.runtimeErrors.inc({ call: 'stopPod' });
          d.logger.warn({ err, pod, uid }, 'StopPodSandbox after fast kill failed');
        },
      )
      .finally(() => this.inFlight.delete(uid));
    this.inFlight.set(uid, p);
    return p;
  }
}
