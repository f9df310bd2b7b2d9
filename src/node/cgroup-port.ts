/**
 * The pod cgroups as the agent's actions touch them: read a file, write one, list the pids, read
 * the memory numbers, kill every process. A port, so that the actions and the pass run in unit
 * tests on a fake node (no root, no cgroupfs) while `hostCgroups` is the one the agent runs on.
 *
 * Directories are absolute paths in the memory hierarchy (`memoryDir(podPath)` turns a pod's
 * cgroup path into one); `kill` takes the pod's cgroup path, because it prefers the cgroup2
 * mount, which on a hybrid host is not the memory controller's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cgroupDir, cgroupPids, readCgroupFile, type CgroupLayout } from './cgroups';
import { readCgroupMemory, readMeminfo, type MachineMemory, type MemoryReading } from './memory';
import { reapCgroup } from '../kernel/reap';
import { SIGTERM_NUMBER, signalPending } from './signal-pending';

export interface KillResult {
  method: 'cgroup.kill' | 'signal' | 'none';
  /** pids signalled (signal method) */
  signalled: number;
}

export interface CgroupPort {
  readonly memoryVersion: 1 | 2;
  /** the pod's directory in the memory hierarchy */
  memoryDir(podPath: string): string;
  /** a cgroup file's text, or null when the cgroup (or the file) is gone */
  read(dir: string, file: string): string | null;
  /** writes a cgroup file; throws the errno error as fs does (ENOENT: the cgroup is gone) */
  write(dir: string, file: string, text: string): void;
  exists(dir: string): boolean;
  /** the pids of the cgroup and its descendants */
  pids(dir: string): number[];
  /**
   * Whether a process of the cgroup or its descendants has SIGTERM queued, not yet delivered
   * (a graceful stop's signal, sent by the runtime). Optional: a node that cannot tell.
   */
  sigtermPending?(dir: string): boolean;
  /** usage, inactive_file and working set of a memory cgroup; null when it is gone */
  memory(dir: string): MemoryReading | null;
  /** SIGKILL every process of the pod */
  kill(podPath: string): KillResult;
  /**
   * After kill(): the kernel reaps the dying tasks' memory at once (process_mrelease); resolves
   * with how many tasks were reaped, null where it cannot. Optional: a fake node has none.
   */
  reap?(podPath: string): Promise<{ tasks: number; reaped: number; errno: number } | null>;
  /**
   * The pod's directory where its cgroup.kill is: the cgroup2 mount (pure v2, or the hybrid
   * host's controller-less one, where runc creates the pod's cgroup too), else the memory one.
   */
  killDir(podPath: string): string;
}

/** The real cgroupfs of this host. */
export function hostCgroups(layout: Pick<CgroupLayout, 'memoryMount' | 'memoryVersion' | 'unifiedMount'>): CgroupPort {
  // A pod cgroup's reading takes only MemTotal from /proc/meminfo (is its limit below the
  // machine's RAM?), which does not change: read once, not on every 2 ms poll of a release wait.
  let machine: MachineMemory | undefined;
  return {
    memoryVersion: layout.memoryVersion,
    memoryDir: (podPath) => cgroupDir(layout.memoryMount, podPath),
    read: (dir, file) => readCgroupFile(path.join(dir, file)),
    write: (dir, file, text) => fs.writeFileSync(path.join(dir, file), text),
    exists: (dir) => fs.existsSync(dir),
    pids: (dir) => cgroupPids(dir),
    sigtermPending: (dir) => signalPending(cgroupPids(dir), SIGTERM_NUMBER),
    memory: (dir) => {
      try {
        return readCgroupMemory(dir, layout.memoryVersion, { machine: (machine ??= readMeminfo()) });
      } catch {
        return null;
      }
    },
    kill: (podPath) => killPod(layout.unifiedMount, layout.memoryMount, podPath),
    // Where kill() found the tasks (the cgroup2 directory, else the memory one): they are dying.
    reap: (podPath) => reapCgroup(cgroupDir(layout.unifiedMount ?? layout.memoryMount, podPath)),
    killDir: (podPath) => cgroupDir(layout.unifiedMount ?? layout.memoryMount, podPath),
  };
}

/**
 * cgroup.kill (Linux 5.14+) in the pod's cgroup2 directory is preferred: one write that kills
 * the whole subtree atomically (no fork race). On hybrid hosts runc creates the pod cgroup in
 * the controller-less cgroup2 mount too, so it is there as well. Otherwise SIGKILL by pid from
 * the memory cgroup's tree (processes forked during the walk may survive; the runtime's stop
 * follows anyway).
 */
function killPod(unifiedMount: string | null, memoryMount: string, podPath: string): KillResult {
  if (unifiedMount) {
    try {
      fs.writeFileSync(path.join(cgroupDir(unifiedMount, podPath), 'cgroup.kill'), '1');
      return { method: 'cgroup.kill', signalled: 0 };
    } catch (err) {
      // ENOENT: no such cgroup2 dir or a kernel before 5.14; fall through to signals.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  const pids = cgroupPids(cgroupDir(memoryMount, podPath));
  let signalled = 0;
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
      signalled++;
    } catch {
      // already gone
    }
  }
  return { method: pids.length ? 'signal' : 'none', signalled };
}
