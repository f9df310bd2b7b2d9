import fs from 'node:fs';
import path from 'node:path';
import { addon, type NativeCallback, type NativeMemcgWatcher } from './addon';
import { NativeBackedWatcher } from './native-watcher';
import { orderEventOf } from './order-event';
import type { ThresholdWatcher, Watcher } from './types';

// cgroup v1 memory controller notifications, all registered through cgroup.event_control
// (Documentation/admin-guide/cgroup-v1/memory.rst, sections 9-11).

function checkBytes(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${field}: ${JSON.stringify(value)}: must be a positive integer number of bytes`);
}

function openThreshold(cgroupDir: string, usageFile: string, bytes: number, cb: NativeCallback, onArmed: () => void): NativeMemcgWatcher {
  const file = path.join(cgroupDir, usageFile);
  return addon().openMemcgEvent(path.join(cgroupDir, 'cgroup.event_control'), file, String(bytes), file, cb, onArmed);
}

class MemcgThresholdWatcher extends NativeBackedWatcher<NativeMemcgWatcher> implements ThresholdWatcher {
  readonly lineMechanism = 'memcg-threshold-eventfd' as const;
  /** The kernel compares the counter alone: the caller moves the line as inactive_file drifts. */
  readonly measure = 'usage' as const;
  private bytes: number;
  /** The standing order, kept here: a re-arm swaps the registration, and the order moves with it. */
  private order: { killPath: string; untilNs: bigint; workingSetLineBytes: number; tag: string; podMemoryDir: string } | null = null;

  constructor(
    private readonly cgroupDir: string,
    private readonly usageFile: string,
    thresholdBytes: number,
  ) {
    super(
      'memcg-threshold',
      path.join(cgroupDir, usageFile),
      (cb, onArmed) => openThreshold(cgroupDir, usageFile, thresholdBytes, cb, onArmed),
      usageFile.replace(/^memory\./, '').replace(/\./g, '_'),
    );
    this.bytes = thresholdBytes;
  }

  get thresholdBytes(): number {
    return this.bytes;
  }

  rearm(thresholdBytes: number): Promise<void> {
    checkBytes('thresholdBytes', thresholdBytes);
    const armed = this.replaceNative((cb, onArmed) => openThreshold(this.cgroupDir, this.usageFile, thresholdBytes, cb, onArmed));
    this.bytes = thresholdBytes;
    // The old registration held the order (at the old line) until it was closed; the new one
    // holds it from the moment it is in force.
    return armed.then(() => {
      if (this.order !== null) this.placeOrder();
    });
  }

  /**
   * The pod's cgroup.kill is written from the addon's order thread at the first upward crossing
   * within `ttlMs` (native/eventfd_orders.h); on a hybrid host `podCgroupDir` is the pod's
   * directory in the cgroup2 mount, which has cgroup.kill. False without cgroup.kill (Linux before
   * 5.14, or no cgroup2 directory for the pod) or before the registration is in force.
   */
  setOrder(podCgroupDir: string | null, ttlMs = 1000, workingSetLineBytes?: number, tag?: string, podMemoryDir?: string): boolean {
    if (this.closed) return false;
    if (podCgroupDir === null) {
      this.order = null;
      return this.current().setOrder(null);
    }
    // A usage line sits at the kubelet's line plus inactive_file as last read: the order thread
    // confirms each crossing on the working set read fresh against the kubelet's line itself.
    if (workingSetLineBytes === undefined) throw new TypeError('setOrder: a usage line needs workingSetLineBytes');
    checkBytes('workingSetLineBytes', workingSetLineBytes);
    const killPath = path.join(podCgroupDir, 'cgroup.kill');
    if (!fs.existsSync(killPath)) return false;
    this.order = {
      killPath,
      untilNs: process.hrtime.bigint() + BigInt(Math.round(ttlMs * 1e6)),
      workingSetLineBytes,
      tag: tag ?? '',
      // The line is in the memory hierarchy, the kill in cgroup2's: the pod's statistics are in the former.
      podMemoryDir: podMemoryDir ?? '',
    };
    return this.placeOrder();
  }

  private placeOrder(): boolean {
    const o = this.order!;
    const leftMs = Number(o.untilNs - process.hrtime.bigint()) / 1e6;
    if (leftMs <= 0) {
      this.order = null;
      return this.current().setOrder(null) && false;
    }
    return this.current().setOrder(
      o.killPath,
      leftMs,
      this.bytes,
      (text: string, written: string) => this.emit('order', orderEventOf(text, written)),
      o.workingSetLineBytes,
      o.tag,
      o.podMemoryDir,
    );
  }
}

/**
 * Fires when the cgroup's memory usage crosses `thresholdBytes`, upwards or downwards. The
 * kernel checks every 128 page events per CPU and carries no value: the event holds the usage
 * read at the event (counters.usage_in_bytes, or memsw_usage_in_bytes with `memsw`).
 */
export function watchMemcgThreshold(cgroupDir: string, thresholdBytes: number, opts: { memsw?: boolean } = {}): ThresholdWatcher {
  checkBytes('thresholdBytes', thresholdBytes);
  return new MemcgThresholdWatcher(cgroupDir, opts.memsw ? 'memory.memsw.usage_in_bytes' : 'memory.usage_in_bytes', thresholdBytes);
}

/**
 * memory.oom_control: fires when the cgroup hits OOM (with the OOM killer enabled, once per OOM
 * episode, before the kill). Counters: oom_kill_disable, under_oom, oom_kill read at the event.
 */
export function watchOom(cgroupDir: string): Watcher {
  const target = path.join(cgroupDir, 'memory.oom_control');
  return new NativeBackedWatcher('memcg-oom', target, (cb, onArmed) =>
    addon().openMemcgEvent(path.join(cgroupDir, 'cgroup.event_control'), target, '', target, cb, onArmed),
  );
}
