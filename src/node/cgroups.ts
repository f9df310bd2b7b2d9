/**
 * Where the cgroup hierarchies are on this machine, detected once at start from
 * /proc/self/mountinfo, and small readers for cgroup files.
 *
 * - v1: every controller on its own `cgroup` mount (memory at /sys/fs/cgroup/memory);
 * - v2: one `cgroup2` mount (usually /sys/fs/cgroup) with the memory controller enabled;
 * - hybrid: v1 controllers plus a controller-less `cgroup2` mount (systemd's
 *   /sys/fs/cgroup/unified), which still offers cgroup.kill, cgroup.events and memory.pressure.
 */
import fs from 'node:fs';
import path from 'node:path';

export type CgroupMode = 'v1' | 'v2' | 'hybrid';

export interface CgroupLayout {
  mode: CgroupMode;
  /** the mount of the hierarchy that has the memory controller */
  memoryMount: string;
  /** 1 when memory is a v1 controller, 2 when it is on cgroup2 */
  memoryVersion: 1 | 2;
  /** the cgroup2 mount (pure v2 or the hybrid unified mount), or null */
  unifiedMount: string | null;
  /** the v1 pids controller mount, or the cgroup2 mount when pids is there, or null */
  pidsMount: string | null;
}

interface Mount {
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    // "36 25 0:32 / /sys/fs/cgroup/memory rw,... shared:15 - cgroup cgroup rw,memory"
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const pre = line.slice(0, dash).split(' ');
    const post = line.slice(dash + 3).split(' ');
    const mountPoint = pre[4]?.replace(/\\040/g, ' ');
    if (!mountPoint || post.length < 3) continue;
    out.push({ mountPoint, fsType: post[0]!, superOptions: post[2]!.split(',') });
  }
  return out;
}

/** Every cgroup hierarchy mount (v1 controllers, named v1 hierarchies, cgroup2). */
export function allCgroupMounts(mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8')): string[] {
  return parseMountinfo(mountinfo)
    .filter((m) => m.fsType === 'cgroup' || m.fsType === 'cgroup2')
    .map((m) => m.mountPoint);
}

/** Detects the cgroup layout; throws when no memory controller is mounted. */
export function detectCgroups(mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8')): CgroupLayout {
  const mounts = parseMountinfo(mountinfo);
  const v1 = mounts.filter((m) => m.fsType === 'cgroup');
  const v2 = mounts.find((m) => m.fsType === 'cgroup2') ?? null;
  const v1Memory = v1.find((m) => m.superOptions.includes('memory'));
  const v1Pids = v1.find((m) => m.superOptions.includes('pids'));
  const v2Controllers = v2 ? readControllers(v2.mountPoint) : [];
  if (v1Memory) {
    return {
      mode: v2 ? 'hybrid' : 'v1',
      memoryMount: v1Memory.mountPoint,
      memoryVersion: 1,
      unifiedMount: v2?.mountPoint ?? null,
      pidsMount: v1Pids?.mountPoint ?? (v2Controllers.includes('pids') ? v2!.mountPoint : null),
    };
  }
  if (v2 && v2Controllers.includes('memory')) {
    return {
      mode: 'v2',
      memoryMount: v2.mountPoint,
      memoryVersion: 2,
      unifiedMount: v2.mountPoint,
      pidsMount: v2Controllers.includes('pids') ? v2.mountPoint : (v1Pids?.mountPoint ?? null),
    };
  }
  throw new Error('no cgroup memory controller is mounted (neither a v1 "memory" hierarchy nor cgroup2 with memory)');
}

function readControllers(mount: string): string[] {
  try {
    return fs.readFileSync(path.join(mount, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/** Joins a cgroup path (absolute inside the hierarchy, e.g. "/kubepods/burstable") to a mount. */
export function cgroupDir(mount: string, cgroupPath: string): string {
  const rel = cgroupPath.replace(/^\/+/, '');
  return rel ? path.join(mount, rel) : mount;
}

/** Reads a cgroup file; null when it (or its cgroup) is gone. Other errors propagate. */
export function readCgroupFile(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENODEV' || code === 'ESRCH') return null;
    throw err;
  }
}

/**
 * A kernel counter as cgroup files print it: unsigned decimal digits only. Number() alone would
 * take "" as 0, "-1" as negative, "0x10" as 16 and "1e3" as 1000: none of which the kernel writes.
 */
const UNSIGNED = /^\d+$/;

/**
 * A single-number cgroup file; "max" (v2 "no limit") gives Infinity; null when absent. Anything
 * but unsigned digits (a negative, a fraction, garbage) is refused with an error naming the file.
 */
export function readCgroupNumber(file: string): number | null {
  const text = readCgroupFile(file);
  if (text === null) return null;
  const t = text.trim();
  if (t === 'max') return Infinity;
  if (!UNSIGNED.test(t)) throw new Error(`${file}: unexpected content ${JSON.stringify(t.slice(0, 40))}`);
  return Number(t);
}

/**
 * Parses "key value" lines (memory.stat, memory.events, cgroup.events). A line whose value is
 * not an unsigned integer (negative, empty, garbage) is left out rather than guessed: callers
 * default a missing counter (to 0 or "not observed").
 */
export function parseKeyValues(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp <= 0) continue;
    const key = line.slice(0, sp);
    const value = line.slice(sp + 1).trim();
    if (UNSIGNED.test(value) && key !== '__proto__') out[key] = Number(value);
  }
  return out;
}

/** Visits a cgroup and its descendants, parents first; `visit` returning false skips a subtree. */
export function walkCgroups(dir: string, visit: (dir: string) => boolean | void): void {
  if (visit(dir) === false) return;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) walkCgroups(path.join(dir, e.name), visit);
}

/** The pids in a cgroup and all its descendants (v1 and v2 both list them in cgroup.procs). */
export function cgroupPids(dir: string): number[] {
  const pids: number[] = [];
  walkCgroups(dir, (d) => {
    const text = readCgroupFile(path.join(d, 'cgroup.procs'));
    if (text === null) return false; // gone: so are its children
    for (const l of text.split('\n')) if (l) pids.push(Number(l));
  });
  return pids;
}
