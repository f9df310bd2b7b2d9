/**
 * Eviction by the runtime: StopPodSandbox (through RuntimePort.stopPod, which stops the
 * containers with the grace period first), then the wait for the pod's memory.
 *
 * A stop with a grace period (a soft threshold's) runs in the background: its pod's SIGTERM
 * handler may take the whole grace period, and a pass waiting on it would act on no hard
 * threshold meanwhile, nor finish for the health check. The pod is "in flight" until the stop
 * is done or the kubelet's bound for it has passed (killPodNow's max(10 s, 1.5 x grace)),
 * and passes leave it out; the outcome is recorded and reported when the stop ends.
 */
import { MEMORY_PRESSURE_SIGNAL } from '../../policy/memory-pressure';
import { isMemorySignal } from '../../policy/signals';
import type { Signal } from '../../policy/types';
import { msBetween, msSince } from '../clock';
import type { Timer } from '../ports';
import { EvictionEffect, podLog, type EvictInput, type EvictionDeps, type EvictionRecord } from './eviction';
import { waitMemoryReleased } from './memory-release';
import { killPodBoundMs } from '../../policy/kill-bound';

/** A graceful stop that ends this soon is the pass's own outcome (see inBackground). */
const QUICK_MS = 250;

/** How long an agent that stops waits for graceful stops in flight (their pods' grace runs on). */
const SETTLE_CAP_MS = 5000;

/** how long a failed stop's pod is watched for its memory coming back anyway */
const STOPPED_ANYWAY_CHECK_MS = 200;
/** below this working set, "released" (down to 1 MiB) says nothing about a stop */
const MIN_TELLING_BYTES = 8 * 1024 * 1024;

export class CriStop extends EvictionEffect {
  private readonly inFlight = new Map<string, { startedNs: bigint; boundMs: number; done: Promise<void> }>();

  constructor(
    d: EvictionDeps,
    /** a graceful stop begun in the background has ended (its record, ok or not) */
    private readonly onFinished: (rec: EvictionRecord) => void = () => undefined,
  ) {
    super(d);
  }

  /** A graceful stop of this pod is running and within its bound: passes leave the pod out. */
  isInFlight(uid: string): boolean {
    const f = this.inFlight.get(uid);
    return f !== undefined && msSince(this.d.clock, f.startedNs) < f.boundMs;
  }

  /** Some graceful stop is running within its bound (a soft eviction waits for it, as the kubelet's loop does). */
  anyInFlight(): boolean {
    for (const uid of this.inFlight.keys()) if (this.isInFlight(uid)) return true;
    return false;
  }

  /** Waits for the graceful stops in flight, a few seconds at most: their pods' grace runs on without us. */
  async settle(): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: Timer | undefined;
    const cap = new Promise<void>((resolve) => (timer = this.d.clock.after(SETTLE_CAP_MS, resolve)));
    await Promise.race([Promise.allSettled([...this.inFlight.values()].map((f) => f.done)), cap]);
    timer?.cancel();
  }

  async run(input: EvictInput): Promise<EvictionRecord> {
    const { d } = this;
    const { rec, done } = this.start(input);
    if (done) return rec;
    rec.action = 'stop';
    this.journaled(input);
    rec.at.stopSent = String(d.clock.now());
    if (input.eviction.gracePeriodSeconds > 0) return this.inBackground(input, rec);
    return this.stop(input, rec);
  }

  /**
   * The graceful stop. A stop that ends within QUICK_MS (a runtime that refuses at once, a pod
   * that exits on SIGTERM right away) is this pass's outcome, as before: a failure falls through
   * to the next candidate. Otherwise the record says it is under way (pending), and its end is
   * recorded by onFinished.
   */
  private async inBackground(input: EvictInput, rec: EvictionRecord): Promise<EvictionRecord> {
    const uid = input.pod.runtime.uid;
    const boundMs = killPodBoundMs(input.eviction.gracePeriodSeconds);
    let detached = false;
    const finished = this.stop(input, rec).catch((err: unknown) => this.failed(input, rec, err));
    const done = finished
      .then((r) => {
        if (detached) this.onFinished(r);
      })
      .finally(() => this.inFlight.delete(uid));
    this.inFlight.set(uid, { startedNs: this.d.clock.now(), boundMs, done });
    let timer: Timer | undefined;
    const quick = await Promise.race([finished, new Promise<null>((resolve) => (timer = this.d.clock.after(QUICK_MS, () => resolve(null))))]);
    timer?.cancel();
    if (quick !== null) {
      await done;
      return quick;
    }
    detached = true;
    this.d.logger.info(
      { ...podLog(input), gracePeriodSeconds: input.eviction.gracePeriodSeconds, boundMs },
      'evicting pod: graceful stop running in the background',
    );
    return { ...rec, ok: true, pending: true, at: { ...rec.at } };
  }

  private async stop(input: EvictInput, rec: EvictionRecord): Promise<EvictionRecord> {
    const { d } = this;
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
    const memory = isMemorySignal(input.eviction.signal as Signal) || input.eviction.signal === MEMORY_PRESSURE_SIGNAL;
    if (!c || !memory || before < MIN_TELLING_BYTES) return false;
    const { d } = this;
    return (await waitMemoryReleased(d.cgroups, d.clock, d.cgroups.memoryDir(c.path), before, STOPPED_ANYWAY_CHECK_MS)).released;
  }
}
