import fs from 'node:fs';
import path from 'node:path';
import { eventsKind } from './cgroup-events';
import { parseCounters } from './counters';
import { TimerWatcher } from './timer-watcher';
import type { ThresholdWatcher, Watcher, WatchKind } from './types';

// The fallback where the addon or a kernel interface is missing: timers on the JS loop that read
// the same files and emit the same events, with the latency of the interval.

function checkInterval(intervalMs: number): void {
  if (!Number.isFinite(intervalMs) || intervalMs < 1) throw new RangeError(`intervalMs: ${JSON.stringify(intervalMs)}: must be at least 1`);
}

/** Reads on a fixed period; a subclass says whether a read found something to report. */
abstract class PollingWatcher extends TimerWatcher implements Watcher {
  constructor(
    kind: WatchKind,
    source: string,
    readonly intervalMs: number,
  ) {
    super(kind, source);
    checkInterval(intervalMs);
  }

  protected firstDelayMs(): number {
    return this.intervalMs;
  }

  protected poll(): number {
    // Stamped once the value is read (emitEvent): the file may change during the read itself.
    const counters = this.check();
    if (counters !== null) this.emitEvent(counters);
    return this.intervalMs;
  }

  /** Reads the source; returns the counters of an event to emit, or null when nothing changed. */
  protected abstract check(): Record<string, number> | null;
}

/** The usage file of a cgroup: memory.usage_in_bytes (v1) or memory.current (v2). */
export function usageFile(cgroupDir: string): string {
  const v1 = path.join(cgroupDir, 'memory.usage_in_bytes');
  return fs.existsSync(v1) ? v1 : path.join(cgroupDir, 'memory.current');
}

class UsagePoller extends PollingWatcher implements ThresholdWatcher {
  readonly lineMechanism = 'fixed-poll' as const;
  readonly measure = 'usage' as const;
  private above: boolean;
  private bytes: number;

  constructor(source: string, thresholdBytes: number, intervalMs: number) {
    super('memcg-threshold', source, intervalMs);
    this.bytes = thresholdBytes;
    this.above = this.read() >= thresholdBytes;
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
    return Promise.resolve();
  }

  protected check(): Record<string, number> | null {
    const usage = this.read();
    const above = usage >= this.bytes;
    if (above === this.above) return null;
    this.above = above;
    return { [path.basename(this.source).replace(/^memory\./, '')]: usage };
  }

  private read(): number {
    return Number(fs.readFileSync(this.source, 'utf8'));
  }
}

/**
 * Polls the cgroup's usage every `intervalMs` and emits a 'memcg-threshold' event when it is on
 * the other side of `thresholdBytes` than at the last read (both directions, like the kernel's).
 */
export function pollMemoryUsage(cgroupDir: string, thresholdBytes: number, intervalMs: number): ThresholdWatcher {
  if (!Number.isSafeInteger(thresholdBytes) || thresholdBytes <= 0)
    throw new RangeError(`thresholdBytes: ${JSON.stringify(thresholdBytes)}: must be a positive integer number of bytes`);
  return new UsagePoller(usageFile(cgroupDir), thresholdBytes, intervalMs);
}

class FilePoller extends PollingWatcher {
  private last: string;

  constructor(file: string, intervalMs: number) {
    super(eventsKind(file), file, intervalMs);
    this.last = fs.readFileSync(file, 'utf8');
    this.start();
  }

  protected check(): Record<string, number> | null {
    const text = fs.readFileSync(this.source, 'utf8');
    if (text === this.last) return null;
    this.last = text;
    return parseCounters(text);
  }
}

/** Polls a cgroup.events or memory.events file and emits an event when its contents change. */
export function pollCounters(file: string, intervalMs: number): Watcher {
  return new FilePoller(file, intervalMs);
}
