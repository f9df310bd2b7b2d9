/**
 * The pod cgroups under the pod cgroup root (the kubelet's "kubepods"), and each pod's usage.
 * QoS comes from where the kubelet puts the pod:
 *   cgroupfs driver: kubepods/pod<uid> (Guaranteed), kubepods/burstable/pod<uid>,
 *                    kubepods/besteffort/pod<uid>
 *   systemd driver:  kubepods.slice/kubepods-pod<uid_>.slice,
 *                    kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
 *                    (dashes of the uid become underscores).
 */
import fs from 'node:fs';
import path from 'node:path';
import { cgroupDir, cgroupPids, readCgroupNumber } from './cgroups';
import { readCgroupMemory, type MachineMemory } from './memory';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

export interface PodCgroup {
  uid: string;
  qos: QosClass;
  /** the cgroup path inside the hierarchy, e.g. "/kubepods/burstable/pod1234" */
  path: string;
}

const POD_DIR = /^(?:pod|kubepods-(?:burstable-|besteffort-)?pod)([A-Za-z0-9_-]+?)(?:\.slice)?$/;

/** Parses one pod cgroup directory name: the uid, or null when it is not a pod cgroup. */
export function podUidFromDirName(name: string): string | null {
  const m = POD_DIR.exec(name);
  if (!m) return null;
  return name.endsWith('.slice') ? m[1]!.replace(/_/g, '-') : m[1]!;
}

/** QoS from a pod cgroup path (either driver's naming); Guaranteed when directly under the root. */
export function qosFromCgroupPath(cgroupPath: string): QosClass {
  const parts = cgroupPath.split('/');
  const parent = parts[parts.length - 2] ?? '';
  if (parent === 'burstable' || parent.endsWith('-burstable.slice')) return 'Burstable';
  if (parent === 'besteffort' || parent.endsWith('-besteffort.slice')) return 'BestEffort';
  return 'Guaranteed';
}

function subdirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Lists the pod cgroups under `podRoot` (a path inside the hierarchy at `mount`). */
export function listPodCgroups(mount: string, podRoot: string): PodCgroup[] {
  const out: PodCgroup[] = [];
  const rootDir = cgroupDir(mount, podRoot);
  const base = '/' + podRoot.replace(/^\/+|\/+$/g, '');
  const scan = (rel: string): void => {
    for (const name of subdirs(rel ? path.join(rootDir, rel) : rootDir)) {
      const uid = podUidFromDirName(name);
      const p = path.posix.join(base, rel, name);
      if (uid) out.push({ uid, qos: qosFromCgroupPath(p), path: p });
      else if (!rel && /(^|-)(burstable|besteffort)(\.slice)?$/.test(name)) scan(name);
    }
  };
  scan('');
  return out;
}

export interface PodCgroupUsage {
  memoryWorkingSetBytes: number;
  memoryUsageBytes: number;
  /** the pod's memory limit from its cgroup (the sum of its containers' limits), if any */
  memoryLimitBytes?: number;
  processes?: number;
}

/**
 * A pod's usage from its cgroups: memory from the memory hierarchy, processes from the pids
 * hierarchy (pids.current) when mounted, else a count of the pids in its cgroup tree. Null when the pod
 * cgroup is gone (the pod ended between listing and reading).
 */
export function readPodCgroupUsage(
  memoryMount: string,
  memoryVersion: 1 | 2,
  pidsMount: string | null,
  podPath: string,
  machine?: MachineMemory,
): PodCgroupUsage | null {
  const mem = readCgroupMemory(cgroupDir(memoryMount, podPath), memoryVersion, machine ? { machine } : {});
  if (!mem) return null;
  let processes: number | undefined;
  if (pidsMount) {
    const n = readCgroupNumber(path.join(cgroupDir(pidsMount, podPath), 'pids.current'));
    if (n !== null) processes = n;
  }
  if (processes === undefined) {
    // cgroup.procs lists one level only; containers are child cgroups of the pod cgroup.
    processes = cgroupPids(cgroupDir(memoryMount, podPath)).length;
  }
  const usage: PodCgroupUsage = { memoryWorkingSetBytes: mem.workingSetBytes, memoryUsageBytes: mem.usageBytes };
  if (mem.limited) usage.memoryLimitBytes = mem.capacityBytes;
  if (processes !== undefined) usage.processes = processes;
  return usage;
}
