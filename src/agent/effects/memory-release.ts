/**
 * Waits until an evicted pod's memory is really back: its working set (usage - inactive_file)
 * fell to `fraction` of `beforeBytes` (or below 1 MiB), or its cgroup is gone, or no process is
 * left and usage stopped falling (page cache charged to a dead pod is not freed by waiting);
 * gives up after `timeoutMs`. Polls every 2 ms: this runs only right after an eviction, for at
 * most the bound.
 */
import type { CgroupPort } from '../../node/cgroup-port';
import { msBetween } from '../clock';
import type { Clock } from '../ports';

const POLL_MS = 2;

export async function waitMemoryReleased(cgroups: CgroupPort, clock: Clock, dir: string, beforeBytes: number, timeoutMs: number, fraction = 0.1): Promise<{ released: boolean; ms: number }> {
  const target = Math.max(beforeBytes * fraction, 1024 * 1024);
  const t0 = clock.now();
  const elapsed = (): number => msBetween(t0, clock.now());
  let lastUsage = Infinity;
  let stable = 0;
  for (;;) {
    const m = cgroups.memory(dir);
    if (m === null || m.workingSetBytes <= target) return { released: true, ms: elapsed() };
    stable = m.usageBytes >= lastUsage ? stable + 1 : 0;
    lastUsage = m.usageBytes;
    if (stable >= 5 && cgroups.pids(dir).length === 0) return { released: true, ms: elapsed() };
    if (elapsed() >= timeoutMs) return { released: false, ms: elapsed() };
    await clock.sleep(POLL_MS);
  }
}
