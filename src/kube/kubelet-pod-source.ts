/**
 * Pod specs from the kubelet's own `/pods` endpoint (https://127.0.0.1:10250/pods): the pods the
 * kubelet runs, static pods included, with no API server round trip. The endpoint has no watch,
 * so it is polled; each poll replaces the cache. Authorization on the kubelet side is
 * `nodes/proxy` (see deploy/rbac.yaml, commented out by default: it is a broad permission).
 */
import type { KubeClient } from './client';
import { fromV1Pod, type KubePod, type V1Pod } from './pod-spec';
import { backoffMs } from '../policy/backoff';
import type { Log } from '../log';
import { CachedPodSource, sleep } from './pod-source';

export interface KubeletPodSourceOptions {
  /** a client whose server is the kubelet (e.g. https://127.0.0.1:10250) */
  client: KubeClient;
  log?: Log;
  intervalMs?: number;
  maxBackoffMs?: number;
}

export class KubeletPodSource extends CachedPodSource {
  readonly kind = 'kubelet' as const;
  protected readonly healthLines = {
    current: 'kube: pod specs from the kubelet are current',
    stale: 'kube: kubelet /pods unreachable; pod specs may be stale',
  };

  constructor(private readonly opts: KubeletPodSourceOptions) {
    super(opts.log);
  }

  start(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.abort = new AbortController();
    const first = this.pollOnce(this.abort.signal);
    this.running = first.then(() => this.loop(this.abort.signal));
    return first.then(() => this.announceMode('started'));
  }

  private async loop(signal: AbortSignal): Promise<void> {
    const interval = this.opts.intervalMs ?? 5_000;
    let attempt = 0;
    while (!signal.aborted) {
      await sleep(attempt === 0 ? interval : backoffMs(attempt, interval, this.opts.maxBackoffMs ?? 30_000), signal);
      if (signal.aborted) break;
      attempt = (await this.pollOnce(signal)) ? 0 : attempt + 1;
    }
  }

  private async pollOnce(signal: AbortSignal): Promise<boolean> {
    try {
      const list = await this.opts.client.request<{ items?: V1Pod[] }>('GET', '/pods', { signal });
      const pods: KubePod[] = [];
      for (const item of list.items ?? []) {
        const p = fromV1Pod(item, (field, value) => this.log.warn({ field, value }, 'kube: quantity not understood; ignored'));
        if (p) pods.push(p);
      }
      this.replaceAll(pods);
      this.stats.lists++;
      this.stats.lastSyncMs = Date.now();
      this.setHealthy(true, 'polled');
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      this.stats.failures++;
      this.stats.lastError = (err as Error).message;
      this.setHealthy(false, (err as Error).message);
      return false;
    }
  }
}
