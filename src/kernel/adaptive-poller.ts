import { TimerWatcher } from './timer-watcher';
import type { ThresholdWatcher } from './types';
import { measureReader, type LineMeasure, type MeasureReader } from './working-set';

// The fallback for a usage line where no kernel mechanism is available (no BPF: addon built
// without libbpf, no BTF, no CAP_BPF/CAP_PERFMON, a kernel that refuses fentry/fexit; and no
// memcg v1 threshold): read the usage at an interval that shrinks as usage nears the line.

/** The bound the poller keeps: a ramp up to `maxRampBytesPerSec` is seen within `marginBytes` of the line. */
export interface PollBound {
  /** The fastest ramp the bound holds for (default 10 GiB/s). */
  maxRampBytesPerSec: number;
  /** Shortest interval (default 5 ms): the margin is maxRamp x minIntervalMs. */
  minIntervalMs: number;
  /** Longest interval, far from the line (default 1000 ms). */
  maxIntervalMs: number;
}

export const DEFAULT_POLL_BOUND: PollBound = {
  maxRampBytesPerSec: 10 * 1024 ** 3,
  minIntervalMs: 5,
  maxIntervalMs: 1000,
};

/** How far past the line usage can be, at most, when a ramp of up to maxRamp is first seen. */
export function pollMarginBytes(bound: PollBound = DEFAULT_POLL_BOUND): number {
  return (bound.maxRampBytesPerSec * bound.minIntervalMs) / 1000;
}

/**
 * The delay before the next read. Usage is `distanceBytes` from the line (on either side: the
 * way back counts too) and moved towards it at `towardsBytesPerSec` over the last interval
 * (negative: away). The worst case is a ramp at max(maxRamp, observed) starting right after
 * this read: it reaches line + margin after (distance + margin) / rate, so the next read comes
 * no later than that. The margin is maxRamp x minInterval, which makes the bound hold even at
 * the minimum interval: at the line, the next read is minIntervalMs away and a maxRamp ramp
 * covers exactly the margin in that time. Far from the line the delay grows to maxIntervalMs.
 * (Timer lateness of the JS loop adds to the delay: it is the loop's, not this formula's.)
 */
export function nextPollDelayMs(distanceBytes: number, towardsBytesPerSec: number, bound: PollBound = DEFAULT_POLL_BOUND): number {
  const rate = Math.max(bound.maxRampBytesPerSec, towardsBytesPerSec);
  const margin = pollMarginBytes(bound);
  const ms = ((Math.max(0, distanceBytes) + margin) / rate) * 1000;
  return Math.min(bound.maxIntervalMs, Math.max(bound.minIntervalMs, ms));
}

class AdaptivePoller extends TimerWatcher implements ThresholdWatcher {
  readonly lineMechanism = 'adaptive-poll' as const;
  private readonly read: () => number;
  private bytes: number;
  private above: boolean;
  private last: { usage: number; at: bigint };
  /** Delay chosen for the next read (for tests and the log). */
  lastDelayMs = 0;
  reads = 0;

  constructor(
    reader: MeasureReader,
    thresholdBytes: number,
    readonly bound: PollBound,
    readonly measure: LineMeasure,
  ) {
    super('memcg-threshold', reader.source);
    this.read = reader.read;
    this.bytes = thresholdBytes;
    const usage = this.read();
    this.above = usage >= thresholdBytes;
    this.last = { usage, at: process.hrtime.bigint() };
    this.start();
  }

  get thresholdBytes(): number {
    return this.bytes;
  }

  rearm(thresholdBytes: number): Promise<void> {
    if (!Number.isSafeInteger(thresholdBytes) || thresholdBytes <= 0)
      throw new RangeError(`thresholdBytes: ${JSON.stringify(thresholdBytes)}: must be a positive integer number of bytes`);
    this.bytes = thresholdBytes;
    this.above = this.read() >= thresholdBytes;
    // The distance changed: re-plan now rather than after a delay planned for the old line.
    this.replan();
    return Promise.resolve();
  }

  protected firstDelayMs(): number {
    return 0;
  }

  protected poll(): number {
    const usage = this.read();
    // Stamped once the value is in hand: the counter may cross during the read itself, and an
    // event stamped before it would claim to know before it could.
    const at = process.hrtime.bigint();
    this.reads++;
    const seconds = Number(at - this.last.at) / 1e9;
    const growth = seconds > 0 ? (usage - this.last.usage) / seconds : 0;
    this.last = { usage, at };
    const above = usage >= this.bytes;
    if (above !== this.above) {
      this.above = above;
      this.emitEvent({ usage_bytes: usage, line_bytes: this.bytes, above: above ? 1 : 0 }, at);
    }
    // Below the line, growth moves towards it; above, shrinking does.
    const towards = above ? -growth : growth;
    this.lastDelayMs = nextPollDelayMs(Math.abs(this.bytes - usage), towards, this.bound);
    return this.lastDelayMs;
  }
}

/**
 * Polls a cgroup's `measure` (src/kernel/working-set.ts: usage, or the kubelet's working set,
 * fresh at every read) at an interval from nextPollDelayMs, and emits a 'memcg-threshold' event
 * when it is on the other side of `thresholdBytes` than at the last read (both directions).
 * Counters: usage_bytes (the measure), line_bytes, above.
 */
export function watchAdaptivePoll(
  cgroupDir: string,
  thresholdBytes: number,
  bound: Partial<PollBound> = {},
  measure: LineMeasure = 'usage',
): ThresholdWatcher & { lastDelayMs: number; reads: number } {
  if (!Number.isSafeInteger(thresholdBytes) || thresholdBytes <= 0)
    throw new RangeError(`thresholdBytes: ${JSON.stringify(thresholdBytes)}: must be a positive integer number of bytes`);
  const b = { ...DEFAULT_POLL_BOUND, ...bound };
  if (!(b.minIntervalMs >= 1 && b.maxIntervalMs >= b.minIntervalMs && b.maxRampBytesPerSec > 0))
    throw new RangeError(`poll bound: ${JSON.stringify(b)}: needs 1 <= minIntervalMs <= maxIntervalMs and maxRampBytesPerSec > 0`);
  return new AdaptivePoller(measureReader(cgroupDir, measure), thresholdBytes, b, measure);
}
