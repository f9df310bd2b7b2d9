/**
 * The contract the agent reads pod specs through, and the cache behind every implementation.
 * All sources run on the main event loop; get() and list() are synchronous reads of the cache,
 * so a decision pass never waits on the network.
 */
import { EventEmitter } from 'node:events';
import type { PodSpec } from '../policy/types';
import { isTerminal, type KubePod } from './pod-spec';

export interface PodChange {
  type: 'added' | 'modified' | 'deleted';
  pod: KubePod;
}

/** Where pod specs come from: 'api' (watch), 'kubelet' (/pods), 'runtime' (sandboxes only). */
export type PodSourceKind = 'api' | 'kubelet' | 'runtime';

/**
 * Events: 'change' (PodChange) for every add, update and removal in the cache; 'health'
 * (healthy: boolean, reason: string) when `healthy` flips.
 */
export interface PodSource extends EventEmitter {
  readonly kind: PodSourceKind;
  /** Resolves after the first sync attempt, successful or not; never rejects. */
  start(): Promise<void>;
  stop(): void;
  /** By the runtime's pod uid (for a static pod: the uid in its mirror's config.mirror). */
  get(uid: string): PodSpec | undefined;
  /** Pods that are not terminal (Succeeded or Failed): the kubelet's "active pods". */
  list(): PodSpec[];
  /** The API-side record (phase, QoS, owner, mirror), when the source has one. */
  info(uid: string): KubePod | undefined;
  /** true while the cache follows its source; false after a failed list or a broken watch */
  readonly healthy: boolean;
}

export interface Logger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * Pods keyed by runtime uid. `replace` diffs a full list against the cache (after a list or a
 * poll); `upsert`/`remove` apply one watch event. Emits 'change' on the owner for real
 * differences only (same resourceVersion = no event), so a re-list after a dropped watch does
 * not replay pods nobody changed.
 */
export class PodCache {
  private readonly pods = new Map<string, KubePod>();

  constructor(private readonly emitter: EventEmitter) {}

  get size(): number {
    return this.pods.size;
  }

  get(uid: string): KubePod | undefined {
    return this.pods.get(uid);
  }

  active(): PodSpec[] {
    const out: PodSpec[] = [];
    for (const p of this.pods.values()) if (!isTerminal(p.phase)) out.push(p.spec);
    return out;
  }

  all(): KubePod[] {
    return [...this.pods.values()];
  }

  upsert(pod: KubePod): void {
    const old = this.pods.get(pod.spec.uid);
    this.pods.set(pod.spec.uid, pod);
    if (!old) this.emitter.emit('change', { type: 'added', pod } satisfies PodChange);
    else if (!old.resourceVersion || old.resourceVersion !== pod.resourceVersion) {
      this.emitter.emit('change', { type: 'modified', pod } satisfies PodChange);
    }
  }

  remove(uid: string): void {
    const old = this.pods.get(uid);
    if (!old) return;
    this.pods.delete(uid);
    this.emitter.emit('change', { type: 'deleted', pod: old } satisfies PodChange);
  }

  replace(pods: KubePod[]): void {
    const seen = new Set<string>();
    for (const p of pods) {
      seen.add(p.spec.uid);
      this.upsert(p);
    }
    for (const uid of [...this.pods.keys()]) if (!seen.has(uid)) this.remove(uid);
  }
}

/** Exponential backoff with +-20% jitter so a fleet of nodes does not retry in step. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
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
 * What every source shares: the cache that get()/list()/info() read, the health flag, and the
 * abort controller and promise of its background loop. Subclasses implement start() and stop().
 */
export abstract class CachedPodSource extends EventEmitter implements PodSource {
  abstract readonly kind: PodSourceKind;
  protected readonly cache = new PodCache(this);
  protected readonly log: Logger;
  protected abort = new AbortController();
  protected healthyNow = false;
  protected running?: Promise<void>;

  constructor(log: Logger | undefined) {
    super();
    this.log = log ?? silentLogger;
  }

  get healthy(): boolean {
    return this.healthyNow;
  }

  get(uid: string): PodSpec | undefined {
    return this.cache.get(uid)?.spec;
  }

  info(uid: string): KubePod | undefined {
    return this.cache.get(uid);
  }

  list(): PodSpec[] {
    return this.cache.active();
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
}
