/**
 * After evictd stops a pod, leave the cluster as the kubelet's eviction manager would:
 *   - pod status: phase Failed, reason Evicted, the eviction message, and the DisruptionTarget
 *     condition with reason TerminationByKubelet (kubelet: eviction_manager.go evictPod, sent
 *     by the status manager as a strategic merge patch on pods/status with metadata.uid as a
 *     precondition, so a pod re-created under the same name is never touched);
 *   - a Warning event `Evicted` on the pod, carrying the policy's annotations
 *     (offending_containers, offending_containers_usage, starved_resource);
 *   - a Warning event `EvictionThresholdMet` "Attempting to reclaim <resource>" on the node.
 * And the pod conditions the agent owns (KEP-5986's ContainerMemoryPressure, see podCondition).
 * Once the API shows phase Failed, the kubelet will not restart the pod (generateAPIPodStatus
 * refuses to leave a terminal phase) and its controller replaces it.
 *
 * Exactly once: each write is retried with backoff until it lands, but never duplicated, and a
 * report that gave up does not stand for the pod's next eviction (see `seen`).
 * Events get their name (<object>.<hex nanoseconds>, the kubelet's scheme) when the eviction is
 * queued, so a retry after an ambiguous failure gets 409 AlreadyExists instead of a second
 * event. Before re-sending a status patch whose first attempt may have landed, the pod is read
 * back and the patch skipped if its status already says Evicted.
 * report() never rejects: failures are logged and counted; the agent's pass never waits on it.
 */
import { ApiError, type KubeClient } from './client';
import { backoffMs } from '../policy/backoff';
import { silentLog, type Log } from '../log';
import { sleep } from './pod-source';
import type { Eviction as PolicyEviction } from '../policy/evaluate';
import type { PodConditionReport } from '../policy/types';
import { SIGNAL_TABLE, isSignal } from '../policy/signals';
import { eventNameAt } from '../policy/messages';

/**
 * An eviction as the policy reports it (the ranking reasons are for logs, not the API), with
 * what the eviction journal fixes for a report repeated after a crash (see agent/ports.ts).
 */
export type EvictionReport = Omit<PolicyEviction, 'reasons'> & { at?: Date; podEventName?: string; recovered?: boolean };

export const EVICTED_REASON = 'Evicted';

export const THRESHOLD_MET_REASON = 'EvictionThresholdMet';
export const DISRUPTION_TARGET = 'DisruptionTarget';
export const TERMINATION_BY_KUBELET = 'TerminationByKubelet';

/**
 * The resource to name in the node event (the signal's record: the kubelet's signalToResource),
 * or undefined for local-storage limit evictions (the kubelet sends none).
 */
export function resourceOfSignal(signal: string): string | undefined {
  return isSignal(signal) ? SIGNAL_TABLE[signal].resource : undefined;
}

export interface EvictionReporterOptions {
  client: KubeClient;
  nodeName: string;
  log?: Log;
  /** events' source.component and reportingComponent (default 'evictd') */
  component?: string;
  /**
   * attempts per write before giving up on an error that may pass (no answer, 429, 5xx, 401/403);
   * default: no limit, for as long as the agent lives (an API outage must not lose a report;
   * the backoff stays at its ceiling, 30 s by default)
   */
  maxAttempts?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** one EvictionThresholdMet per resource per this window (default 10 s, the kubelet's pass period) */
  nodeEventIntervalMs?: number;
  now?: () => Date;
  /** the wait between attempts, ended early by `signal` (default: a timer; a test steps its own clock) */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface ReporterStats {
  reported: number;
  statusWrites: number;
  eventWrites: number;
  retries: number;
  /** writes abandoned after maxAttempts or a permanent error */
  failures: number;
  /** status not written because the pod is gone or was replaced */
  skipped: number;
  pending: number;
}

/** 'interrupted': the agent stopped first; the journal keeps the eviction for the next start. */
type Outcome = 'done' | 'skipped' | 'failed' | 'interrupted';
export type ReportEnd = Outcome;

export class EvictionReporter {
  readonly stats: ReporterStats = { reported: 0, statusWrites: 0, eventWrites: 0, retries: 0, failures: 0, skipped: 0, pending: 0 };
  private readonly log: Log;
  private readonly abort = new AbortController();
  /**
   * pod uid -> its report, in flight or finished with the status written (or the pod gone): a
   * second report() of that eviction is a no-op. A report that gave up on the status is
   * forgotten once it ends: the kubelet restarts such a pod in place under the same uid, and
   * its next eviction is a new one that must be reported (kept, it would swallow every later
   * eviction of the uid, and the pod would be evicted and restarted in a loop).
   */
  private readonly seen = new Map<string, Promise<ReportEnd>>();
  private readonly lastNodeEvent = new Map<string, number>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** pod uid -> its last condition write: the next one for the pod waits for it (a clear never lands before its set) */
  private readonly conditionWrites = new Map<string, Promise<ReportEnd>>();
  private readonly now: () => Date;
  private lastNanos = 0n;

  constructor(private readonly opts: EvictionReporterOptions) {
    this.log = opts.log ?? silentLog;
    this.now = opts.now ?? (() => new Date());
  }

  /** Queues the writes for one eviction. Resolves when they are done, abandoned or interrupted by stop(); never rejects. */
  report(e: EvictionReport): Promise<ReportEnd> {
    const known = this.seen.get(e.pod.uid);
    if (known) return known;
    this.stats.reported++;
    const at = e.at ?? this.now();
    const podEventName = e.podEventName ?? this.eventName(e.pod.name, at);
    const resource = resourceOfSignal(e.signal);
    const nodeEventName = resource && !e.recovered && this.takeNodeEventSlot(resource, at) ? this.eventName(this.opts.nodeName, at) : undefined;
    const uid = e.pod.uid;
    const task: Promise<ReportEnd> = this.run(e, at, podEventName, resource, nodeEventName).then((status) => {
      if ((status === 'failed' || status === 'interrupted') && this.seen.get(uid) === task) this.seen.delete(uid);
      return status;
    });
    this.track(task);
    this.seen.set(uid, task);
    // bound memory on a long-lived agent: uids are unique, old ones are never reported again
    if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value as string);
    return task;
  }

  /**
   * Sets one pod condition (a strategic merge on pods/status, conditions merging by type, with
   * the pod's uid as a precondition) and, when the report has one, a Warning event on the pod.
   * Writes for one pod land in the order they were asked for. Never rejects.
   */
  podCondition(c: PodConditionReport): Promise<ReportEnd> {
    const uid = c.pod.uid;
    const at = this.now();
    const eventName = c.event ? this.eventName(c.pod.name, at) : undefined;
    const task: Promise<ReportEnd> = (this.conditionWrites.get(uid) ?? Promise.resolve('done'))
      .then(() => this.writeCondition(c, at, eventName))
      .finally(() => {
        if (this.conditionWrites.get(uid) === task) this.conditionWrites.delete(uid);
      });
    this.conditionWrites.set(uid, task);
    this.track(task);
    return task;
  }

  /**
   * An EvictionThresholdMet event alone, for a pass that reclaimed node-level resources
   * (images, dead containers) without evicting. Rate-limited per resource like report().
   */
  thresholdMet(signal: string): Promise<void> {
    const resource = resourceOfSignal(signal);
    const at = this.now();
    if (!resource || !this.takeNodeEventSlot(resource, at)) return Promise.resolve();
    const name = this.eventName(this.opts.nodeName, at);
    const task = this.write(`node event ${name}`, () => this.postNodeEvent(name, resource, at)).then(() => undefined);
    this.track(task);
    return task;
  }

  /** Resolves when every queued write has finished or been abandoned. */
  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.all([...this.inflight]);
  }

  /** Abandons pending retries (shutdown); writes in flight finish or fail on their own. */
  stop(): void {
    this.abort.abort();
  }

  private track(task: Promise<unknown>): void {
    this.inflight.add(task);
    this.stats.pending = this.inflight.size;
    void task.finally(() => {
      this.inflight.delete(task);
      this.stats.pending = this.inflight.size;
    });
  }

  private takeNodeEventSlot(resource: string, at: Date): boolean {
    const last = this.lastNodeEvent.get(resource);
    const window = this.opts.nodeEventIntervalMs ?? 10_000;
    if (last !== undefined && at.getTime() - last < window) return false;
    this.lastNodeEvent.set(resource, at.getTime());
    return true;
  }

  /** <name>.<hex UnixNano>, strictly increasing within this process so two names never collide. */
  private eventName(object: string, at: Date): string {
    let nanos = BigInt(at.getTime()) * 1_000_000n;
    if (nanos <= this.lastNanos) nanos = this.lastNanos + 1n;
    this.lastNanos = nanos;
    return eventNameAt(object, nanos);
  }

  /** The report's writes; resolves to how the status write ended. */
  private async run(e: EvictionReport, at: Date, podEventName: string, resource: string | undefined, nodeEventName: string | undefined): Promise<Outcome> {
    const pod = `${e.pod.namespace}/${e.pod.name}`;
    try {
      const status = await this.write(`status of ${pod}`, (retry) => this.patchStatus(e, at, retry || e.recovered === true));
      if (status === 'done') this.log.info({ pod, uid: e.pod.uid, signal: e.signal }, 'kube: pod status set to Failed/Evicted');
      if (status === 'interrupted') return status;
      const event = await this.write(`Evicted event on ${pod}`, () => this.postPodEvent(e, podEventName, at));
      if (event === 'interrupted') return event;
      if (resource && nodeEventName) await this.write(`node event ${nodeEventName}`, () => this.postNodeEvent(nodeEventName, resource, at));
      return status;
    } catch (err) {
      // write() handles API errors; anything here is a bug, and must still not reach the caller
      this.stats.failures++;
      this.log.error({ pod, err: String(err) }, 'kube: eviction report failed');
      return 'failed';
    }
  }

  private async writeCondition(c: PodConditionReport, at: Date, eventName: string | undefined): Promise<Outcome> {
    const pod = `${c.pod.namespace}/${c.pod.name}`;
    try {
      const status = await this.write(`${c.type} condition of ${pod}`, () => this.patchCondition(c, at));
      if (status === 'done') this.log.info({ pod, uid: c.pod.uid, condition: c.type, status: c.status, reason: c.reason }, 'kube: pod condition set');
      if (status === 'done' && c.event && eventName) {
        const event = c.event;
        await this.write(`${event.reason} event on ${pod}`, () =>
          this.postEvent(c.pod.namespace, {
            metadata: { name: eventName, namespace: c.pod.namespace },
            involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: c.pod.namespace, name: c.pod.name, uid: c.pod.uid },
            reason: event.reason,
            message: event.message,
            ...this.eventCommon(at),
          }),
        );
      }
      return status;
    } catch (err) {
      // as run(): write() handles API errors, and a bug must still not reach the caller
      this.stats.failures++;
      this.log.error({ pod, err: String(err) }, 'kube: pod condition write failed');
      return 'failed';
    }
  }

  /** The same patch again after an ambiguous failure sets the same condition: no read-back needed. */
  private async patchCondition(c: PodConditionReport, at: Date): Promise<Outcome> {
    const patch = {
      metadata: { uid: c.pod.uid },
      status: { conditions: [{ type: c.type, status: c.status, reason: c.reason, message: c.message, lastTransitionTime: rfc3339(at) }] },
    };
    return this.patchPodStatus(c.pod, patch);
  }

  /**
   * Runs one write until it lands: transient errors (no answer, 429, 5xx) and 401/403 (RBAC
   * or a token being rotated may be fixed meanwhile) are retried with backoff; 404 and 409
   * end it (see the callers); other 4xx are permanent.
   */
  private async write(what: string, attempt: (retry: boolean) => Promise<Outcome>): Promise<Outcome> {
    const max = this.opts.maxAttempts ?? Infinity;
    for (let n = 1; ; n++) {
      try {
        const outcome = await attempt(n > 1);
        if (outcome === 'skipped') this.stats.skipped++;
        return outcome;
      } catch (err) {
        const e = err instanceof ApiError ? err : new ApiError(0, 'Error', String(err));
        const retriable = e.transient || e.status === 401 || e.status === 403;
        if (retriable && this.abort.signal.aborted) {
          this.log.warn({ what, attempts: n }, 'kube: write interrupted at shutdown; the next start repeats it');
          return 'interrupted';
        }
        if (!retriable || n >= max) {
          this.stats.failures++;
          this.log.error({ what, status: e.status, reason: e.reason, err: e.message, attempts: n }, 'kube: write abandoned');
          return 'failed';
        }
        this.stats.retries++;
        const wait = Math.max(backoffMs(n, this.opts.initialBackoffMs ?? 500, this.opts.maxBackoffMs ?? 30_000), (e.retryAfterSeconds ?? 0) * 1000);
        this.log.warn({ what, status: e.status, reason: e.reason, err: e.message, attempt: n, retryInMs: wait }, 'kube: write failed; will retry');
        await (this.opts.sleep ?? sleep)(wait, this.abort.signal);
        if (this.abort.signal.aborted) {
          this.log.warn({ what, attempts: n }, 'kube: write interrupted at shutdown; the next start repeats it');
          return 'interrupted';
        }
      }
    }
  }

  private podPath(e: Pick<EvictionReport, 'pod'>): string {
    return `/api/v1/namespaces/${encodeURIComponent(e.pod.namespace)}/pods/${encodeURIComponent(e.pod.name)}`;
  }

  private async patchStatus(e: EvictionReport, at: Date, retry: boolean): Promise<Outcome> {
    if (retry) {
      // the previous attempt may have landed without us hearing back: read before writing again
      try {
        const current = await this.opts.client.request<{ metadata?: { uid?: string }; status?: PodStatusView }>('GET', this.podPath(e));
        if (current.metadata?.uid !== e.pod.uid) return 'skipped';
        if (isEvicted(current.status, e.message)) return 'done';
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return 'skipped';
        throw err;
      }
    }
    const time = rfc3339(at);
    const patch = {
      metadata: { uid: e.pod.uid },
      status: {
        phase: 'Failed',
        reason: EVICTED_REASON,
        message: e.message,
        conditions: [{ type: DISRUPTION_TARGET, status: 'True', reason: TERMINATION_BY_KUBELET, message: e.message, lastTransitionTime: time }],
      },
    };
    return this.patchPodStatus(e.pod, patch);
  }

  /** A strategic merge patch on the pod's status, its uid as a precondition (a pod re-created under the name is never touched). */
  private async patchPodStatus(pod: EvictionReport['pod'], patch: object): Promise<Outcome> {
    try {
      await this.opts.client.request('PATCH', `${this.podPath({ pod })}/status`, { body: patch, contentType: 'application/strategic-merge-patch+json' });
      this.stats.statusWrites++;
      return 'done';
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 409)) {
        // 404: the pod is gone; 409: the uid precondition failed, a new pod holds the name
        this.log.info({ pod: `${pod.namespace}/${pod.name}`, status: err.status }, 'kube: pod gone or replaced; status not written');
        return 'skipped';
      }
      throw err;
    }
  }

  private async postPodEvent(e: EvictionReport, name: string, at: Date): Promise<Outcome> {
    return this.postEvent(e.pod.namespace, {
      metadata: { name, namespace: e.pod.namespace, annotations: { ...e.annotations } },
      involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: e.pod.namespace, name: e.pod.name, uid: e.pod.uid },
      reason: EVICTED_REASON,
      message: e.message,
      ...this.eventCommon(at),
    });
  }

  private async postNodeEvent(name: string, resource: string, at: Date): Promise<Outcome> {
    const node = this.opts.nodeName;
    // the kubelet's node reference uses the node name as uid; node events live in "default"
    return this.postEvent('default', {
      metadata: { name, namespace: 'default' },
      involvedObject: { kind: 'Node', apiVersion: 'v1', name: node, uid: node },
      reason: THRESHOLD_MET_REASON,
      message: `Attempting to reclaim ${resource}`,
      ...this.eventCommon(at),
    });
  }

  private eventCommon(at: Date) {
    const component = this.opts.component ?? 'evictd';
    const time = rfc3339(at);
    return {
      type: 'Warning',
      source: { component, host: this.opts.nodeName },
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
      reportingComponent: component,
      reportingInstance: this.opts.nodeName,
    };
  }

  private async postEvent(namespace: string, event: object): Promise<Outcome> {
    try {
      await this.opts.client.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
        body: { apiVersion: 'v1', kind: 'Event', ...event },
      });
      this.stats.eventWrites++;
      return 'done';
    } catch (err) {
      // 409 AlreadyExists: an earlier attempt landed; the name is ours, so it is this event
      if (err instanceof ApiError && err.status === 409) return 'done';
      throw err;
    }
  }
}

interface PodStatusView {
  phase?: string;
  reason?: string;
  message?: string;
  conditions?: { type?: string; reason?: string }[];
}

function isEvicted(status: PodStatusView | undefined, message: string): boolean {
  return (
    status?.phase === 'Failed' &&
    status.reason === EVICTED_REASON &&
    status.message === message &&
    (status.conditions ?? []).some((c) => c.type === DISRUPTION_TARGET && c.reason === TERMINATION_BY_KUBELET)
  );
}

/** metav1.Time serializes to whole seconds, RFC 3339, UTC. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
