/**
 * Pod specs from the API server: list then watch the pods bound to this node
 * (fieldSelector spec.nodeName), the way client-go's reflector does it.
 *
 * - The first list asks for resourceVersion=0 (served from the API server's watch cache: cheap
 *   for a DaemonSet on every node); a re-list after 410 Gone asks for the latest
 *   (resourceVersion unset), because the cache may be older than what we already saw.
 * - A watch that ends normally (its timeoutSeconds) or drops resumes from the last
 *   resourceVersion seen, bookmarks included: no event is lost and none is replayed.
 * - 410 Gone, as an HTTP status or as an ERROR event in the stream, means that version left
 *   the server's history: re-list at once, and the list replaces the cache.
 * - Other failures (403, 5xx, timeouts, refused connections) back off exponentially; the cache
 *   keeps serving its last contents, and `healthy` turns false so the agent can say it runs
 *   on stale or runtime-only data.
 */
import { ApiError, type KubeClient, type WatchEvent } from './client';
import { fromV1Pod, type KubePod, type V1Pod } from './pod-spec';
import { backoffMs } from '../policy/backoff';
import type { Log } from '../log';
import { CachedPodSource, sleep } from './pod-source';

export interface ApiPodSourceOptions {
  client: KubeClient;
  nodeName: string;
  log?: Log;
  /** server-side watch length; the server closes the stream after it (default 300 s) */
  watchTimeoutSeconds?: number;
  /** a watch that sends nothing (not even a bookmark) for this long is presumed dead (default: watch timeout + 30 s) */
  idleTimeoutMs?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

interface V1PodList {
  metadata?: { resourceVersion?: string };
  items?: V1Pod[];
}

class Gone extends Error {}

export class ApiPodSource extends CachedPodSource {
  readonly kind = 'api' as const;
  protected readonly healthLines = {
    current: 'kube: pod specs from the API server are current',
    stale: 'kube: API server unreachable; pod specs may be stale',
  };
  private resourceVersion: string | undefined;
  private consistentRelist = false;
  /** consecutive failures since the last list, opened watch or clean watch end */
  private attempt = 0;

  constructor(private readonly opts: ApiPodSourceOptions) {
    super(opts.log);
  }

  start(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.abort = new AbortController();
    let firstAttempt!: () => void;
    const first = new Promise<void>((resolve) => (firstAttempt = resolve));
    this.running = this.loop(firstAttempt)
      .catch((err: unknown) => {
        // loop() catches everything it expects; this is a bug guard so nothing rejects unhandled
        this.log.error({ err: String(err) }, 'kube: pod watch loop stopped');
      })
      // stop() during the first list must not leave start() pending
      .finally(firstAttempt);
    return first.then(() => this.announceMode('started'));
  }

  private async loop(firstAttempt: () => void): Promise<void> {
    const signal = this.abort.signal;
    const initial = this.opts.initialBackoffMs ?? 200;
    const max = this.opts.maxBackoffMs ?? 30_000;
    while (!signal.aborted) {
      try {
        if (this.resourceVersion === undefined) {
          await this.relist(signal);
          firstAttempt();
        }
        await this.watchOnce(signal);
        this.attempt = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof Gone || (err instanceof ApiError && err.status === 410)) {
          this.stats.relistsAfterGone++;
          this.log.info({ resourceVersion: this.resourceVersion }, 'kube: watch resourceVersion too old (410 Gone); re-listing');
          this.resourceVersion = undefined;
          this.consistentRelist = true;
          continue;
        }
        const attempt = ++this.attempt;
        this.stats.failures++;
        this.stats.lastError = (err as Error).message;
        // One dropped watch is routine (load balancers cut long streams); a failure to list or
        // to re-open the watch means the API server is really out of reach.
        const listing = this.resourceVersion === undefined;
        if (listing || attempt > 1 || !(err instanceof ApiError && err.transient)) this.setHealthy(false, (err as Error).message);
        firstAttempt();
        const wait = backoffMs(attempt, initial, max);
        this.log.warn({ err: (err as Error).message, attempt, retryInMs: wait }, listing ? 'kube: pod list failed' : 'kube: pod watch failed');
        await sleep(wait, signal);
      }
    }
  }

  private selector(): string {
    return `fieldSelector=${encodeURIComponent(`spec.nodeName=${this.opts.nodeName}`)}`;
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const rv = this.consistentRelist ? '' : '&resourceVersion=0';
    const list = await this.opts.client.request<V1PodList>('GET', `/api/v1/pods?${this.selector()}${rv}`, { signal });
    const pods: KubePod[] = [];
    for (const item of list.items ?? []) {
      const p = this.convert(item);
      if (p) pods.push(p);
    }
    this.replaceAll(pods);
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    this.consistentRelist = false;
    this.stats.lists++;
    this.attempt = 0;
    this.stats.lastSyncMs = Date.now();
    this.setHealthy(true, 'listed');
    this.log.debug({ pods: pods.length, resourceVersion: this.resourceVersion }, 'kube: listed pods');
  }

  private async watchOnce(signal: AbortSignal): Promise<void> {
    const timeout = this.opts.watchTimeoutSeconds ?? 300;
    const path =
      `/api/v1/pods?${this.selector()}&watch=true&allowWatchBookmarks=true` +
      `&resourceVersion=${encodeURIComponent(this.resourceVersion ?? '')}&timeoutSeconds=${timeout}`;
    this.stats.watches++;
    await this.opts.client.watch<V1Pod>(path, (ev) => this.onEvent(ev), {
      signal,
      // bookmarks arrive about once a minute; allow for a server that sends none
      idleTimeoutMs: this.opts.idleTimeoutMs ?? (timeout + 30) * 1000,
      onOpen: () => {
        this.attempt = 0;
        this.setHealthy(true, 'watching');
      },
    });
  }

  private onEvent(ev: WatchEvent<V1Pod>): void {
    if (ev.type === 'ERROR') {
      const status = ev.object as { code?: number; reason?: string; message?: string };
      if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone') throw new Gone(status.message ?? 'Gone');
      throw new ApiError(status.code ?? 0, status.reason ?? 'WatchError', `watch ERROR event: ${status.message ?? JSON.stringify(status)}`);
    }
    const rv = ev.object?.metadata?.resourceVersion;
    this.stats.watchEvents++;
    this.stats.lastSyncMs = Date.now();
    if (ev.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return;
    }
    const pod = this.convert(ev.object);
    if (pod) {
      if (ev.type === 'DELETED') this.remove(pod);
      else this.put(pod);
    }
    // advance only after the event is in the cache: a drop before this line replays it
    if (rv) this.resourceVersion = rv;
  }

  private convert(item: V1Pod): KubePod | undefined {
    return fromV1Pod(item, (field, value) => this.log.warn({ field, value }, 'kube: quantity not understood; ignored'));
  }
}
