import fs from 'node:fs';
import path from 'node:path';
import { memoryCgroupKind, readKubeletMemory, usageFile, type MemoryCgroupKind } from './kubelet-memory';

/**
 * What a memory line compares. 'usage': the cgroup's counter (memory.current, v1
 * memory.usage_in_bytes; the v2 root: memory.stat anon + file). 'working-set': the number the
 * kubelet's memory signals come from, available = capacity - working set: usage - inactive_file
 * (kubelet-memory.ts). A working-set line sits at capacity - threshold and does not drift with
 * page cache, as a usage line does.
 */
export type LineMeasure = 'usage' | 'working-set';

/** Reads one cgroup's line measure: the file it comes from (for events) and the reader. */
export interface MeasureReader {
  source: string;
  read: () => number;
}

/**
 * The reader of `measure` on a memory cgroup dir: v1 (memory.usage_in_bytes, hierarchical
 * total_inactive_file), v2 (memory.current, inactive_file) or the v2 root (memory.stat). Reading
 * the working set reads memory.stat, which also makes the kernel fold its statistics.
 */
export function measureReader(cgroupDir: string, measure: LineMeasure): MeasureReader {
  const kind: MemoryCgroupKind = memoryCgroupKind(cgroupDir) ?? 'v2';
  const file = usageFile(kind);
  // A cgroup's usage is its usage file alone; everything else needs memory.stat.
  if (measure === 'usage' && file !== null) {
    const source = path.join(cgroupDir, file);
    return { source, read: () => Number(fs.readFileSync(source, 'utf8')) };
  }
  const read = (): number => {
    const m = readKubeletMemory(cgroupDir, kind);
    if (m === null) throw Object.assign(new Error(`${cgroupDir}: memory cgroup gone`), { code: 'ENOENT' });
    return measure === 'usage' ? m.usageBytes : m.workingSetBytes;
  };
  return { source: path.join(cgroupDir, file ?? 'memory.stat'), read };
}
