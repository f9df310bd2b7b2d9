/**
 * Waits until an evicted pod's memory is really back: its working set (usage - inactive_file)
 * fell to `fraction` of `beforeBytes` (or below 1 MiB), or its cgroup is gone, or no process is
 * left and usage stopped falling (page cache charged to a dead pod is not freed by waiting);
 * gives up after `timeoutMs`.
 *
 * A sparse poll at the main thread's normal priority: the first reads come soon (2, 4, 8 ms),
 * then every 25 ms. Right after a kill the dying pod's exit (and the kill thread's reap) is what
 * brings the memory back; on a node of two CPUs a tight poll here would only compete with it.
 */
import type { CgroupPort } from '../../node/cgroup-port';
import { msBetween } from '../clock';
import type { Clock } from '../ports';

const FIRST_POLL_MS = 2;
const MAX_POLL_MS = 25;
/** Reads of an unchanged usage, with no process left, after which the rest is page cache. */
const STABLE_READS = 3;

export async function waitMemoryReleased(
  cgroups: CgroupPort,
  clock: Clock,
  dir: string,
  beforeBytes: number,
  timeoutMs: number,
  fraction = 0.1,
): Promise<{ released: boolean; ms: number }> {
  const target = Math.max(beforeBytes * fraction, 1024 * 1024);
  const t0 = clock.now();
  const elapsed = (): number => msBetween(t0, clock.now());
  let lastUsage = Infinity;
  let stable = 0;
  let delay = FIRST_POLL_MS;
  for (;;) {
    const m = cgroups.memory(dir);
    if (m === null || m.workingSetBytes <= target) return { released: true, ms: elapsed() };
    stable = m.usageBytes >= lastUsage ? stable + 1 : 0;
    lastUsage = m.usageBytes;
    if (stable >= STABLE_READS && cgroups.pids(dir).length === 0) return { released: true, ms: elapsed() };
    if (elapsed() >= timeoutMs) return { released: false, ms: elapsed() };
    await clock.sleep(Math.min(delay, Math.max(1, timeoutMs - elapsed())));
    delay = Math.min(delay * 2, MAX_POLL_MS);
  }
}
