/**
 * Memory of one cgroup, the way the kubelet computes memory.available:
 *   working set = usage - inactive_file (never below 0), available = capacity - working set.
 * v1 reads memory.usage_in_bytes and memory.stat total_inactive_file (hierarchical), v2 reads
 * memory.current and memory.stat inactive_file (already hierarchical), the v2 root memory.stat
 * anon + file and inactive_file (src/kernel/kubelet-memory.ts). Capacity is the
 * cgroup's own limit when it has one below the machine's RAM, else MemTotal: that is how a
 * `--cgroup-root` with a limit becomes a small node on a big machine.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readKubeletMemory, type MemoryCgroupKind } from '../kernel/kubelet-memory';
import { readCgroupNumber } from './cgroups';

export interface MemoryReading {
  capacityBytes: number;
  usageBytes: number;
  inactiveFileBytes: number;
  workingSetBytes: number;
  availableBytes: number;
  /** true when capacity is this cgroup's limit (not the machine's RAM) */
  limited: boolean;
  /** the node's: huge pages taken out of available (and so of capacity), policy/hugepages.ts */
  hugePagesBytes?: number;
}

export interface MachineMemory {
  totalBytes: number;
  freeBytes: number;
  inactiveFileBytes: number;
}

export function readMeminfo(text = fs.readFileSync('/proc/meminfo', 'utf8')): MachineMemory {
  const kb = (key: string): number => {
    const m = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+) kB`, 'm').exec(text);
    if (!m) throw new Error(`/proc/meminfo: no ${key} line`);
    return Number(m[1]) * 1024;
  };
  const totalBytes = kb('MemTotal');
  // Clamped, not refused: MemFree or Inactive(file) above MemTotal is no real reading (a
  // hand-made or racy file), and refusing would stop every pass. Clamping keeps usage and the
  // working set at 0 or above: the node looks idle rather than the agent dying.
  return { totalBytes, freeBytes: Math.min(kb('MemFree'), totalBytes), inactiveFileBytes: Math.min(kb('Inactive(file)'), totalBytes) };
}

/**
 * MemAvailable (bytes): the kernel's estimate of what can still be allocated without swapping,
 * what is left before its OOM killer; null when the kernel has no such line (before 3.14).
 */
export function readMemAvailable(text = fs.readFileSync('/proc/meminfo', 'utf8')): number | null {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(text);
  return m ? Number(m[1]) * 1024 : null;
}

/**
 * Reads a memory cgroup directory, with the kubelet's formula (src/kernel/kubelet-memory.ts).
 * `root` marks the hierarchy root, which on cgroup v2 has no memory.current: there usage is its
 * memory.stat anon + file, as runc's rootStatsFromMeminfo gives cAdvisor. Returns null when the
 * cgroup is gone (a pod cgroup removed mid-pass).
 */
export function readCgroupMemory(dir: string, version: 1 | 2, opts: { root?: boolean; machine?: MachineMemory } = {}): MemoryReading | null {
  const machine = opts.machine ?? readMeminfo();
  const kind: MemoryCgroupKind = version === 1 ? 'v1' : opts.root ? 'v2-root' : 'v2';
  const numbers = readKubeletMemory(dir, kind);
  if (numbers === null) return null;
  const limit =
    kind === 'v1' ? readCgroupNumber(path.join(dir, 'memory.limit_in_bytes')) : kind === 'v2' ? readCgroupNumber(path.join(dir, 'memory.max')) : null;
  // v1 "no limit" is PAGE_COUNTER_MAX pages (9223372036854771712 on x86-64): anything at or
  // above the machine's RAM is no limit for our purpose.
  const limited = limit !== null && limit < machine.totalBytes;
  const capacity = limited ? limit! : machine.totalBytes;
  return {
    capacityBytes: capacity,
    usageBytes: numbers.usageBytes,
    inactiveFileBytes: numbers.inactiveFileBytes,
    workingSetBytes: numbers.workingSetBytes,
    availableBytes: capacity - numbers.workingSetBytes,
    limited,
  };
}
