import type { Log } from '../log';
import fs from 'node:fs';
import path from 'node:path';
import { watchAdaptivePoll } from './adaptive-poller';
import { nativeAvailable, nativeLoadError } from './addon';
import { watchCgroupEvents } from './cgroup-events';
import { isCgroup2Root } from './cgroup2-root';
import { watchMemcgThreshold } from './memcg';
import { pollCounters } from './polling';
import { tripwireUnavailable, watchTripwire } from './tripwire';
import type { LineMechanism, ThresholdWatcher, Watcher } from './types';
import type { LineMeasure } from './working-set';

/** What the selection reports: why a line falls back (src/log.ts; a pino logger fits). */
export type FallbackLog = Pick<Log, 'warn'>;

/**
 * Which mechanisms a usage line may use: 'best' (the tripwire, the v1 eventfd, else the
 * adaptive poller) or 'poll' (the adaptive poller alone: no BPF program is loaded, no eventfd
 * registered; for kernels where loading BPF is not wanted, and to measure the poller itself).
 */
export type LinePreference = 'best' | 'poll';

export interface SelectOptions {
  /** Interval of the polling fallback for events files (usage lines use the adaptive poller). */
  intervalMs: number;
  log?: FallbackLog;
  /** default 'best' */
  lines?: LinePreference;
}

/** The mechanism chosen for a usage line, and why the better ones were not. */
export interface LineChoice {
  mechanism: LineMechanism;
  /** Empty when the best mechanism for this cgroup version is in force. */
  fallbacks: string[];
}

/** cgroup2's statfs magic (CGROUP2_SUPER_MAGIC, include/uapi/linux/magic.h). */
const CGROUP2_SUPER_MAGIC = 0x63677270;

function onCgroup2(dir: string): boolean {
  try {
    return fs.statfsSync(dir).type === CGROUP2_SUPER_MAGIC;
  } catch {
    return false;
  }
}

/**
 * Which mechanism watches a usage line on `cgroupDir`, best first: the eBPF tripwire on cgroup
 * v2 (the root included), the memcg threshold eventfd on cgroup v1, else the adaptive poller.
 * With 'poll' the poller is chosen, not fallen back to: no fallback is reported, and the
 * tripwire is not even probed (probing loads the BPF object).
 */
export function chooseLineMechanism(cgroupDir: string, lines: LinePreference = 'best'): LineChoice {
  const fallbacks: string[] = [];
  if (lines === 'poll') return { mechanism: 'adaptive-poll', fallbacks };
  const v1 = fs.existsSync(path.join(cgroupDir, 'cgroup.event_control'));
  const v2 = !v1 && onCgroup2(cgroupDir) && (fs.existsSync(path.join(cgroupDir, 'memory.current')) || isCgroup2Root(cgroupDir));
  if (v2) {
    const why = tripwireUnavailable();
    if (why === null) return { mechanism: 'bpf-tripwire', fallbacks };
    fallbacks.push(`bpf-tripwire: ${why}`);
  } else if (v1) {
    if (nativeAvailable()) return { mechanism: 'memcg-threshold-eventfd', fallbacks };
    fallbacks.push(`memcg-threshold-eventfd: native addon unavailable: ${nativeLoadError()?.message}`);
  } else {
    fallbacks.push('not a memory cgroup: no cgroup.event_control (v1), not a cgroup2 directory with memory.current');
  }
  return { mechanism: 'adaptive-poll', fallbacks };
}

/**
 * A usage line on `cgroupDir` by the best mechanism here (chooseLineMechanism) that
 * `opts.lines` allows; logs the reason
 * for a fallback. `lineMechanism` on the result says which is in force.
 */
export function watchUsageThreshold(cgroupDir: string, thresholdBytes: number, opts: SelectOptions): ThresholdWatcher {
  return watchLine(cgroupDir, thresholdBytes, 'usage', opts, chooseLineMechanism(cgroupDir, opts.lines));
}

/**
 * A line on the kubelet's working set of `cgroupDir` (usage - inactive_file; the v2 root:
 * memory.stat anon + file - inactive_file), fresh at every charge (tripwire) or read (adaptive
 * poller), so it fires when the kubelet's memory signal crosses capacity - line however usage
 * moves. Null where the best mechanism compares usage alone (the memcg v1 eventfd): the caller
 * then arms a usage line and moves it as inactive_file drifts.
 */
export function watchWorkingSetThreshold(cgroupDir: string, thresholdBytes: number, opts: SelectOptions): ThresholdWatcher | null {
  const choice = chooseLineMechanism(cgroupDir, opts.lines);
  if (choice.mechanism === 'memcg-threshold-eventfd') return null;
  return watchLine(cgroupDir, thresholdBytes, 'working-set', opts, choice);
}

function watchLine(cgroupDir: string, thresholdBytes: number, measure: LineMeasure, opts: SelectOptions, choice: LineChoice): ThresholdWatcher {
  let w: ThresholdWatcher;
  if (choice.mechanism === 'bpf-tripwire') w = watchTripwire(cgroupDir, thresholdBytes, measure);
  else if (choice.mechanism === 'memcg-threshold-eventfd') w = watchMemcgThreshold(cgroupDir, thresholdBytes);
  else w = watchAdaptivePoll(cgroupDir, thresholdBytes, {}, measure);
  // The mechanism in force is the caller's to log, once per line (src/agent/arming.ts); the
  // reason for a fallback is known only here.
  if (choice.fallbacks.length > 0)
    opts.log?.warn({ cgroupDir, thresholdBytes, measure, mechanism: w.lineMechanism, reason: choice.fallbacks.join('; ') }, 'memory line: fallback');
  return w;
}

/** A cgroup.events or memory.events file, by kernfs notification where possible, else polled. */
export function watchEventsFile(file: string, opts: SelectOptions): Watcher {
  if (nativeAvailable()) return watchCgroupEvents(file);
  opts.log?.warn({ file, intervalMs: opts.intervalMs, reason: `native addon unavailable: ${nativeLoadError()?.message}` }, 'events file: polling fallback');
  return pollCounters(file, opts.intervalMs);
}
