/**
 * /proc/meminfo fields the bench itself reads, in bytes (MemAvailable is not in src/node's
 * reader): the node's size and, between trials, whether memory came back. The contenders'
 * signals during a ramp are the hog's own readings (reaction.ts).
 */
import fs from 'node:fs';

export interface Meminfo {
  total: number;
  free: number;
  available: number;
  inactiveFile: number;
}

export function meminfo(text = fs.readFileSync('/proc/meminfo', 'utf8')): Meminfo {
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { total: kb('MemTotal'), free: kb('MemFree'), available: kb('MemAvailable'), inactiveFile: kb('Inactive\\(file\\)') };
}
