/**
 * Memory of one cgroup, the way the kubelet computes memory.available:
 *   working set = usage - inactive_file (never below 0), available = capacity - working set.
 * v1 reads memory.usage_in_bytes and memory.stat total_inactive_file (hierarchical), v2 reads
 * memory.current and memory.stat inactive_file (already hierarchical). Capacity is the
 * cgroup's own limit when it has one below the machine's RAM, else MemTotal: that is how a
 * `--cgroup-root` with a limit becomes a small node on a big machine.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseKeyValues, readCgroupFile, readCgroupNumber } from './cgroups';

export interface MemoryReading {
  capacityBytes: number;
  usageBytes: number;
  inactiveFileBytes: number;
  workingSetBytes: number;
  availableBytes: number;
  /** true when capacity is this cgroup's limit (not the machine's RAM) */
  limited: boolean;
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
 * Reads a memory cgroup directory. `root` marks the hierarchy root, which on cgroup v2 has no
 * memory.current: there usage comes from /proc/meminfo (MemTotal - MemFree). Returns null when
 * the cgroup is gone (a pod cgroup removed mid-pass).
 */
export function readCgroupMemory(dir: string, version: 1 | 2, opts: { root?: boolean; machine?: MachineMemory } = {}): MemoryReading | null {
  const machine = opts.machine ?? readMeminfo();
  let usage: number | null;
  let inactive: number;
  let limit: number | null;
  if (version === 1) {
    usage = readCgroupNumber(path.join(dir, 'memory.usage_in_bytes'));
    const stat = readCgroupFile(path.join(dir, 'memory.stat'));
    if (usage === null || stat === null) return null;
    inactive = parseKeyValues(stat)['total_inactive_file'] ?? 0;
    limit = readCgroupNumber(path.join(dir, 'memory.limit_in_bytes'));
  } else if (opts.root) {
    usage = machine.totalBytes - machine.freeBytes;
    inactive = machine.inactiveFileBytes;
    limit = null;
  } else {
    usage = readCgroupNumber(path.join(dir, 'memory.current'));
    const stat = readCgroupFile(path.join(dir, 'memory.stat'));
    if (usage === null || stat === null) return null;
    inactive = parseKeyValues(stat)['inactive_file'] ?? 0;
    limit = readCgroupNumber(path.join(dir, 'memory.max'));
  }
  // v1 "no limit" is PAGE_COUNTER_MAX pages (9223372036854771712 on x86-64): anything at or
  // above the machine's RAM is no limit for our purpose.
  const limited = limit !== null && limit < machine.totalBytes;
  const capacity = limited ? limit! : machine.totalBytes;
  const workingSet = inactive < usage ? usage - inactive : 0;
  return {
    capacityBytes: capacity,
    usageBytes: usage,
    inactiveFileBytes: inactive,
    workingSetBytes: workingSet,
    availableBytes: capacity - workingSet,
    limited,
  };
}
