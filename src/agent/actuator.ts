/**
 * The actuator: carries out what one evaluation decided. Local-storage evictions, node-level
 * reclaim (then a fresh look: did it resolve the pressure?), and the eviction of the first
 * candidate that stops, by fast kill (SIGKILL through the pod cgroup, StopPodSandbox in the
 * background) or by StopPodSandbox. It owns the pods "in flight" (fast-killed, the runtime's stop
 * not done yet), which later passes leave out, and dry-run: with it nothing is touched.
 *
 * Every outcome is one EvictionRecord: logged with why the pod was chosen, counted in metrics,
 * handed to the reporter (Kubernetes status and events) and to the `record` callback.
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import { cgroupDir, type CgroupLayout } from '../node/cgroups';
import type { Observation } from '../node/observer';
import type { PolicyConfig } from '../policy/config';
import { resolvedByReclaim, type Evaluation, type Eviction, type ThresholdStatus } from '../policy/evaluate';
import { isMemorySignal } from '../policy/signals';
import type { PodRef, Signal } from '../policy/types';
import type { JoinedPod } from './active-pods';
import type { PassResult, PassTrigger } from './controller';
import { killPodProcesses, waitMemoryReleased, type KillResult } from './fast-kill';
import type { AgentMetrics } from './metrics';
import type { EvictionReporter, RuntimePort } from './ports';

/** One eviction (or dry-run decision), as logged and emitted ('eviction'). */
export interface EvictionRecord {
  pod: PodRef;
  sandboxId: string;
  signal: string;
  ok: boolean;
  dryRun: boolean;
  gracePeriodSeconds: number;
  threshold: ThresholdStatus | null;
  reasons: string[];
  message: string;
  action: 'fast-kill' | 'stop' | 'none';
  kill?: KillResult;
  error?: string;
  /** CLOCK_MONOTONIC ns (as decimal strings) of each step */
  at: { event?: string; notified: string; observed: string; decision: string; killSent?: string; stopSent?: string; stopDone?: string; released?: string };
  releasedWithinBound?: boolean;
  note?: string;
}

export interface ActuatorOptions {
  policy: PolicyConfig;
  layout: CgroupLayout;
  runtime: RuntimePort;
  reporter?: EvictionReporter;
  logger: Logger;
  metrics: AgentMetrics;
  dryRun: boolean;
  /** kill a pod's processes through its cgroup before StopPodSandbox, for hard memory thresholds */
  fastKill: boolean;
  /** bound on waiting for an evicted pod's memory to come back */
  releaseTimeoutMs: number;
  /** a fresh observation, to check whether node-level reclaim resolved the pressure */
  observe: () => Observation;
  /** every record as it is final: 'eviction'; a background StopPodSandbox done: 'stopped' */
  record: (kind: 'eviction' | 'stopped', rec: EvictionRecord) => void;
}

/** The stamps of the pass that decided, carried into each record. */
export interface PassStamps {
  trigger: PassTrigger;
  observedNs: bigint;
  decisionNs: bigint;
}

/** how long a failed stop's pod is watched for its memory coming back anyway */
const STOPPED_ANYWAY_CHECK_MS = 200;
/** below this working set, "released" (down to 1 MiB) says nothing about a stop */
const MIN_TELLING_BYTES = 8 * 1024 * 1024;

const ns = (): bigint => process.hrtime.bigint();
const msBetween = (a: bigint, b: bigint): number => Number(b - a) / 1e6;

export class Actuator {
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly o: ActuatorOptions) {}

  /** True while a fast-killed pod's StopPodSandbox is still running: passes leave it out. */
  isInFlight(uid: string): boolean {
    return this.inFlight.has(uid);
  }

  /** Waits for every background stop. */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }

  async act(ev: Evaluation, joined: JoinedPod[], stamps: PassStamps): Promise<PassResult> {
    const o = this.o;
    const byUid = new Map(joined.map((j) => [j.runtime.uid, j]));
    if (ev.localStorageEvictions.length > 0) {
      let any = false;
      for (const e of ev.localStorageEvictions) {
        const j = byUid.get(e.pod.uid);
        if (j) any = (await this.evictOne(j, e, null, false, stamps)).ok || any;
      }
      return { again: any && !o.dryRun };
    }
    if (ev.reclaim && ev.reclaim.functions.length > 0 && (await this.reclaimResolved(ev.reclaim.signal, ev.reclaim.functions))) return { again: true };
    const plan = ev.plan;
    if (!plan) return;
    if (stamps.trigger.firstEventNs !== null) {
      const src = Object.keys(stamps.trigger.sources).find((s) => s !== 'housekeeping' && s !== 'again') ?? 'unknown';
      o.metrics.eventToDecision.observe({ source: src }, Math.max(0, msBetween(stamps.trigger.firstEventNs, stamps.decisionNs)) / 1000);
    }
    const threshold = ev.thresholdsMet.find((t) => t.signal === plan.signal && t.gracePeriodMet) ?? null;
    if (plan.candidates.length === 0) {
      o.logger.warn({ signal: plan.signal, threshold }, 'threshold met but no pod can be evicted (none, or only critical pods)');
      return;
    }
    for (const c of plan.candidates) {
      const j = byUid.get(c.pod.uid);
      if (!j) continue;
      const fast = o.fastKill && plan.hard && isMemorySignal(plan.signal as Signal);
      const rec = await this.evictOne(j, c, threshold, fast, stamps);
      if (rec.ok) return { again: !o.dryRun };
    }
    o.logger.error({ signal: plan.signal, candidates: plan.candidates.length }, 'no candidate could be evicted this pass');
    return;
  }

  /**
   * Stops a pod the memory brake held past its bound (see policy/brake.ts), through the runtime
   * with the grace period the eviction gives; one EvictionRecord like any other eviction.
   */
  async stopBraked(j: JoinedPod, e: Eviction, stamps: PassStamps): Promise<EvictionRecord> {
    return this.evictOne(j, e, null, false, stamps);
  }

  /** Runs the node-level reclaim functions; true when a fresh look finds the pressure gone. */
  private async reclaimResolved(signal: Signal, functions: NonNullable<Evaluation['reclaim']>['functions']): Promise<boolean> {
    const o = this.o;
    if (o.dryRun) {
      o.logger.info({ signal, functions, dryRun: true }, 'would reclaim node-level resources');
      return false;
    }
    for (const fn of functions) {
      try {
        const r = await o.runtime.reclaim(fn);
        o.logger.info({ signal, function: fn, freedBytes: r.freedBytes }, 'node-level reclaim');
      } catch (err) {
        o.metrics.runtimeErrors.inc({ call: fn });
        o.logger.warn({ err, function: fn }, 'node-level reclaim failed');
      }
    }
    const after = o.observe();
    if (!resolvedByReclaim(o.policy, after.layout, after.node)) return false;
    o.logger.info({ signal }, 'node-level reclaim resolved the pressure; no eviction');
    return true;
  }

  private async evictOne(j: JoinedPod, e: Eviction, threshold: ThresholdStatus | null, fast: boolean, stamps: PassStamps): Promise<EvictionRecord> {
    const o = this.o;
    const { trigger, decisionNs } = stamps;
    const rec: EvictionRecord = {
      pod: e.pod,
      sandboxId: j.runtime.sandboxId,
      signal: e.signal,
      ok: false,
      dryRun: o.dryRun,
      gracePeriodSeconds: e.gracePeriodSeconds,
      threshold,
      reasons: e.reasons,
      message: e.message,
      action: 'none',
      at: { notified: String(trigger.firstNotifiedNs), observed: String(stamps.observedNs), decision: String(decisionNs) },
    };
    if (trigger.firstEventNs !== null) rec.at.event = String(trigger.firstEventNs);
    const podLog = { pod: `${e.pod.namespace}/${e.pod.name}`, uid: e.pod.uid, signal: e.signal, threshold, observation: threshold?.observed, reasons: e.reasons, specSource: j.specSource };
    if (o.dryRun) {
      rec.ok = true;
      o.logger.info({ ...podLog, dryRun: true, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message }, 'would evict pod (dry run)');
      o.record('eviction', rec);
      return rec;
    }
    const podPath = j.cgroup?.path;
    const beforeBytes = j.cgroup?.usage.memoryWorkingSetBytes ?? 0;
    if (podPath && !fs.existsSync(cgroupDir(o.layout.memoryMount, podPath))) {
      // The pod ended between the observation and now (its cgroup is gone): what the eviction
      // wanted has happened. Re-evaluate on fresh numbers rather than evict the next pod.
      rec.ok = true;
      rec.note = 'pod cgroup vanished before the eviction; re-evaluating';
      o.logger.info({ ...podLog }, rec.note);
      o.record('eviction', rec);
      return rec;
    }
    let stop: Promise<void> | null = null;
    if (fast && podPath) {
      rec.action = 'fast-kill';
      rec.at.killSent = String(ns());
      try {
        rec.kill = killPodProcesses(o.layout.unifiedMount, o.layout.memoryMount, podPath);
      } catch (err) {
        o.logger.warn({ err, ...podLog }, 'fast kill failed; stopping through the runtime');
      }
      o.metrics.decisionToStop.observe({ action: 'kill' }, msBetween(decisionNs, ns()) / 1000);
      // StopPodSandbox follows in the background; the pod stays "in flight" until it is done.
      rec.at.stopSent = String(ns());
      stop = this.stopInBackground(j, e, rec, decisionNs);
    } else {
      rec.action = 'stop';
      rec.at.stopSent = String(ns());
      try {
        await o.runtime.stopPod(j.runtime, e.gracePeriodSeconds);
        rec.at.stopDone = String(ns());
        o.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(decisionNs, ns()) / 1000);
      } catch (err) {
        rec.error = err instanceof Error ? err.message : String(err);
        o.metrics.runtimeErrors.inc({ call: 'stopPod' });
        // A stop that reports an error may still have done its work (the containers stopped,
        // the sandbox's stop timed out): if the pod's memory is back, evicting the next
        // candidate would evict a pod too many. Re-evaluate on fresh numbers instead. Only
        // for memory, and for a pod that held enough for its release to tell.
        if (podPath && isMemorySignal(e.signal as Signal) && beforeBytes >= MIN_TELLING_BYTES && (await waitMemoryReleased(o.layout.memoryMount, o.layout.memoryVersion, podPath, beforeBytes, STOPPED_ANYWAY_CHECK_MS)).released) {
          rec.ok = true;
          rec.note = 'the runtime reported the stop as failed, but the pod released its memory; re-evaluating before any other eviction';
          o.logger.warn({ ...podLog, err }, rec.note);
          o.record('eviction', rec);
          return rec;
        }
        o.metrics.evictionFailures.inc({ signal: e.signal, step: 'stop' });
        o.logger.warn({ ...podLog, err }, 'eviction failed; trying the next candidate');
        o.record('eviction', rec);
        return rec;
      }
    }
    if (podPath) {
      const r = await waitMemoryReleased(o.layout.memoryMount, o.layout.memoryVersion, podPath, beforeBytes, o.releaseTimeoutMs);
      rec.at.released = String(ns());
      rec.releasedWithinBound = r.released;
      o.metrics.memoryRelease.observe(msBetween(decisionNs, ns()) / 1000);
    }
    if (stop && !rec.releasedWithinBound) {
      // The kill did not bring the memory back: the runtime's stop decides success.
      await stop;
      if (rec.error) {
        o.metrics.evictionFailures.inc({ signal: e.signal, step: 'stop' });
        o.logger.warn({ ...podLog, err: rec.error }, 'eviction failed; trying the next candidate');
        o.record('eviction', rec);
        return rec;
      }
    }
    rec.ok = true;
    o.metrics.evictions.inc({ signal: e.signal });
    o.logger.warn(
      {
        ...podLog,
        gracePeriodSeconds: e.gracePeriodSeconds,
        message: e.message,
        action: rec.action,
        kill: rec.kill,
        at: rec.at,
        releasedWithinBound: rec.releasedWithinBound,
        reactionMs: rec.at.event ? msBetween(BigInt(rec.at.event), BigInt(rec.at.killSent ?? rec.at.stopSent!)) : undefined,
      },
      'evicted pod',
    );
    o.record('eviction', rec);
    if (o.reporter) {
      o.reporter.report({ pod: e.pod, signal: e.signal, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message, annotations: e.annotations }).catch((err: unknown) => o.logger.warn({ err }, 'eviction report failed'));
    }
    return rec;
  }

  private stopInBackground(j: JoinedPod, e: Eviction, rec: EvictionRecord, decisionNs: bigint): Promise<void> {
    const o = this.o;
    const uid = j.runtime.uid;
    const p = o.runtime
      .stopPod(j.runtime, 0)
      .then(
        (timings) => {
          rec.at.stopDone = String(ns());
          o.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(decisionNs, ns()) / 1000);
          o.logger.info({ pod: `${e.pod.namespace}/${e.pod.name}`, uid, timings, stopDone: rec.at.stopDone }, 'pod sandbox stopped');
          o.record('stopped', rec);
        },
        (err: unknown) => {
          rec.error = err instanceof Error ? err.message : String(err);
          o.metrics.runtimeErrors.inc({ call: 'stopPod' });
          o.logger.warn({ err, pod: `${e.pod.namespace}/${e.pod.name}`, uid }, 'StopPodSandbox after fast kill failed');
        },
      )
      .finally(() => this.inFlight.delete(uid));
    this.inFlight.set(uid, p);
    return p;
  }
}
