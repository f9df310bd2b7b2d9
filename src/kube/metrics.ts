/**
 * Prometheus metrics for the Kubernetes side, read from the sources' and the reporter's own
 * counters at scrape time (no bookkeeping on the hot path). The agent owns the registry and the
 * HTTP endpoint; it calls registerKubeMetrics once.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EvictionReporter } from './eviction-reporter';
import type { PodSource } from './pod-source';

export interface KubeMetricsParts {
  /** the source the agent reads */
  source?: PodSource;
  reporter?: EvictionReporter;
}

/** A counter that mirrors a monotonically growing number read at scrape time. */
function mirroredCounter(registry: Registry, name: string, help: string, read: () => number | undefined): void {
  let last = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read() ?? 0;
      if (now > last) this.inc(now - last);
      last = Math.max(last, now);
    },
  });
}

export function registerKubeMetrics(registry: Registry, parts: KubeMetricsParts): void {
  const { source, reporter } = parts;
  if (source) {
    const stats = source.stats;
    new Gauge({
      name: 'evictd_kube_pod_source_healthy',
      help: '1 while pod specs follow the API server or kubelet, 0 while stale or runtime-only',
      registers: [registry],
      collect() {
        this.set(source.healthy ? 1 : 0);
      },
    });
    new Gauge({
      name: 'evictd_kube_pod_source_mode',
      help: 'where pod specs come from now: 1 for the mode in force (api, kubelet or runtime)',
      labelNames: ['mode'],
      registers: [registry],
      collect() {
        const mode = source.mode;
        for (const m of ['api', 'kubelet', 'runtime']) this.set({ mode: m }, m === mode ? 1 : 0);
      },
    });
    new Gauge({
      name: 'evictd_kube_pods',
      help: 'active (non-terminal) pods known to the pod source',
      registers: [registry],
      collect() {
        this.set(source.list().length);
      },
    });
    new Gauge({
      name: 'evictd_kube_pod_source_last_sync_timestamp_seconds',
      help: 'Unix time of the last successful list, poll or watch event',
      registers: [registry],
      collect() {
        this.set(stats.lastSyncMs ? stats.lastSyncMs / 1000 : 0);
      },
    });
    mirroredCounter(registry, 'evictd_kube_pod_lists_total', 'pod lists (or kubelet /pods polls) that succeeded', () => stats.lists);
    mirroredCounter(registry, 'evictd_kube_pod_relists_gone_total', 're-lists after 410 Gone', () => stats.relistsAfterGone);
    mirroredCounter(registry, 'evictd_kube_pod_watch_events_total', 'watch events received, bookmarks included', () => stats.watchEvents);
    mirroredCounter(registry, 'evictd_kube_pod_source_failures_total', 'failed lists, polls and watches', () => stats.failures);
  }
  if (reporter) {
    const s = reporter.stats;
    mirroredCounter(registry, 'evictd_kube_status_writes_total', 'pod status patches that landed (Failed/Evicted)', () => s.statusWrites);
    mirroredCounter(registry, 'evictd_kube_event_writes_total', 'events created (Evicted, EvictionThresholdMet)', () => s.eventWrites);
    mirroredCounter(registry, 'evictd_kube_write_retries_total', 'API writes retried after a failure', () => s.retries);
    mirroredCounter(registry, 'evictd_kube_write_failures_total', 'API writes abandoned', () => s.failures);
    new Gauge({
      name: 'evictd_kube_reports_pending',
      help: 'eviction reports still being written',
      registers: [registry],
      collect() {
        this.set(s.pending);
      },
    });
  }
}
