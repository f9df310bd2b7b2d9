/**
 * Contenders as they run on a node: started once per cell and kept running, each in a cgroup of
 * its own under the bench's, frozen (cgroup.freeze) while another contender's trial runs. A
 * frozen daemon does not run at all, so it neither competes for the CPU nor acts on the other's
 * hog, and it keeps everything it had: its warm caches, its locked pages, its armed lines.
 * (evictd's tripwire only notifies user space, so a frozen evictd kills nothing.) The freeze is
 * done when cgroup.events says `frozen 1`.
 */
import fs from 'node:fs';
import path from 'node:path';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The cgroup v2 directory this process is in (/proc/self/cgroup's "0::" line), under `mount`. */
export function ownCgroupDir(mount = '/sys/fs/cgroup', procSelfCgroup = '/proc/self/cgroup'): string {
  const rel = /^0::(.*)$/m.exec(fs.readFileSync(procSelfCgroup, 'utf8'))?.[1] ?? '/';
  return path.join(mount, rel);
}

/** Is the cgroup frozen, as cgroup.events says? */
export function isFrozen(dir: string): boolean {
  try {
    return /^frozen 1$/m.test(fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

export class ContenderGroups {
  private readonly dirs = new Map<string, string>();

  /** `parent`: where the groups go (a directory of their own under the bench's cgroup). */
  constructor(readonly parent: string) {
    fs.mkdirSync(parent, { recursive: true });
  }

  /** The contender's group (made on first use). */
  dir(name: string): string {
    let d = this.dirs.get(name);
    if (!d) {
      d = path.join(this.parent, name.replace(/[^A-Za-z0-9_.-]/g, '_'));
      fs.mkdirSync(d, { recursive: true });
      this.dirs.set(name, d);
    }
    return d;
  }

  /** Moves a process (all its threads) and the children it has already made into the contender's group. */
  place(name: string, pid: number): void {
    const procs = path.join(this.dir(name), 'cgroup.procs');
    const seen = new Set<number>();
    const move = (p: number): void => {
      if (seen.has(p)) return;
      seen.add(p);
      try {
        fs.writeFileSync(procs, String(p));
      } catch {
        return; // gone
      }
      for (const child of childrenOf(p)) move(child);
    };
    move(pid);
  }

  /** Freezes (true) or thaws (false) the contender's group and waits (up to `timeoutMs`) until cgroup.events agrees. */
  async freeze(name: string, frozen: boolean, timeoutMs = 10_000): Promise<void> {
    const d = this.dir(name);
    fs.writeFileSync(path.join(d, 'cgroup.freeze'), frozen ? '1' : '0');
    const until = Date.now() + timeoutMs;
    while (isFrozen(d) !== frozen) {
      if (Date.now() > until) throw new Error(`${name}: cgroup.events did not say frozen ${frozen ? 1 : 0} within ${timeoutMs} ms`);
      await sleep(5);
    }
  }

  /** Thaws and removes every group (their processes must have exited first). */
  close(): void {
    for (const d of this.dirs.values()) {
      try {
        fs.writeFileSync(path.join(d, 'cgroup.freeze'), '0');
        fs.rmdirSync(d);
      } catch {
        // still populated, or gone
      }
    }
    try {
      fs.rmdirSync(this.parent);
    } catch {
      // still populated
    }
  }
}

/** The pids a process has made, from /proc/PID/task/TID/children. */
function childrenOf(pid: number): number[] {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

const POLICIES = ['SCHED_OTHER', 'SCHED_FIFO', 'SCHED_RR', 'SCHED_BATCH', 'SCHED_ISO', 'SCHED_IDLE', 'SCHED_DEADLINE'];

/**
 * How a process's threads are scheduled, as the kernel has it (/proc/PID/task/TID/stat: nice,
 * rt_priority, policy), e.g. "SCHED_OTHER nice -20 (3 threads); SCHED_FIFO 10 (1 thread)":
 * what ran, not what was asked.
 */
export function schedulingOf(pid: number | undefined): string | null {
  if (!pid) return null;
  try {
    const counts = new Map<string, number>();
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      let stat: string;
      try {
        stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      } catch {
        continue;
      }
      // fields after the command's closing parenthesis, from field 3: nice is 19, rt_priority 40, policy 41
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const policy = POLICIES[Number(f[41 - 3])] ?? `policy ${f[41 - 3]}`;
      const key = policy === 'SCHED_FIFO' || policy === 'SCHED_RR' ? `${policy} ${f[40 - 3]}` : `${policy} nice ${f[19 - 3]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([k, n]) => `${k} (${n} thread${n === 1 ? '' : 's'})`).join('; ') || null;
  } catch {
    return null;
  }
}
