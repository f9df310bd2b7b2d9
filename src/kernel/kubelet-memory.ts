import fs from 'node:fs';
import path from 'node:path';

// The kubelet's memory numbers of one memory cgroup, in one place: the pass (src/node/memory.ts),
// the adaptive poller and the tripwire's side reads (working-set.ts), the tripwire's root
// calibration and `evictd record` all take them from here, and native/fresh_signal.cc computes
// the same at a standing order's kill, less the usage memory.stat has not folded in yet
// (fresh_signal.h). The kubelet's eviction manager reads them from cAdvisor:
//   working set = usage - inactive_file (never below 0), available = capacity - working set;
//   v1:           usage = memory.usage_in_bytes,  inactive_file = memory.stat total_inactive_file
//   v2:           usage = memory.current,         inactive_file = memory.stat inactive_file
//   the v2 root:  usage = memory.stat anon + file (it has no memory.current: runc /
//                 opencontainers-cgroups rootStatsFromMeminfo since runc PR #3933; kubernetes
//                 #118916), inactive_file = memory.stat inactive_file.
// The v2 root's number leaves out kernel memory (slab, page tables, stacks), which MemTotal -
// MemFree counts: tens to hundreds of MiB on a node.

export type MemoryCgroupKind = 'v1' | 'v2' | 'v2-root';

export interface KubeletMemory {
  usageBytes: number;
  inactiveFileBytes: number;
  workingSetBytes: number;
}

/** The value of `key` in a memory.stat text ("key value" lines), or null. */
export function statValue(text: string, key: string): number | null {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * The kubelet's numbers from a memory.stat text and, but on the v2 root, the usage file's. A
 * missing key is 0 (cAdvisor's reading of an absent key); a usage that is no number is refused.
 */
export function kubeletMemory(kind: MemoryCgroupKind, statText: string, usageText?: string): KubeletMemory {
  let usage: number;
  if (kind === 'v2-root') {
    usage = (statValue(statText, 'anon') ?? 0) + (statValue(statText, 'file') ?? 0);
  } else {
    // Digits only: Number() would take "" as 0 and "0x10" as 16, neither of which the kernel writes.
    const text = (usageText ?? '').trim();
    usage = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(usage)) throw new Error(`memory usage is not a number of bytes: ${JSON.stringify(usageText)}`);
  }
  const inactive = statValue(statText, kind === 'v1' ? 'total_inactive_file' : 'inactive_file') ?? 0;
  return { usageBytes: usage, inactiveFileBytes: inactive, workingSetBytes: inactive < usage ? usage - inactive : 0 };
}

/** Which kind of memory cgroup `dir` is, by the usage file it has (null: no memory cgroup). */
export function memoryCgroupKind(dir: string): MemoryCgroupKind | null {
  if (fs.existsSync(path.join(dir, 'memory.usage_in_bytes'))) return 'v1';
  if (fs.existsSync(path.join(dir, 'memory.current'))) return 'v2';
  return fs.existsSync(path.join(dir, 'memory.stat')) ? 'v2-root' : null;
}

/** The usage file of a kind of memory cgroup (null on the v2 root: its usage is in memory.stat). */
export function usageFile(kind: MemoryCgroupKind): string | null {
  return kind === 'v1' ? 'memory.usage_in_bytes' : kind === 'v2' ? 'memory.current' : null;
}

/**
 * Reads the kubelet's numbers of `dir` now (null when its files are gone: a cgroup removed). The
 * usage is read before memory.stat: reading memory.stat folds the kernel's pending statistics.
 */
export function readKubeletMemory(dir: string, kind: MemoryCgroupKind): KubeletMemory | null {
  const file = usageFile(kind);
  try {
    const usageText = file === null ? undefined : fs.readFileSync(path.join(dir, file), 'utf8');
    return kubeletMemory(kind, fs.readFileSync(path.join(dir, 'memory.stat'), 'utf8'), usageText);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENODEV') return null;
    throw err;
  }
}

/** The v2 root's usage as the kubelet counts it (memory.stat anon + file). */
export function rootUsageBytes(rootDir = '/sys/fs/cgroup'): number {
  const m = readKubeletMemory(rootDir, 'v2-root');
  if (m === null) throw new Error(`${rootDir}/memory.stat: missing (not a cgroup v2 root with the memory controller)`);
  return m.usageBytes;
}

/** The v2 root's working set as the kubelet counts it (memory.stat anon + file - inactive_file). */
export function rootWorkingSetBytes(rootDir = '/sys/fs/cgroup'): number {
  const m = readKubeletMemory(rootDir, 'v2-root');
  if (m === null) throw new Error(`${rootDir}/memory.stat: missing (not a cgroup v2 root with the memory controller)`);
  return m.workingSetBytes;
}
