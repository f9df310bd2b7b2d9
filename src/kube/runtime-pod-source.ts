/**
 * The runtime-only source: pod identities from the container runtime's sandboxes (CRI
 * ListPodSandbox), for when neither the API server nor the kubelet answers. The kubelet copies
 * a pod's annotations onto its sandbox and labels it io.kubernetes.pod.{name,namespace,uid}, so
 * static pods are still recognized; priority, requests and limits are not on the sandbox.
 */
import type { KubePod } from './pod-spec';
import { isCritical, SYSTEM_CRITICAL_PRIORITY } from '../policy/pods';
import { backoffMs, CachedPodSource, type Logger, sleep } from './pod-source';
import type { PodSpec } from '../policy/types';

/** A CRI PodSandbox as grpc-js/proto-loader decodes it (only the fields used here). */
export interface RuntimeSandbox {
  id?: string;
  metadata?: { name?: string; namespace?: string; uid?: string } | null;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** SANDBOX_READY / SANDBOX_NOTREADY, or their enum numbers 0 / 1 */
  state?: string | number;
}

export interface RuntimePodSpecOptions {
  /**
   * Namespaces whose pods are assumed critical when their priority cannot be known. Default
   * ['kube-system']: without the API, evictd must not evict a CNI or DNS pod on a guess.
   */
  assumeCriticalNamespaces?: string[];
}

/** Builds the best PodSpec a sandbox allows: identity, annotations, no resources. */
export function podSpecFromSandbox(sb: RuntimeSandbox, opts: RuntimePodSpecOptions = {}): PodSpec | undefined {
  const labels = sb.labels ?? {};
  const uid = sb.metadata?.uid || labels['io.kubernetes.pod.uid'];
  const name = sb.metadata?.name || labels['io.kubernetes.pod.name'];
  const namespace = sb.metadata?.namespace || labels['io.kubernetes.pod.namespace'] || 'default';
  if (!uid || !name) return undefined;
  const critical = opts.assumeCriticalNamespaces ?? ['kube-system'];
  return {
    namespace,
    name,
    uid,
    priority: critical.includes(namespace) ? SYSTEM_CRITICAL_PRIORITY : 0,
    annotations: { ...(sb.annotations ?? {}) },
    containers: [],
    volumes: [],
  };
}

function ready(sb: RuntimeSandbox): boolean {
  return sb.state === undefined || sb.state === 'SANDBOX_READY' || sb.state === 0;
}

export interface RuntimePodSourceOptions extends RuntimePodSpecOptions {
  listSandboxes: () => Promise<RuntimeSandbox[]>;
  log?: Logger;
  intervalMs?: number;
}

export class RuntimePodSource extends CachedPodSource {
  readonly kind = 'runtime' as const;

  constructor(private readonly opts: RuntimePodSourceOptions) {
    super(opts.log);
  }

  start(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.abort = new AbortController();
    const first = this.refresh();
    this.running = first.then(() => this.loop(this.abort.signal));
    return first.then(() => undefined);
  }

  /** Re-reads the sandboxes now; false when the runtime did not answer. */
  async refresh(): Promise<boolean> {
    try {
      const sandboxes = await this.opts.listSandboxes();
      const pods: KubePod[] = [];
      for (const sb of sandboxes) {
        if (!ready(sb)) continue;
        const spec = podSpecFromSandbox(sb, this.opts);
        if (!spec) continue;
        pods.push({
          spec,
          apiUid: spec.uid,
          phase: 'Running',
          // unknown without requests: BestEffort is what an empty spec computes to
          qosClass: 'BestEffort',
          // a static pod's sandbox carries config.source=file|http (the kubelet copies annotations)
          mirror: isCritical({ ...spec, priority: 0 }),
          terminating: false,
        });
      }
      this.cache.replace(pods);
      this.setHealthy(true, 'listed sandboxes');
      return true;
    } catch (err) {
      this.setHealthy(false, (err as Error).message);
      return false;
    }
  }

  private async loop(signal: AbortSignal): Promise<void> {
    const interval = this.opts.intervalMs ?? 10_000;
    let attempt = 0;
    while (!signal.aborted) {
      await sleep(attempt === 0 ? interval : backoffMs(attempt, interval, 60_000), signal);
      if (signal.aborted) break;
      attempt = (await this.refresh()) ? 0 : attempt + 1;
    }
  }

  private setHealthy(ok: boolean, reason: string): void {
    if (ok === this.healthyNow) return;
    this.healthyNow = ok;
    (ok ? this.log.info : this.log.warn).call(this.log, { source: 'runtime', reason }, ok ? 'kube: runtime sandboxes listed' : 'kube: runtime sandbox list failed');
    this.emit('health', ok, reason);
  }
}
