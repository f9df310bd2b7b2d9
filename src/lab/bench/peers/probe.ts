/**
 * The probe in the protected Guaranteed pod (hog.c, HOG_PROBE): what the node's other pods feel
 * while a runaway pod is stopped. It logs events only, on CLOCK_MONOTONIC (the kernel trace's
 * clock): gaps over 2 ms between its 1 ms iterations, MemAvailable going below / back above
 * the common line, and a heartbeat per second (the longest gap and the lowest MemAvailable in it).
 *
 * Per trial, the same for every contender:
 * - memory back: the first probe reading after the kill's send with MemAvailable at or above the
 *   common line. The probe logs only changes, so when it last read "below" before the send, that
 *   is its next "above"; when it never read below (the kill came before its reading fell under the
 *   line), the first reading after the send was already above: that is the send itself, or, if a
 *   gap spans the send, the gap's end (the probe did not read in between).
 * - worst stall: the longest gap overlapping [ramp start, memory back + 1 s]; a heartbeat in the
 *   window bounds it from below when no gap was logged (every gap then was 2 ms or less).
 */

export type ProbeEvent =
  | { kind: 'probe'; ns: bigint; lineKb: number }
  | { kind: 'gap'; ns: bigint; startNs: bigint }
  | { kind: 'below' | 'above'; ns: bigint; availableKb: number }
  | { kind: 'beat'; ns: bigint; maxGapNs: number; minAvailableKb: number };

/** The probe's events in a log (a container log holds the hog's ramp lines too: they are skipped). */
export function probeEvents(lines: readonly string[]): ProbeEvent[] {
  const out: ProbeEvent[] = [];
  for (const l of lines) {
    const m = /^(\d+) (probe|gap|below|above|beat) (-?\d+)(?: (-?\d+))?$/.exec(l.trim());
    if (!m) continue;
    const ns = BigInt(m[1]!);
    const a = m[3]!;
    const b = m[4];
    if (m[2] === 'probe') out.push({ kind: 'probe', ns, lineKb: Number(a) });
    else if (m[2] === 'gap') out.push({ kind: 'gap', ns, startNs: BigInt(a) });
    else if (m[2] === 'beat') {
      if (b !== undefined) out.push({ kind: 'beat', ns, maxGapNs: Number(a), minAvailableKb: Number(b) });
    } else out.push({ kind: m[2] as 'below' | 'above', ns, availableKb: Number(a) });
  }
  return out;
}

/** When the probe saw memory back (see above), or null when it never did after the send. */
export function memoryBackNs(events: readonly ProbeEvent[], killNs: bigint): bigint | null {
  let belowAtKill = false;
  for (const e of events) {
    if (e.ns > killNs) break;
    if (e.kind === 'below') belowAtKill = true;
    else if (e.kind === 'above') belowAtKill = false;
  }
  if (belowAtKill) return events.find((e) => e.kind === 'above' && e.ns > killNs)?.ns ?? null;
  // Never below at the send: the probe's next reading was above. No probe log at all after the
  // send (the probe itself gone) is no reading.
  if (!events.some((e) => e.ns > killNs)) return null;
  const spanning = events.find((e) => e.kind === 'gap' && e.startNs <= killNs && e.ns > killNs);
  return spanning ? spanning.ns : killNs;
}

/** The longest stall of the probe overlapping [fromNs, toNs], ms; null when nothing of the probe's covers it. */
export function worstStallMs(events: readonly ProbeEvent[], fromNs: bigint, toNs: bigint): number | null {
  let worst: number | null = null;
  for (const e of events) {
    let ms: number | null = null;
    if (e.kind === 'gap' && e.startNs <= toNs && e.ns >= fromNs) ms = Number(e.ns - e.startNs) / 1e6;
    // A heartbeat covers the second before it.
    else if (e.kind === 'beat' && e.ns >= fromNs && e.ns - 1_000_000_000n < toNs) ms = e.maxGapNs / 1e6;
    if (ms !== null && (worst === null || ms > worst)) worst = ms;
  }
  return worst;
}

/** The lowest MemAvailable the probe read in [fromNs, toNs], kB (its crossings and heartbeats), or null. */
export function probeMinAvailableKb(events: readonly ProbeEvent[], fromNs: bigint, toNs: bigint): number | null {
  let min: number | null = null;
  for (const e of events) {
    const kb =
      e.kind === 'below' || e.kind === 'above'
        ? e.ns >= fromNs && e.ns <= toNs
          ? e.availableKb
          : null
        : e.kind === 'beat' && e.ns >= fromNs && e.ns - 1_000_000_000n < toNs && e.minAvailableKb >= 0
          ? e.minAvailableKb
          : null;
    if (kb !== null && (min === null || kb < min)) min = kb;
  }
  return min;
}

/** The probe's events inside [fromNs, toNs], compact for a trial's JSON line: [ns, kind, a, b?]. */
export function compactProbe(events: readonly ProbeEvent[], fromNs: bigint, toNs: bigint): (number | string)[][] {
  return events
    .filter((e) => e.ns >= fromNs && e.ns <= toNs)
    .map((e) =>
      e.kind === 'gap'
        ? [Number(e.ns), 'gap', Number(e.startNs)]
        : e.kind === 'beat'
          ? [Number(e.ns), 'beat', e.maxGapNs, e.minAvailableKb]
          : e.kind === 'probe'
            ? [Number(e.ns), 'probe', e.lineKb]
            : [Number(e.ns), e.kind, e.availableKb],
    );
}

/** What one trial cost the node's other pods, from the probe's log, the hog's readings and the kernel's trace. */
export interface Felt {
  /** the probe's memory back (see memoryBackNs) */
  memoryBackNs: bigint | null;
  /**
   * the headline: the common line's crossing (the hog's reading) -> memory back, ms; -Infinity
   * when the kill came before the hog's readings reached the common line, +Infinity when the
   * contender did not stop the hog (reaction.ts's convention), null when neither applies or the
   * probe has no reading after the send
   */
  commonToBackMs: number | null;
  /** the same to the hog's exit (sched_process_exit) */
  commonToExitMs: number | null;
  worstStallMs: number | null;
  /** the lowest MemAvailable of the trial, MiB: the hog's readings and the probe's */
  minAvailableMiB: number | null;
}

export interface FeltInput {
  events: readonly ProbeEvent[];
  /** the hog's MemAvailable readings, kB, with their ns */
  readings: readonly { ns: bigint; availableKb: number }[];
  rampStartNs: bigint | null;
  /** the common line's crossing (its touch start), the first kill's send, the hog's exit */
  commonNs: bigint | null;
  killNs: bigint | null;
  exitNs: bigint | null;
  stoppedByContender: boolean;
}

function fromLine(commonNs: bigint | null, killNs: bigint | null, endNs: bigint | null, stopped: boolean): number | null {
  if (!stopped) return commonNs !== null || killNs !== null ? Infinity : null;
  if (killNs === null) return null;
  if (commonNs === null || killNs < commonNs) return -Infinity;
  return endNs === null ? null : Number(endNs - commonNs) / 1e6;
}

export function felt(i: FeltInput): Felt {
  const back = i.killNs === null ? null : memoryBackNs(i.events, i.killNs);
  const lastNs = i.readings[i.readings.length - 1]?.ns ?? null;
  const from = i.rampStartNs ?? i.readings[0]?.ns ?? null;
  const end = back ?? i.exitNs ?? i.killNs ?? lastNs;
  const to = end === null ? null : end + 1_000_000_000n;
  const hogMin = i.readings.reduce<number | null>((m, r) => (m === null || r.availableKb < m ? r.availableKb : m), null);
  const probeMin = from !== null && to !== null ? probeMinAvailableKb(i.events, from, to) : null;
  const mins = [hogMin, probeMin].filter((x): x is number => x !== null);
  return {
    memoryBackNs: back,
    commonToBackMs: fromLine(i.commonNs, i.killNs, back, i.stoppedByContender),
    commonToExitMs: fromLine(i.commonNs, i.killNs, i.exitNs, i.stoppedByContender),
    worstStallMs: from !== null && to !== null ? worstStallMs(i.events, from, to) : null,
    minAvailableMiB: mins.length ? Math.round((Math.min(...mins) / 1024) * 10) / 10 : null,
  };
}
