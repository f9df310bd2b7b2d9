import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The kubelet's memory numbers of one memory cgroup, in one place: the pass (src/node/memory.ts),
// the adaptive poller and the tripwire's side reads (working-set.ts), the tripwire's root
// calibration and `evictd record` all take them from here, and native/fresh_signal.cc computes
// the same at a standing order's kill. The kubelet's eviction manager reads them from cAdvisor:
//   working set = usage - inactive_file (never below 0), available = capacity - working set;
//   v1:           usage = memory.usage_in_bytes,  inactive_file = memory.stat total_inactive_file
//   v2:           usage = memory.current,         inactive_file = memory.stat inactive_file
//   the v2 root:  usage = memory.stat anon + file (it has no memory.current: runc /
//                 opencontainers-cgroups rootStatsFromMeminfo since runc PR #3933; kubernetes
//                 #118916), inactive_file = memory.stat inactive_file.
// The v2 root's number leaves out kernel memory (slab, page tables, stacks), which MemTotal -
// MemFree counts: tens to hundreds of MiB on a node.
//
// memory.stat may lag the usage file: the kernel folds its per-CPU statistics on a read only
// when it judges enough changed, and not while another fold runs (native/fresh_signal.h says
// what was seen). `unlistedBytes` is the usage that the statistics cannot account for: the usage
// less every LRU list and the kernel's own memory (v1 memory.kmem.usage_in_bytes; v2 memory.stat
// kernel, or its parts, and sock). Folded, it is the per-CPU charge stock and LRU batches, within
// the kernel's own slack (foldSlackBytes); behind, it holds what came since, page cache included.
// The node's signals count what goes beyond the slack as inactive page cache (src/node/memory.ts),
// as the order thread does at a kill.

export type MemoryCgroupKind = 'v1' | 'v2' | 'v2-root';

export interface KubeletMemory {
  usageBytes: number;
  inactiveFileBytes: number;
  workingSetBytes: number;
  /**
   * the usage memory.stat does not account for yet (0 on the v2 root, whose usage is memory.stat's
   * own); given when asked for (on v1 it costs a read of the kernel memory counter)
   */
  unlistedBytes?: number;
}

const LISTS = ['inactive_anon', 'active_anon', 'inactive_file', 'active_file', 'unevictable'];
/** The parts of v2's "kernel" key, for kernels without it. */
const KERNEL_PARTS = ['slab', 'kernel_stack', 'pagetables', 'sec_pagetables', 'percpu', 'vmalloc'];

/**
 * How far the statistics may lag the usage and still count as folded: 512 KiB per online CPU,
 * what the kernel lets them lag by design (64 pages per CPU in the charge stock, and as many
 * unfolded updates before a read folds). native/fresh_signal.cc uses the same.
 */
export function foldSlackBytes(cpus = os.cpus().length): number {
  return Math.max(1, cpus) * 512 * 1024;
}

/** The usage of a v1 or v2 cgroup that memory.stat does not account for (see above), bytes. */
export function unlistedBytes(kind: 'v1' | 'v2', statText: string, usageBytes: number, kmemBytes = 0): number {
  const sum = (keys: string[]) => keys.reduce((n, k) => n + (statValue(statText, k) ?? 0), 0);
  const lists = sum(kind === 'v1' ? LISTS.map((k) => `total_${k}`) : LISTS);
  const kernel = kind === 'v1' ? kmemBytes : (statValue(statText, 'kernel') ?? sum(KERNEL_PARTS)) + (statValue(statText, 'sock') ?? 0);
  return Math.max(0, usageBytes - lists - kernel);
}

/** The value of `key` in a memory.stat text ("key value" lines), or null. */
export function statValue(text: string, key: string): number | null {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * The kubelet's numbers from a memory.stat text and, but on the v2 root, the usage file's. A
 * missing key is 0 (cAdvisor's reading of an absent key); a usage that is no number is refused.
 * With `unlisted` the unlisted usage too (`kmemText`: v1's memory.kmem.usage_in_bytes, absent 0).
 */
export function kubeletMemory(kind: MemoryCgroupKind, statText: string, usageText?: string, unlisted?: { kmemText?: string }): KubeletMemory {
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
  const m: KubeletMemory = { usageBytes: usage, inactiveFileBytes: inactive, workingSetBytes: inactive < usage ? usage - inactive : 0 };
  if (unlisted) {
    const kmem = Number((unlisted.kmemText ?? '').trim());
    m.unlistedBytes = kind === 'v2-root' ? 0 : unlistedBytes(kind, statText, usage, Number.isSafeInteger(kmem) ? kmem : 0);
  }
  return m;
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
 * usage is read before memory.stat: reading memory.stat may fold the kernel's pending statistics.
 * With `unlisted`, the unlisted usage too: v1's kernel memory is read last, so what it charged
 * since the usage counts as unlisted.
 */
export function readKubeletMemory(dir: string, kind: MemoryCgroupKind, opts: { unlisted?: boolean } = {}): KubeletMemory | null {
  const file = usageFile(kind);
  try {
    const usageText = file === null ? undefined : fs.readFileSync(path.join(dir, file), 'utf8');
    const statText = fs.readFileSync(path.join(dir, 'memory.stat'), 'utf8');
    const unlisted = opts.unlisted ? { kmemText: kind === 'v1' ? readOptional(path.join(dir, 'memory.kmem.usage_in_bytes')) : undefined } : undefined;
    return kubeletMemory(kind, statText, usageText, unlisted);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENODEV') return null;
    throw err;
  }
}

/** A file's text, or undefined when it is absent (a kernel without it). */
function readOptional(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
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
