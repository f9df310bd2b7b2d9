/**
 * One contender of `evictd bench protect --peers`: something that should stop the runaway pod
 * before the kernel OOM killer does (evictd in its modes, the kubelet's loop, earlyoom, nohang,
 * oomd, systemd-oomd, or nobody). The bench starts it once per cell (rate), as it runs on a node,
 * warms it with a throwaway ramp, and freezes it while the other contenders' trials run
 * (freezer.ts); the trial's measurements come from the hog, the probe, the kernel and the
 * runtime, never from the contender's own log, so every row is measured the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { adoptChild } from '../../interrupt';
import type { NodeLab } from '../../node-lab';
import type { Line } from './reaction';

export interface ContenderContext {
  lab: NodeLab;
  /** CRI endpoint of the lab's containerd */
  endpoint: string;
  /** the free-memory line, MiB of MemAvailable (earlyoom's, nohang's and oomd's trigger) */
  lineMiB: number;
  /**
   * evictd's (and the kubelet's) memory.available line, MiB: the kubelet's signal is MemTotal -
   * (anon + file - inactive_file), which stays well above MemAvailable under pressure (page cache
   * the kernel cannot drop in time, and kernel memory it does not count), so it is calibrated on
   * this machine to cross when MemAvailable crosses lineMiB (calibrate.ts).
   */
  evictdLineMiB: number;
  /**
   * oomd's line on its own signal, MiB of MemFree (it counts the root's usage as
   * MemTotal - MemFree): lineMiB plus the MemFree - MemAvailable gap measured where MemAvailable
   * crossed lineMiB on a calibration ramp (near the end of memory the gap is not the idle one).
   */
  oomdFreeLineMiB: number;
  /** a directory for the contender's configuration files */
  workDir: string;
  /**
   * 'tight': each contender at its tightest documented scheduling setting (earlyoom -p, nohang
   * SCHED_RR as its unit documents, evictd --realtime-priority=10 as shipped); 'normal': every
   * one at normal scheduling. The kubelet's and the kernel's rows are the same in both.
   */
  scheduling: Scheduling;
  /** where the contender's log goes (kept after the run; default: workDir) */
  logDir?: string;
  /** what tells this start's log from the others' (e.g. the cell's rate), in its file name */
  logTag?: string;
}

export type Scheduling = 'tight' | 'normal';

/** The contender's log file for this start. */
export function logFileOf(ctx: ContenderContext, name: string): string {
  return path.join(ctx.logDir ?? ctx.workDir, `${name}${ctx.logTag ? `-${ctx.logTag}` : ''}.log`);
}

export interface RunningContender {
  /** the mechanism that actually ran, when the contender says so (e.g. evictd's notifier); read after the trials */
  readonly ran?: string | undefined;
  /** the contender's main process, for its memory (VmRSS) on the node */
  readonly pid?: number | undefined;
  /** false once the process has exited (a daemon that died mid-cell is started again) */
  alive?(): boolean;
  stop(): Promise<void>;
}

export interface Contender {
  name: string;
  /** how the stop reaches the pod: through the runtime (Kubernetes sees an eviction) or a bare kill */
  stops: 'CRI' | 'bare kill' | 'kernel';
  /** why it cannot run here, or null */
  missing(ctx: ContenderContext): string | null;
  /** the configuration used and why it is equivalent to evictd's line, printed beside the row */
  config(ctx: ContenderContext): string;
  /** the line this contender itself watches, on its own signal: its reaction is measured from it */
  ownLine(ctx: ContenderContext): Line;
  start(ctx: ContenderContext): Promise<RunningContender>;
}

/** Is this executable on PATH (or at this absolute path)? */
export function which(cmd: string): string | null {
  // As a shell finds a command: a file there that cannot be executed is not one.
  const runnable = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (cmd.startsWith('/')) return runnable(cmd) ? cmd : null;
  for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':')) {
    const p = path.join(dir, cmd);
    if (runnable(p)) return p;
  }
  return null;
}

/**
 * oom_score_adj of a process. The bench shields itself (the harness must outlive the trial),
 * and children inherit that value: every daemon gets the kubelet's and containerd's -999, so no
 * contender is a victim, and pods get their QoS class's value (see pods.ts).
 */
export function setOomScoreAdj(pid: number, adj: number): void {
  try {
    fs.writeFileSync(`/proc/${pid}/oom_score_adj`, String(adj));
  } catch {
    // the process is gone, or (without CAP_SYS_RESOURCE) the value may not be lowered
  }
}

/**
 * A peer daemon as a child process: its output goes to a log file, start resolves when a line
 * matches `ready` (or after `readyTimeoutMs` if it prints nothing we recognise), stop sends
 * SIGTERM, then SIGKILL. Only this child is signalled, by its pid.
 */
/** A contender that cannot be run here at all (its program cannot be executed): not a failed start. */
export class ContenderUnavailable extends Error {}

export async function startDaemon(
  ctx: ContenderContext,
  name: string,
  cmd: string,
  args: string[],
  ready: RegExp,
  readyTimeoutMs = 20_000,
): Promise<RunningContender> {
  const logFile = logFileOf(ctx, name);
  const log = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  adoptChild(child);
  if (child.pid) setOomScoreAdj(child.pid, -999);
  let seen = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let timer: NodeJS.Timeout | undefined;
  // The program could not be executed (absent, not executable): an 'error' event and no 'exit'.
  let spawnError: Error | null = null;
  const isReady = new Promise<boolean>((resolve) => {
    child.once('error', (err) => {
      spawnError = err;
      resolve(false);
    });
    const on = (d: Buffer): void => {
      fs.writeSync(log, d);
      seen += d.toString();
      if (ready.test(seen)) resolve(true);
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    timer = setTimeout(() => resolve(false), readyTimeoutMs);
    void exited.then(() => resolve(false));
  });
  await isReady;
  clearTimeout(timer);
  if (spawnError !== null) {
    fs.closeSync(log);
    throw new ContenderUnavailable(`${name} could not be run: ${(spawnError as Error).message}`);
  }
  if (child.exitCode !== null || child.signalCode !== null) {
    fs.closeSync(log);
    throw new Error(`${name} exited at start: ${seen.trim().split('\n').slice(-3).join(' | ')}`);
  }
  return {
    pid: child.pid,
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      fs.closeSync(log);
    },
  };
}
