import fs from 'node:fs';
import path from 'node:path';
import { isCgroup2Root, machineUsageBytes, machineWorkingSetBytes } from './machine-usage';

/**
 * What a memory line compares. 'usage': the cgroup's counter (memory.current, v1
 * memory.usage_in_bytes; the v2 root: MemTotal - MemFree). 'working-set': the number the
 * kubelet's memory signals come from, available = capacity - working set: usage - inactive_file
 * for a cgroup, MemTotal - MemFree - Inactive(file) for the v2 root. A working-set line sits at
 * capacity - threshold and does not drift with page cache, as a usage line does.
 */
export type LineMeasure = 'usage' | 'working-set';

/** Reads one cgroup's line measure: the file it comes from (for events) and the reader. */
export interface MeasureReader {
  source: string;
  read: () => number;
}

/** usage - inactive_file (memory.stat; reading it also makes the kernel fold its statistics). */
function workingSet(usageFile: string, statFile: string, inactiveKey: string): number {
  const usage = Number(fs.readFileSync(usageFile, 'utf8'));
  const m = new RegExp(`^${inactiveKey} (\\d+)$`, 'm').exec(fs.readFileSync(statFile, 'utf8'));
  const inactive = m ? Number(m[1]) : 0;
  return inactive < usage ? usage - inactive : 0;
}

/**
 * The reader of `measure` on a memory cgroup dir: v1 (memory.usage_in_bytes, hierarchical
 * total_inactive_file), v2 (memory.current, inactive_file) or the v2 root (/proc/meminfo).
 */
export function measureReader(cgroupDir: string, measure: LineMeasure): MeasureReader {
  const stat = path.join(cgroupDir, 'memory.stat');
  const v1 = path.join(cgroupDir, 'memory.usage_in_bytes');
  if (fs.existsSync(v1)) {
    return { source: v1, read: measure === 'usage' ? () => Number(fs.readFileSync(v1, 'utf8')) : () => workingSet(v1, stat, 'total_inactive_file') };
  }
  const v2 = path.join(cgroupDir, 'memory.current');
  if (fs.existsSync(v2) || !isCgroup2Root(cgroupDir)) {
    return { source: v2, read: measure === 'usage' ? () => Number(fs.readFileSync(v2, 'utf8')) : () => workingSet(v2, stat, 'inactive_file') };
  }
  return { source: '/proc/meminfo', read: measure === 'usage' ? () => machineUsageBytes() : () => machineWorkingSetBytes() };
}
