/**
 * A primary source (API watch or kubelet /pods) backed by the runtime-only source. A pod the
 * primary knows is always served from the primary, even while it is unhealthy (a stale spec
 * beats a guessed one); a sandbox the primary does not know (new since the API went away, or
 * watch lag) is served from the runtime. `mode` and the 'mode' event say which is in force,
 * for the logs and the evictd_kube_pod_source_mode metric.
 */
import { EventEmitter } from 'node:events';
import type { KubePod } from './pod-spec';
import { type Logger, type PodSource, type PodSourceKind, silentLogger } from './pod-source';
import type { PodSpec } from '../policy/types';

export class FallbackPodSource extends EventEmitter implements PodSource {
  private readonly log: Logger;
  private modeNow: PodSourceKind;

  constructor(
    readonly primary: PodSource,
    readonly fallback: PodSource,
    log?: Logger,
  ) {
    super();
    this.log = log ?? silentLogger;
    // start from the primary so that a primary already down at start() is announced as a fallback
    this.modeNow = primary.kind;
    const forward = (change: unknown) => this.emit('change', change);
    primary.on('change', forward);
    fallback.on('change', forward);
    primary.on('health', (ok: boolean, reason: string) => {
      this.emit('health', ok, reason);
      this.updateMode(reason);
    });
  }

  get kind(): PodSourceKind {
    return this.primary.kind;
  }

  /** Which source the specs come from right now. */
  get mode(): PodSourceKind {
    return this.modeNow;
  }

  get healthy(): boolean {
    return this.primary.healthy;
  }

  async start(): Promise<void> {
    await Promise.all([this.primary.start(), this.fallback.start()]);
    this.updateMode('started');
  }

  stop(): void {
    this.primary.stop();
    this.fallback.stop();
  }

  get(uid: string): PodSpec | undefined {
    return this.primary.get(uid) ?? this.fallback.get(uid);
  }

  info(uid: string): KubePod | undefined {
    return this.primary.info(uid) ?? this.fallback.info(uid);
  }

  list(): PodSpec[] {
    const out = this.primary.list();
    for (const spec of this.fallback.list()) {
      // a uid the primary knows (even as terminal) is the primary's to report
      if (!this.primary.info(spec.uid)) out.push(spec);
    }
    return out;
  }

  private updateMode(reason: string): void {
    const mode = this.primary.healthy ? this.primary.kind : this.fallback.kind;
    if (mode === this.modeNow) return;
    this.modeNow = mode;
    if (mode === this.fallback.kind) this.log.warn({ mode, reason }, `kube: ${this.primary.kind} source unavailable; falling back to runtime-only pod specs (no priorities, no requests)`);
    else this.log.info({ mode, reason }, `kube: pod specs from the ${mode} source again`);
    this.emit('mode', mode);
  }
}
