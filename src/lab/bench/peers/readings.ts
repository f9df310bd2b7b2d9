/**
 * What a trial of `bench protect --peers` reads besides the kernel's trace: /proc/meminfo's
 * fields, the probe's log, the hog's readings (compact), PSI, and a process's RSS and major faults.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ProtectedPods } from './pods';
import { probeEvents, type ProbeEvent } from './probe';
import type { Step } from './reaction';

/** The fields of /proc/meminfo that move memory.available against MemAvailable, MiB. */
export type NodeMeminfo = Record<(typeof NODE_FIELDS)[number], number>;
const NODE_FIELDS = [
  'MemFree',
  'MemAvailable',
  'Active(file)',
  'Inactive(file)',
  'Unevictable',
  'Mlocked',
  'AnonPages',
  'Shmem',
  'SReclaimable',
  'SUnreclaim',
  'KernelStack',
  'PageTables',
  'Percpu',
] as const;
export function nodeMeminfo(text: string): NodeMeminfo {
  const out = {} as NodeMeminfo;
  for (const key of NODE_FIELDS) {
    const m = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+) kB`, 'm').exec(text);
    out[key] = m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
  }
  return out;
}

/**
 * The probe's log (the Guaranteed pod's container log), read on from where the last read left
 * off: under emulation the probe logs a gap line on most of its iterations (over 100 lines a
 * second while a ramp runs), and a run is hours long. Events older than KEEP_NS before the
 * newest are dropped: a trial's window is shorter than a ramp's cap.
 */
const KEEP_NS = 600_000_000_000n;
const probeLogs = new Map<string, { offset: number; carry: string; events: ProbeEvent[] }>();

export function readProbeLog(pod: ProtectedPods['guaranteed']): ProbeEvent[] {
  const file = path.join(pod.logDirectory, 'app.log');
  const st = probeLogs.get(file) ?? { offset: 0, carry: '', events: [] };
  probeLogs.set(file, st);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return st.events;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size < st.offset) Object.assign(st, { offset: 0, carry: '', events: [] }); // rotated or recreated
    const buf = Buffer.alloc(size - st.offset);
    let got = 0;
    while (got < buf.length) {
      const n = fs.readSync(fd, buf, got, buf.length - got, st.offset + got);
      if (n <= 0) break;
      got += n;
    }
    st.offset += got;
    const lines = (st.carry + buf.subarray(0, got).toString()).split('\n');
    st.carry = lines.pop() ?? '';
    // "<RFC3339Nano> stdout F <message>", as NodeLab.podLog reads it
    st.events.push(...probeEvents(lines.flatMap((l) => /^\S+ (?:stdout|stderr) [FP] (.*)$/.exec(l)?.[1] ?? [])));
    const newest = st.events[st.events.length - 1]?.ns;
    if (newest !== undefined) st.events = st.events.filter((e) => e.ns >= newest - KEEP_NS);
  } finally {
    fs.closeSync(fd);
  }
  return st.events;
}

/** The hog's readings, compact for the trial's JSON line. */
export function compactReadings(steps: readonly Step[]): number[][] {
  return steps.map((s) =>
    s.reading ? [Number(s.ns), s.mib, s.reading.availableKb, s.reading.freeKb, s.reading.inactiveFileKb, s.reading.kubeletKb ?? -1] : [Number(s.ns), s.mib],
  );
}

/** /proc/pressure/memory's `some avg10`, or null without PSI. */
export function psiSomeAvg10(): number | null {
  try {
    const m = /^some avg10=([\d.]+)/m.exec(fs.readFileSync('/proc/pressure/memory', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** VmRSS of a process, MiB, or null. */
export function rssMiB(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Math.round(Number(kb) / 1024);
  } catch {
    return null;
  }
}

/** A process's major page faults so far (/proc/PID/stat field 12, all its threads), or null. */
export function majorFaults(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name may hold spaces: fields are counted after its closing parenthesis
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12 - 3]);
  } catch {
    return null;
  }
}
