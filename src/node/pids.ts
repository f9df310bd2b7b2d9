/**
 * pid.available, as the kubelet computes it: the kernel's limit (pid_max, or threads-max when
 * lower) minus the number of running tasks. When the node is a cgroup (`--cgroup-root`) whose
 * pids controller has a pids.max, that limit and its pids.current take over: the node is the
 * cgroup.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PidStats } from '../policy/types';
import { readCgroupNumber } from './cgroups';

function readIntFile(file: string): number {
  const n = Number(fs.readFileSync(file, 'utf8').trim());
  if (!Number.isFinite(n)) throw new Error(`${file}: not a number`);
  return n;
}

/** Kernel-wide: min(pid_max, threads-max) and the task count from /proc/loadavg's "r/total". */
export function kernelPidStats(): PidStats {
  const pidMax = readIntFile('/proc/sys/kernel/pid_max');
  let threadsMax = Infinity;
  try {
    threadsMax = readIntFile('/proc/sys/kernel/threads-max');
  } catch {
    // absent in some containers: pid_max alone
  }
  // loadavg's 4th field is "running/total scheduling entities", the same count sysinfo(2) gives.
  const total = Number(/\s\d+\/(\d+)\s/.exec(fs.readFileSync('/proc/loadavg', 'utf8'))?.[1]);
  if (!Number.isFinite(total)) throw new Error('/proc/loadavg: no task count');
  return { maxPID: Math.min(pidMax, threadsMax), running: total };
}

/** pid stats of the node: the pids cgroup `dir` when it has a finite pids.max, else the kernel's. */
export function readPidStats(pidsDir: string | null): PidStats {
  const kernel = kernelPidStats();
  if (pidsDir) {
    const max = readCgroupNumber(path.join(pidsDir, 'pids.max'));
    const current = readCgroupNumber(path.join(pidsDir, 'pids.current'));
    if (max !== null && Number.isFinite(max) && current !== null) {
      return { maxPID: Math.min(max, kernel.maxPID), running: current };
    }
  }
  return kernel;
}
