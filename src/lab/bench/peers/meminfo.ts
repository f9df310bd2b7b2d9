/** /proc/meminfo fields the peers decide on, in bytes (MemAvailable is not in src/node's reader). */
import fs from 'node:fs';

export interface Meminfo {
  total: number;
  free: number;
  available: number;
  inactiveFile: number;
}

/**
 * The kubelet's memory.available for the whole machine (capacity - working set, with usage =
 * MemTotal - MemFree): MemFree + Inactive(file). evictd's line is on this; earlyoom and nohang
 * read MemAvailable, which counts reclaimable memory differently.
 */
export function kubeletAvailable(m: Meminfo): number {
  return m.free + m.inactiveFile;
}

export function meminfo(text = fs.readFileSync('/proc/meminfo', 'utf8')): Meminfo {
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { total: kb('MemTotal'), free: kb('MemFree'), available: kb('MemAvailable'), inactiveFile: kb('Inactive\\(file\\)') };
}
