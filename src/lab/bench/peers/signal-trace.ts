/**
 * The kernel's own record of every kill in `bench protect --peers`: a private tracefs instance
 * with `signal/signal_generate` (SIGKILL and SIGTERM only), `oom/mark_victim` and
 * `sched/sched_process_exit` (the hog's), on `trace_clock=mono`, the clock the hog stamps its
 * readings with (CLOCK_MONOTONIC). Every contender's kill goes through signal_generate: a
 * kill(2) from earlyoom, nohang or oomd, evictd's write to `cgroup.kill` (the kernel sends
 * SIGKILL to each task: kernel/cgroup/cgroup.c, __cgroup_kill), runc's stop, and the kernel OOM
 * killer's SIGKILL (followed by mark_victim). The event records the sending task, so a row's kill
 * is known to be the contender's, not whoever else signalled the hog.
 *
 * A private instance (instances/<name>) leaves the global buffer, and anyone else's tracing in
 * the same VM, alone. The host this project runs on has no tracefs: the bench runs in the lab.
 */
import fs from 'node:fs';
import path from 'node:path';

export const TRACEFS = '/sys/kernel/tracing';

export interface TraceEvent {
  event: string;
  /** trace_clock=mono: CLOCK_MONOTONIC, to the microsecond the trace file prints */
  ns: bigint;
  /** the task the event happened in: for signal_generate, the sender */
  comm: string;
  pid: number;
  /** event fields by name (sig, comm, pid, res, ... as the kernel prints them) */
  fields: Record<string, string>;
}

/**
 * Parses the `trace` file: "<comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <event>: <fields>".
 * A task name may hold spaces and dashes, so the pid is the last "-<digits>" before the CPU.
 */
export function parseTrace(text: string): TraceEvent[] {
  const out: TraceEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^\s*(.*)-(\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[\d+\]\s+(?:\S+\s+)?(\d+)\.(\d+):\s+(\w+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, comm, pid, sec, frac, event, rest] = m;
    const ns = BigInt(sec!) * 1_000_000_000n + BigInt(frac!.padEnd(9, '0').slice(0, 9));
    out.push({ event: event!, ns, comm: comm!, pid: Number(pid), fields: parseFields(rest!) });
  }
  return out;
}

/**
 * "sig=9 errno=0 code=0 comm=my task pid=12 grp=1 res=0": a value runs to the next " key=", so a
 * task name with spaces stays whole.
 */
export function parseFields(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const keys = [...text.matchAll(/(?:^|\s)(\w+)=/g)];
  keys.forEach((k, i) => {
    const start = k.index! + k[0].length;
    const end = i + 1 < keys.length ? keys[i + 1]!.index! : text.length;
    fields[k[1]!] = text.slice(start, end).trim();
  });
  return fields;
}

/** Why this machine cannot time kills in the kernel, or null. */
export function tracefsMissing(root = TRACEFS): string | null {
  if (!fs.existsSync(path.join(root, 'instances')))
    return `no tracefs at ${root} (the lab VM mounts it; this bench times every kill from the kernel's signal_generate)`;
  for (const e of ['signal/signal_generate', 'sched/sched_process_exit']) if (!fs.existsSync(path.join(root, 'events', e))) return `tracefs has no ${e} event`;
  return null;
}

/** The events one trial needs, each with the filter that keeps the buffer small. */
const EVENTS: [string, string | null][] = [
  ['signal/signal_generate', 'sig == 9 || sig == 15'],
  ['sched/sched_process_exit', 'comm == "hog"'],
  // Not on every kernel; without it a kernel kill is still known from /proc/vmstat and memory.events.
  ['oom/mark_victim', null],
];

export class SignalTrace {
  private constructor(readonly dir: string) {}

  static open(name: string, root = TRACEFS): SignalTrace {
    const dir = path.join(root, 'instances', name);
    if (!fs.existsSync(dir)) fs.mkdirSync(dir);
    const t = new SignalTrace(dir);
    fs.writeFileSync(path.join(dir, 'trace_clock'), 'mono');
    for (const [event, filter] of EVENTS) {
      const d = path.join(dir, 'events', event);
      if (!fs.existsSync(d)) continue;
      if (filter) fs.writeFileSync(path.join(d, 'filter'), filter);
      fs.writeFileSync(path.join(d, 'enable'), '1');
    }
    fs.writeFileSync(path.join(dir, 'tracing_on'), '1');
    return t;
  }

  /** Empties the buffer (opening `trace` for writing with O_TRUNC clears it). */
  clear(): void {
    fs.writeFileSync(path.join(this.dir, 'trace'), '');
  }

  read(): TraceEvent[] {
    return parseTrace(fs.readFileSync(path.join(this.dir, 'trace'), 'utf8'));
  }

  close(): void {
    try {
      fs.writeFileSync(path.join(this.dir, 'tracing_on'), '0');
      for (const [event] of EVENTS) {
        const f = path.join(this.dir, 'events', event, 'enable');
        if (fs.existsSync(f)) fs.writeFileSync(f, '0');
      }
      fs.rmdirSync(this.dir);
    } catch {
      // the VM is thrown away after the run; a busy instance is harmless there
    }
  }
}
