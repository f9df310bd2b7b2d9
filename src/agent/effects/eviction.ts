/**
 * What the two ways of evicting a pod share (fast kill and CRI stop, the effects beside this
 * file): the EvictionRecord every outcome becomes, the dry run's rehearsal, the check that the
 * pod is still there, the wait for its memory, and the end of a success or a failure (metrics,
 * one log line with why the pod was chosen, the report to Kubernetes).
 */
import type { Logger } from 'pino';
import type { CgroupPort, KillResult } from '../../node/cgroup-port';
import type { Eviction, ThresholdStatus } from '../../policy/evaluate';
import type { PodRef } from '../../policy/types';
import type { JoinedPod } from '../active-pods';
import { msBetween } from '../clock';
import type { PassTrigger } from '../controller';
import type { AgentMetrics } from '../metrics';
import type { Clock, EvictionReporter, RuntimePort } from '../ports';
import { eventNameAt } from '../../policy/messages';
import { crashPoint } from '../crash-point';
import type { EvictionJournal } from '../eviction-journal';
import type { OrderJournal } from '../order-journal';
import type { Effect, Rehearsal } from './effect';
import { waitMemoryReleased } from './memory-release';

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
  /** standing-order: killed by the kernel side as the line was crossed, then stopped through the runtime */
  action: 'fast-kill' | 'stop' | 'standing-order' | 'none';
  kill?: KillResult;
  error?: string;
  /** CLOCK_MONOTONIC ns (as decimal strings) of each step */
  at: { event?: string; notified: string; observed: string; decision: string; killSent?: string; stopSent?: string; stopDone?: string; released?: string };
  releasedWithinBound?: boolean;
  note?: string;
  /** a graceful stop begun in the background: its outcome comes as a record of its own when it ends */
  pending?: boolean;
}

/** The stamps of the pass that decided, carried into each record. */
export interface PassStamps {
  trigger: PassTrigger;
  observedNs: bigint;
  decisionNs: bigint;
}

export interface EvictInput {
  pod: JoinedPod;
  eviction: Eviction;
  /** the met threshold it is for; null for a local-storage limit or the brake's bound */
  threshold: ThresholdStatus | null;
  stamps: PassStamps;
}

export interface EvictionDeps {
  runtime: RuntimePort;
  cgroups: CgroupPort;
  clock: Clock;
  logger: Logger;
  metrics: AgentMetrics;
  reporter?: EvictionReporter;
  /** bound on waiting for an evicted pod's memory to come back */
  releaseTimeoutMs: number;
  /** the evictions in progress, kept until reported (absent: no state dir) */
  journal?: EvictionJournal;
  /** the standing orders on disk: a confirmed use's eviction is the eviction journal's from then on */
  orderJournal?: OrderJournal;
}

export function newRecord(input: EvictInput, dryRun: boolean): EvictionRecord {
  const { eviction: e, stamps } = input;
  const rec: EvictionRecord = {
    pod: e.pod,
    sandboxId: input.pod.runtime.sandboxId,
    signal: e.signal,
    ok: false,
    dryRun,
    gracePeriodSeconds: e.gracePeriodSeconds,
    threshold: input.threshold,
    reasons: e.reasons,
    message: e.message,
    action: 'none',
    at: { notified: String(stamps.trigger.firstNotifiedNs), observed: String(stamps.observedNs), decision: String(stamps.decisionNs) },
  };
  if (stamps.trigger.firstEventNs !== null) rec.at.event = String(stamps.trigger.firstEventNs);
  return rec;
}

/** The fields every log line about this eviction carries: who, for what, and why it was chosen. */
export function podLog(input: EvictInput): Record<string, unknown> {
  const { eviction: e, threshold } = input;
  return {
    pod: `${e.pod.namespace}/${e.pod.name}`,
    uid: e.pod.uid,
    signal: e.signal,
    threshold,
    observation: threshold?.observed,
    reasons: e.reasons,
    specSource: input.pod.specSource,
  };
}

export abstract class EvictionEffect implements Effect<EvictInput, EvictionRecord> {
  constructor(protected readonly d: EvictionDeps) {}

  abstract run(input: EvictInput): Promise<EvictionRecord>;

  rehearse(input: EvictInput): Rehearsal<EvictionRecord> {
    const rec = newRecord(input, true);
    rec.ok = true;
    return {
      message: 'would evict pod (dry run)',
      fields: { ...podLog(input), gracePeriodSeconds: input.eviction.gracePeriodSeconds, message: input.eviction.message },
      outcome: rec,
    };
  }

  /**
   * A new record, or a finished one when the pod ended between the observation and now (its
   * cgroup is gone): what the eviction wanted has happened, so the pass re-evaluates on fresh
   * numbers rather than evict the next pod.
   */
  protected start(input: EvictInput): { rec: EvictionRecord; done: boolean } {
    const rec = newRecord(input, false);
    const podPath = input.pod.cgroup?.path;
    if (podPath && !this.d.cgroups.exists(this.d.cgroups.memoryDir(podPath))) {
      rec.ok = true;
      rec.note = 'pod cgroup vanished before the eviction; re-evaluating';
      this.d.logger.info(podLog(input), rec.note);
      return { rec, done: true };
    }
    return { rec, done: false };
  }

  /**
   * On record before the pod is killed or stopped: a crash from here on leaves the eviction for
   * the next start to finish (agent.ts, finishEviction), with this report's identity.
   */
  protected journaled(input: EvictInput): void {
    const j = this.d.journal;
    if (!j) return;
    const e = input.eviction;
    const atMs = Date.now();
    j.begin({
      pod: e.pod,
      sandboxId: input.pod.runtime.sandboxId,
      signal: e.signal,
      message: e.message,
      gracePeriodSeconds: e.gracePeriodSeconds,
      annotations: e.annotations,
      atMs,
      podEventName: eventNameAt(e.pod.name, BigInt(atMs) * 1_000_000n),
    });
    crashPoint('eviction:journaled');
  }

  /** Waits for the pod's memory to come back, and notes whether it did within the bound. */
  protected async waitReleased(input: EvictInput, rec: EvictionRecord): Promise<void> {
    const c = input.pod.cgroup;
    if (!c) return;
    const d = this.d;
    const r = await waitMemoryReleased(d.cgroups, d.clock, d.cgroups.memoryDir(c.path), c.usage.memoryWorkingSetBytes ?? 0, d.releaseTimeoutMs);
    rec.at.released = String(d.clock.now());
    rec.releasedWithinBound = r.released;
    d.metrics.memoryRelease.observe(msBetween(input.stamps.decisionNs, d.clock.now()) / 1000);
  }

  protected failed(input: EvictInput, rec: EvictionRecord, err: unknown): EvictionRecord {
    // Not evicted: nothing for a next start to finish (the next pass decides again).
    this.d.journal?.end(input.eviction.pod.uid);
    this.d.metrics.evictionFailures.inc({ signal: input.eviction.signal, step: 'stop' });
    this.d.logger.warn({ ...podLog(input), err }, 'eviction failed; trying the next candidate');
    return rec;
  }

  protected succeeded(input: EvictInput, rec: EvictionRecord): EvictionRecord {
    const { d } = this;
    const e = input.eviction;
    rec.ok = true;
    d.metrics.evictions.inc({ signal: e.signal });
    d.logger.warn(
      {
        ...podLog(input),
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
    crashPoint('eviction:stopped');
    reportAndEnd(d, { pod: e.pod, signal: e.signal, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message, annotations: e.annotations });
    return rec;
  }
}

/**
 * The report to Kubernetes, with the identity the journal fixed for it; the journal entry ends
 * when the report has (written, or refused for good by the API), so a crash or a stop before
 * that repeats the same report at the next start.
 */
export function reportAndEnd(d: Pick<EvictionDeps, 'reporter' | 'journal' | 'logger'>, e: Parameters<EvictionReporter['report']>[0]): void {
  const entry = d.journal?.entry(e.pod.uid);
  const report = d.reporter?.report(entry ? { ...e, at: new Date(entry.atMs), podEventName: entry.podEventName } : e);
  if (!report) {
    d.journal?.end(e.pod.uid);
    return;
  }
  report.then(
    (end) => {
      if (end === 'interrupted') return;
      crashPoint('eviction:reported');
      d.journal?.end(e.pod.uid);
    },
    (err: unknown) => d.logger.warn({ err }, 'eviction report failed'),
  );
}
