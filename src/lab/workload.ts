import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageRoot } from '../kernel/addon';

// Real workloads in real cgroups for the kernel tests and `evictd bench notify`: scratch cgroups
// that are always removed, and a client for native/tools/memhog.c.

/** The workload program of the kernel tests and `evictd bench notify` (native/tools/memhog.c, built beside the addon). */
export const memhogPath = path.join(packageRoot, 'build', 'Release', 'evictd-memhog');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let scratchSeq = 0;
const live = new Set<ScratchCgroup>();
let exitHook = false;

/**
 * Last resort at process exit (a test or bench that failed or was interrupted): kill what is
 * left in our own scratch cgroups and remove them, synchronously.
 */
function removeLeftovers(): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const cg of live) {
    for (let attempt = 0; attempt < 100 && fs.existsSync(cg.dir); attempt++) {
      for (const pid of cg.pids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      try {
        fs.rmdirSync(cg.dir);
      } catch {
        Atomics.wait(pause, 0, 0, 10);
      }
    }
  }
  live.clear();
}

/** A cgroup this process created and must remove (v1 memory controller or cgroup2). */
export class ScratchCgroup {
  private constructor(
    readonly dir: string,
    readonly version: 1 | 2,
  ) {}

  /** mkdir `<root>/evictd-<tag>-<pid>-<n>`; `root` is the v1 memory mount or the cgroup2 mount. */
  static create(root: string, tag: string, version: 1 | 2): ScratchCgroup {
    const dir = path.join(root, `evictd-${tag}-${process.pid}-${++scratchSeq}`);
    fs.mkdirSync(dir);
    const cg = new ScratchCgroup(dir, version);
    if (!exitHook) process.once('exit', removeLeftovers);
    exitHook = true;
    live.add(cg);
    return cg;
  }

  file(name: string): string {
    return path.join(this.dir, name);
  }

  write(name: string, value: string | number): void {
    fs.writeFileSync(this.file(name), String(value));
  }

  read(name: string): string {
    return fs.readFileSync(this.file(name), 'utf8');
  }

  addPid(pid: number): void {
    this.write('cgroup.procs', pid);
  }

  pids(): number[] {
    try {
      return this.read('cgroup.procs')
        .split('\n')
        .filter((l) => l !== '')
        .map(Number);
    } catch {
      return [];
    }
  }

  /** Kills what is left inside, waits until it is empty, and removes it. Idempotent. */
  async remove(): Promise<void> {
    await this.removeNow();
    live.delete(this);
  }

  private async removeNow(): Promise<void> {
    if (!fs.existsSync(this.dir)) return;
    for (let attempt = 0; attempt < 500; attempt++) {
      const pids = this.pids();
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      if (pids.length === 0) {
        try {
          fs.rmdirSync(this.dir);
          return;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') return;
          // EBUSY: a killed task still exiting; the kernel releases it shortly.
          if (code !== 'EBUSY') throw err;
        }
      }
      await sleep(10);
    }
    throw new Error(`could not remove ${this.dir}: still busy`);
  }
}

export interface AllocReply {
  startNs: bigint;
  endNs: bigint;
  /** When usage + touched bytes reached the threshold (0n: no crossing in this step). */
  crossNs: bigint;
}

/**
 * The allocating workload (`evictd-memhog serve`), one command at a time. The wrapper shell writes
 * its own pid to each cgroup's cgroup.procs before exec, so every page the workload touches is
 * charged there.
 */
export class Memhog {
  private buffer = '';
  private waiters: Array<(line: string) => void> = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      this.buffer += chunk;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        this.waiters.shift()?.(line);
      }
    });
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    this.exited.then(() => {
      for (const w of this.waiters.splice(0)) w('exited');
    });
  }

  /** Starts `memhog serve` inside every cgroup dir of `cgroupDirs`. */
  static async start(cgroupDirs: string[]): Promise<Memhog> {
    const hog = new Memhog(spawnInCgroups(cgroupDirs, [memhogPath, 'serve']));
    // A no-op round trip: once answered, the cgroup writes in the wrapper are done.
    await hog.command('free');
    return hog;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  command(line: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiters.push((reply) => (reply.startsWith('ok') ? resolve(reply) : reject(new Error(`memhog ${line}: ${reply}`))));
      this.child.stdin.write(line + '\n');
    });
  }

  /**
   * Maps and touches `bytes`; with a usage file and threshold, stamps the crossing moment; with
   * `rateBytesPerSec`, paces the touches to that ramp rate.
   */
  async alloc(bytes: number, usageFile?: string, thresholdBytes?: number, rateBytesPerSec?: number): Promise<AllocReply> {
    let extra = usageFile !== undefined && thresholdBytes !== undefined ? ` ${usageFile} ${thresholdBytes}` : '';
    if (extra !== '' && rateBytesPerSec !== undefined) extra += ` ${Math.round(rateBytesPerSec)}`;
    const [, start, end, cross] = (await this.command(`alloc ${bytes}${extra}`)).split(' ');
    return { startNs: BigInt(start), endNs: BigInt(end), crossNs: BigInt(cross) };
  }

  async free(): Promise<bigint> {
    return BigInt((await this.command('free')).split(' ')[1]);
  }

  /** Asks the workload to exit; resolves to its CLOCK_MONOTONIC stamp just before _exit. */
  async exit(): Promise<bigint> {
    return BigInt((await this.command('exit')).split(' ')[1]);
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

/** Runs argv inside the cgroups (the shell joins them, then execs): nothing is charged outside. */
export function spawnInCgroups(cgroupDirs: string[], argv: string[]): ChildProcessWithoutNullStreams {
  const joins = cgroupDirs.map((d) => `echo $$ > '${path.join(d, 'cgroup.procs')}'`).join(' && ');
  const script = `${joins || 'true'} && exec "$@"`;
  return spawn('/bin/sh', ['-c', script, 'sh', ...argv], { stdio: ['pipe', 'pipe', 'pipe'] });
}

/**
 * A file for page-cache thrash: written and synced once, reused while its size matches. It must
 * live on a disk filesystem (tmpfs pages are shmem and, without swap, cannot be reclaimed).
 */
export function thrashFile(dir: string, bytes: number): string {
  const file = path.join(dir, `evictd-thrash-${bytes}.bin`);
  try {
    if (fs.statSync(file).size === bytes) return file;
  } catch {
    // not there yet
  }
  const fd = fs.openSync(file, 'w');
  try {
    const chunk = Buffer.alloc(1 << 20, 0x5a);
    for (let off = 0; off < bytes; off += chunk.length) fs.writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - off));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

/**
 * A new directory on a disk-backed filesystem (the temporary directory unless that is in RAM,
 * then /var/tmp): files written there are page cache the kernel can reclaim, where a file on
 * tmpfs (a container's own root in the lab VM, whose root is an initramfs) is shmem it cannot.
 */
export function diskDir(prefix: string): string {
  const base = onRamFilesystem(os.tmpdir()) ? '/var/tmp' : os.tmpdir();
  return fs.mkdtempSync(path.join(base, prefix));
}

/** Whether `dir` is on tmpfs or ramfs (no use for page-cache thrash). */
export function onRamFilesystem(dir: string): boolean {
  const TMPFS_MAGIC = 0x01021994;
  const RAMFS_MAGIC = 0x858458f6;
  const type = fs.statfsSync(dir).type;
  return type === TMPFS_MAGIC || type === RAMFS_MAGIC;
}
