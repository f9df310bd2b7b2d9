/**
 * KEP-5986's per-container signals, read from each container cgroup under a pod cgroup (cgroup
 * v2): memory.events `high` and `max` (cumulative counters) and memory.pressure `some avg10`
 * (percent). A container cgroup is named after its id: `<id>` (cgroupfs driver),
 * `cri-containerd-<id>.scope` (containerd, systemd driver), `crio-<id>.scope` (CRI-O); CRI-O's
 * `crio-conmon-<id>.scope` and anything else is no container. The sandbox's own cgroup (the
 * pause container) is one too: the caller keeps the ids the runtime lists as containers.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseCounters } from '../kernel/counters';
import { parseKeyValues } from './cgroups';

export interface ContainerPressureReading {
  containerId: string;
  /** the container cgroup's directory */
  dir: string;
  high: number;
  max: number;
  /** absent when the kernel has no PSI for the cgroup (psi=0, or before 4.20) */
  psiSomeAvg10?: number;
}

const CONTAINER_DIR = /^(?:cri-containerd-|crio-|docker-)?([0-9a-f]{64})(?:\.scope)?$/;

/** The container id a cgroup directory name stands for, or null. */
export function containerIdFromDirName(name: string): string | null {
  return CONTAINER_DIR.exec(name)?.[1] ?? null;
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // gone (the container ended mid-read) or no such file on this kernel
    if (code === 'ENOENT' || code === 'ENODEV' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') return null;
    throw err;
  }
}

/** Every container cgroup of the pod cgroup `podDir` (a directory in the cgroup2 mount). */
export function readContainerPressure(podDir: string): ContainerPressureReading[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(podDir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: ContainerPressureReading[] = [];
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const containerId = containerIdFromDirName(e.name);
    if (containerId === null) continue;
    const events = readText(path.join(podDir, e.name, 'memory.events'));
    if (events === null) continue;
    const ev = parseKeyValues(events);
    const reading: ContainerPressureReading = { containerId, dir: path.join(podDir, e.name), high: ev.high ?? 0, max: ev.max ?? 0 };
    const pressure = readText(path.join(podDir, e.name, 'memory.pressure'));
    const avg = pressure === null ? undefined : parseCounters(pressure).some_avg10;
    if (avg !== undefined) reading.psiSomeAvg10 = avg;
    out.push(reading);
  }
  return out;
}
