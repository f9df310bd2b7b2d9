/**
 * A cgroup's memory usage, and the memory limits above it: kubepods at the node's allocatable, a
 * QoS class, a systemd slice. Reaching any of them is an OOM kill in that cgroup, whatever the
 * node has left.
 */
import path from 'node:path';
import type { CgroupPort } from './cgroup-port';

/** Cgroups above a pod looked at: a real hierarchy has 3-6 (kubepods, QoS class, slices). */
const MAX_ANCESTORS = 16;

/** memory.current of `dir` (bytes), read now; null when it cannot be read or is not a number. */
export function memoryCurrent(cgroups: Pick<CgroupPort, 'read'>, dir: string): number | null {
  const text = cgroups.read(dir, 'memory.current')?.trim();
  return text && /^\d+$/.test(text) ? Number(text) : null;
}

/**
 * The cgroup above `dir` with the least left under its memory.max (memory.max minus
 * memory.current, read now), or null when none is limited. Up to the first directory without
 * memory.max: the hierarchy's root has none (cgroup v2).
 */
export function tightestMemoryLimitAbove(cgroups: Pick<CgroupPort, 'read'>, dir: string): { dir: string; leftBytes: number } | null {
  let tightest: { dir: string; leftBytes: number } | null = null;
  for (let d = path.dirname(dir), depth = 0; depth < MAX_ANCESTORS && d !== path.dirname(d); d = path.dirname(d), depth++) {
    const max = cgroups.read(d, 'memory.max')?.trim();
    if (max === undefined) break;
    const current = Number(cgroups.read(d, 'memory.current')?.trim());
    if (!/^\d+$/.test(max) || !Number.isFinite(current)) continue;
    const left = Number(max) - current;
    if (tightest === null || left < tightest.leftBytes) tightest = { dir: d, leftBytes: left };
  }
  return tightest;
}
