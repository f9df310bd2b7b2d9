/**
 * From one ramp's raw records to its numbers, the same pure arithmetic for every contender:
 * - the hog's readings (HOG_METER: after every MiB it preads /proc/meminfo and logs MemAvailable,
 *   MemFree and Inactive(file) with the moment that MiB's touch began and the moment it read);
 * - the kernel's trace (signal_generate, mark_victim, sched_process_exit on CLOCK_MONOTONIC).
 *
 * The crossing of a line is the start of the MiB (near the lines, the 64 KiB chunk of it: the
 * hog's HOG_METER_FINE) whose reading first fell below it: memory is taken only while the hog
 * touches, so the crossing lies between that start and the reading, and a reaction measured from
 * the start is an upper bound, by at most one chunk's touch (reported beside the rows as
 * `windowMs`). The same bound for every contender; none is flattered.
 */
import type { HogReading } from '../../node-lab';
import type { TraceEvent } from './signal-trace';

const KiB_PER_MiB = 1024;

/** The signals the contenders decide on, each from the same /proc/meminfo reading. */
export type MemorySignal = 'MemAvailable' | 'memory.available' | 'MemFree';

/** "below this many MiB of that signal" */
export interface Line {
  signal: MemorySignal;
  belowMiB: number;
}

export function describeLine(l: Line): string {
  return `${l.signal} < ${l.belowMiB} MiB`;
}

/**
 * A signal's value in MiB: MemAvailable (earlyoom, nohang), the kubelet's memory.available on
 * cgroup v2 for the node (capacity - (usage - inactive_file) with usage = the root's anon + file,
 * as the hog reads it; a reading from before the hog read it falls back to MemFree +
 * Inactive(file), usage = MemTotal - MemFree; evictd and the kubelet), MemFree (oomd: usage =
 * MemTotal - MemFree).
 */
export function signalMiB(r: HogReading, s: MemorySignal): number {
  const kb = s === 'MemAvailable' ? r.availableKb : s === 'MemFree' ? r.freeKb : (r.kubeletKb ?? r.freeKb + r.inactiveFileKb);
  return kb / KiB_PER_MiB;
}

export interface Step {
  ns: bigint;
  mib: number;
  reading?: HogReading;
}

/** The hog's pace: it begins MiB k+1 at start + k * stepNs, or at once if it is behind. */
export interface HogSchedule {
  startNs: bigint;
  stepNs: bigint;
}

export interface Crossing {
  /** the start of the MiB in which the signal fell below the line */
  touchNs: bigint;
  /** when the hog read it below the line (null when inferred) */
  seenNs: bigint | null;
  mib: number;
  /**
   * true when the hog was killed while touching that MiB, before it could read: the last
   * reading was within INFER_MARGIN_MIB above the line, so that MiB is where the line was crossed
   */
  inferred: boolean;
}

/**
 * How far above the line the last reading may be for the MiB in progress at the kill to count as
 * the crossing: one MiB touched, plus a MiB of drift (per-CPU vmstat counters fold into the
 * global ones /proc/meminfo prints in batches, and a fault can take more than the hog asked).
 */
export const INFER_MARGIN_MIB = 2;

export function crossingOf(steps: readonly Step[], line: Line, schedule: HogSchedule | null, killNs: bigint | null): Crossing | null {
  let last: Step | null = null;
  for (const st of steps) {
    if (!st.reading) continue;
    if (signalMiB(st.reading, line.signal) < line.belowMiB) return { touchNs: st.reading.touchNs, seenNs: st.ns, mib: st.mib, inferred: false };
    last = st;
  }
  if (killNs === null || last === null || schedule === null) return null;
  if (signalMiB(last.reading!, line.signal) - line.belowMiB > INFER_MARGIN_MIB) return null;
  // After a whole MiB the hog waits for the next one's due time; after a chunk of a MiB
  // (HOG_METER_FINE) it touches the next chunk at once.
  const whole = Number.isInteger(last.mib);
  const due = whole ? schedule.startNs + BigInt(last.mib) * schedule.stepNs : last.ns;
  const next = due > last.ns ? due : last.ns;
  return killNs >= next ? { touchNs: next, seenNs: null, mib: whole ? last.mib + 1 : Math.ceil(last.mib), inferred: true } : null;
}

export interface Kill {
  ns: bigint;
  sig: number;
  /** the sending task, "comm-pid" */
  sender: string;
  /** signal_generate's result: 0 delivered, 1 ignored, 2 already pending, ... */
  res: number;
}

/** The first SIGKILL or SIGTERM sent to the hog's process. */
export function firstKill(events: readonly TraceEvent[], hogPid: number): Kill | null {
  for (const e of events) {
    if (e.event !== 'signal_generate' || Number(e.fields.pid) !== hogPid) continue;
    const sig = Number(e.fields.sig);
    if (sig !== 9 && sig !== 15) continue;
    return { ns: e.ns, sig, sender: `${e.comm}-${e.pid}`, res: Number(e.fields.res ?? 0) };
  }
  return null;
}

/**
 * Who sent the kill, as a row names it: the OOM killer runs in whichever task's allocation failed
 * (containerd, a shim, the hog), so a kill followed by mark_victim for the hog in the same task is
 * "kernel OOM killer", not that task.
 */
export function senderOf(events: readonly TraceEvent[], kill: Kill, hogPid: number): string {
  const name = kill.sender.replace(/-\d+$/, '');
  const pid = Number(/-(\d+)$/.exec(kill.sender)?.[1]);
  const victim = events.some((e) => e.event === 'mark_victim' && Number(e.fields.pid) === hogPid && e.pid === pid && e.ns >= kill.ns);
  return victim ? `kernel OOM killer (in ${name})` : name;
}

/** Whether the kernel's OOM killer chose the hog (oom/mark_victim follows its SIGKILL). */
export function oomVictim(events: readonly TraceEvent[], hogPid: number): boolean {
  return events.some((e) => e.event === 'mark_victim' && Number(e.fields.pid) === hogPid);
}

/** When the hog's process exited. */
export function exitNs(events: readonly TraceEvent[], hogPid: number): bigint | null {
  return events.find((e) => e.event === 'sched_process_exit' && Number(e.fields.pid) === hogPid)?.ns ?? null;
}

/**
 * Reaction, ms, from a line: the kill's send time - the crossing. -Infinity when the kill came
 * before the hog's readings reached the line (the contender acted above it, by an unknown time);
 * +Infinity when the contender did not stop the hog (the kernel's OOM killer did, or nobody);
 * null when it does not apply (the line was never reached and nobody killed).
 */
export function reactionMs(crossing: Crossing | null, kill: Kill | null, stoppedByContender: boolean): number | null {
  if (!stoppedByContender) return crossing || kill ? Infinity : null;
  if (!kill) return null;
  if (!crossing || kill.ns < crossing.touchNs) return -Infinity;
  return Number(kill.ns - crossing.touchNs) / 1e6;
}

/** The hog's last reading at or before `ns`: the memory left when the kill was sent. */
export function readingAt(steps: readonly Step[], ns: bigint): HogReading | null {
  let r: HogReading | null = null;
  for (const st of steps) {
    if (st.ns > ns) break;
    if (st.reading) r = st.reading;
  }
  return r;
}

/**
 * The rate the hog reached, MiB/s, over the last `windowMiB` before `endMib` (the MiB where the
 * line was crossed, or the last before the kill): what the contender faced, not what was asked.
 */
export function reachedRate(steps: readonly Step[], endMib: number, windowMiB = 64): number | null {
  const end = steps.find((s) => s.mib === endMib) ?? [...steps].reverse().find((s) => s.mib < endMib);
  if (!end) return null;
  const start = steps.find((s) => s.mib >= end.mib - windowMiB);
  if (!start || start.mib >= end.mib || end.ns <= start.ns) return null;
  return ((end.mib - start.mib) * 1e9) / Number(end.ns - start.ns);
}
