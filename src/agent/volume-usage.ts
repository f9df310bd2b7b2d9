/**
 * The pods' emptyDir usage as passes see it: measured in the background, at most once per
 * period (the kubelet's --volume-stats-agg-period, 1m by default: it reads volume stats from
 * the same kind of cache), and attached to every pass from the last measurement. A pass never
 * waits for a walk of a volume's files.
 */
import type { Logger } from 'pino';
import { readEmptyDirUsage } from '../node/volumes';
import type { PodSpec, VolumeUsage } from '../policy/types';
import { systemClock } from './clock';
import type { Clock } from './ports';

export interface VolumeUsageOptions {
  /** the kubelet's root dir (pods/<uid>/volumes/... below it) */
  kubeletRootDir: string;
  periodMs: number;
  logger: Logger;
  /** the period's clock (default: the process's monotonic clock) */
  clock?: Clock;
}

export class VolumeUsageCache {
  private usage = new Map<string, VolumeUsage[]>();
  private measuredAt = -Infinity;
  private running: Promise<void> | null = null;
  /** completed measurements (tests wait for one) */
  measurements = 0;

  private readonly clock: Clock;

  constructor(private readonly o: VolumeUsageOptions) {
    this.clock = o.clock ?? systemClock;
  }

  private nowMs(): number {
    return Number(this.clock.now() / 1_000_000n);
  }

  /** Starts a measurement of these pods' emptyDirs when the last one is older than the period. */
  refresh(pods: ReadonlyArray<{ uid: string; spec: PodSpec }>): void {
    if (this.running || this.nowMs() - this.measuredAt < this.o.periodMs) return;
    const wanted = pods.flatMap((p) => {
      const names = p.spec.volumes.filter((v) => v.emptyDir !== undefined).map((v) => v.name);
      return names.length > 0 ? [{ uid: p.uid, names }] : [];
    });
    if (wanted.length === 0) return;
    this.measuredAt = this.nowMs();
    this.running = this.measure(wanted).finally(() => (this.running = null));
  }

  /** The last measured usage of a pod's emptyDirs (empty before the first measurement). */
  get(uid: string): VolumeUsage[] {
    return this.usage.get(uid) ?? [];
  }

  async close(): Promise<void> {
    await this.running;
  }

  private async measure(pods: Array<{ uid: string; names: string[] }>): Promise<void> {
    const next = new Map<string, VolumeUsage[]>();
    const t0 = this.nowMs();
    for (const p of pods) {
      try {
        const used = await readEmptyDirUsage(this.o.kubeletRootDir, p.uid, p.names);
        next.set(p.uid, used);
        // The pod decides what its volume holds; a walk cut short is said each time, at warn.
        for (const v of used)
          if (v.partial)
            this.o.logger.warn(
              { uid: p.uid, volume: v.name, stoppedAt: v.partial, usedBytes: v.usedBytes, inodesUsed: v.inodesUsed },
              'emptyDir walk stopped at its bound: usage is a lower bound',
            );
      } catch (err) {
        this.o.logger.debug({ err, uid: p.uid }, 'emptyDir usage unreadable');
      }
    }
    this.usage = next;
    this.measurements++;
    this.o.logger.debug({ pods: pods.length, ms: this.nowMs() - t0 }, 'emptyDir usage measured');
  }
}
