/**
 * The contract the agent reads pod specs through, and the cache behind every implementation.
 * All sources run on the main event loop; get() and list() are synchronous reads of the cache,
 * so a decision pass never waits on the network.
 *
 * There is one source at a time (the API watch or the kubelet's /pods). While it cannot reach
 * its server, the agent falls back to specs made from the runtime's sandboxes itself
 * (agent/active-pods.ts, from the listing every pass already has): `mode` says which is in
 * force, for the logs and the evictd_kube_pod_source_mode metric.
 */
import { silentLog, type Log } from '../log';
import { EventEmitter } from 'node:events';
import type { PodSpec } from '../policy/types';
import { isTerminal, type KubePod } from './pod-spec';

/**
 * Where pod specs come from: 'api' (watch), 'kubelet' (/pods), or 'runtime' (the agent's own
 * specs from the sandboxes, while the source is unhealthy).
 */
export type PodSourceKind = 'api' | 'kubelet' | 'runtime';

/** Counters for logs and metrics (src/kube/metrics.ts exports them). */
export interface PodSourceStats {
  lists: number;
  relistsAfterGone: number;
  watches: number;
  watchEvents: number;
  failures: number;
  lastError?: string;
  /** Date.now() of the last successful list or watch event */
  lastSyncMs?: number;
}

/** Events: 'health' (healthy: boolean, reason: string) when `healthy` flips. */
export interface PodSource extends EventEmitter {
  readonly kind: 'api' | 'kubelet';
  /** this source while it is healthy; 'runtime' while the agent makes do with sandbox specs */
  readonly mode: PodSourceKind;
  readonly stats: PodSourceStats;
  /** Resolves after the first sync attempt, successful or not; never rejects. */
  start(): Promise<void>;
  stop(): void;
  /**
   * By the runtime's pod uid (for a static pod: the uid in its mirror's config.mirror). A pod
   * the source knows is served even while it is unhealthy: a stale spec beats a guessed one.
   */
  get(uid: string): PodSpec | undefined;
  /** Pods that are not terminal (Succeeded or Failed): the kubelet's "active pods". */
  list(): PodSpec[];
  /** true while the cache follows its source; false after a failed list or a broken watch */
  readonly healthy: boolean;
}

/** A sleep that ends early when the signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * What every source shares: the cache that get()/list() read, the health flag and the mode
 * announced from it, and the abort controller and promise of its background loop. Subclasses
 * implement start() and stop(), and call setHealthy() after each attempt and announceMode()
 * after the first.
 */
export abstract class CachedPodSource extends EventEmitter implements PodSource {
  abstract readonly kind: 'api' | 'kubelet';
  readonly stats: PodSourceStats = { lists: 0, relistsAfterGone: 0, watches: 0, watchEvents: 0, failures: 0 };
  /** Pods keyed by runtime uid, terminal ones included (get() still answers for them). */
  protected readonly pods = new Map<string, KubePod>();
  protected readonly log: Log;
  protected abort = new AbortController();
  protected running?: Promise<void>;
  private healthyNow = false;
  /** the mode last announced; undefined until then, when the source's own kind is presumed */
  private announced?: PodSourceKind;
  /** what setHealthy() logs, in the source's own words */
  protected abstract readonly healthLines: { current: string; stale: string };

  constructor(log: Log | undefined) {
    super();
    this.log = log ?? silentLog;
  }

  get healthy(): boolean {
    return this.healthyNow;
  }

  get mode(): PodSourceKind {
    return this.healthyNow ? this.kind : 'runtime';
  }

  get(uid: string): PodSpec | undefined {
    return this.pods.get(uid)?.spec;
  }

  list(): PodSpec[] {
    const out: PodSpec[] = [];
    for (const p of this.pods.values()) if (!isTerminal(p.phase)) out.push(p.spec);
    return out;
  }

  abstract start(): Promise<void>;

  /** Ends the background loop; get() and list() keep answering from the cache. */
  stop(): void {
    this.abort.abort();
    this.running = undefined;
  }

  /** Resolves when the loop has exited after stop() (tests). */
  async stopped(): Promise<void> {
    const r = this.running;
    this.stop();
    await r;
  }

  /** The cache becomes `pods` (after a full list or a poll). */
  protected replaceAll(pods: readonly KubePod[]): void {
    this.pods.clear();
    for (const p of pods) this.put(p);
  }

  /**
   * Caches a pod under its runtime uid. A mirror pod's claim (config.mirror) never displaces
   * the API object whose own uid that is: any pod author can write the annotation, and the
   * claimed uid is a real pod's, which would then run under the forger's spec. (A real mirror
   * claims a static pod's uid, which no API object has.)
   */
  protected put(p: KubePod): void {
    const held = this.pods.get(p.spec.uid);
    if (held && held.apiUid === p.spec.uid && p.apiUid !== p.spec.uid) {
      this.log.warn({ pod: `${p.spec.namespace}/${p.spec.name}`, claims: p.spec.uid }, 'kube: a pod claims to mirror another API pod; ignored');
      return;
    }
    this.pods.set(p.spec.uid, p);
  }

  /** Forgets a pod, unless its uid is held by another object (see put). */
  protected remove(p: KubePod): void {
    if (this.pods.get(p.spec.uid)?.apiUid === p.apiUid) this.pods.delete(p.spec.uid);
  }

  protected setHealthy(ok: boolean, reason: string): void {
    if (ok === this.healthyNow) return;
    this.healthyNow = ok;
    if (ok) this.log.info({ source: this.kind, reason }, this.healthLines.current);
    else this.log.warn({ source: this.kind, reason }, this.healthLines.stale);
    this.emit('health', ok, reason);
    this.announceMode(reason);
  }

  /**
   * Logs a switch between this source and the runtime-only specs once per switch. Called at
   * every health flip and once after the first attempt: a source that starts unreachable never
   * flips (it starts unhealthy), and must still be announced as a fallback.
   */
  protected announceMode(reason: string): void {
    const mode = this.mode;
    if (mode === (this.announced ?? this.kind)) return;
    this.announced = mode;
    if (mode === 'runtime')
      this.log.warn({ mode, reason }, `kube: ${this.kind} source unavailable; falling back to runtime-only pod specs (no priorities, no requests)`);
    else this.log.info({ mode, reason }, `kube: pod specs from the ${mode} source again`);
  }
}
