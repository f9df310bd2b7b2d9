import fs from 'node:fs';
import path from 'node:path';
import { nativeAvailable, nativeLoadError } from './addon';
import { watchCgroupEvents } from './cgroup-events';
import { watchMemcgThreshold } from './memcg';
import { pollCounters, pollMemoryUsage } from './polling';
import type { ThresholdWatcher, Watcher } from './types';

/** What the selection reports when it falls back (pino's logger fits). */
export interface FallbackLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface SelectOptions {
  /** Interval of the polling fallback. */
  intervalMs: number;
  log?: FallbackLog;
}

/**
 * A usage threshold on `cgroupDir` by the best mechanism here: the memcg v1 threshold eventfd
 * through the addon; else a poller, and a log line that says why.
 */
export function watchUsageThreshold(cgroupDir: string, thresholdBytes: number, opts: SelectOptions): ThresholdWatcher {
  let reason: string;
  if (!nativeAvailable()) reason = `native addon unavailable: ${nativeLoadError()?.message}`;
  else if (!fs.existsSync(path.join(cgroupDir, 'cgroup.event_control'))) reason = 'no cgroup v1 memory controller here (no cgroup.event_control)';
  else return watchMemcgThreshold(cgroupDir, thresholdBytes);
  opts.log?.warn({ cgroupDir, thresholdBytes, intervalMs: opts.intervalMs, reason }, 'memory threshold: polling fallback');
  return pollMemoryUsage(cgroupDir, thresholdBytes, opts.intervalMs);
}

/** A cgroup.events or memory.events file, by kernfs notification where possible, else polled. */
export function watchEventsFile(file: string, opts: SelectOptions): Watcher {
  if (nativeAvailable()) return watchCgroupEvents(file);
  opts.log?.warn({ file, intervalMs: opts.intervalMs, reason: `native addon unavailable: ${nativeLoadError()?.message}` }, 'events file: polling fallback');
  return pollCounters(file, opts.intervalMs);
}
