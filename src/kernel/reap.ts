/**
 * After a pod is killed through its cgroup.kill: process_mrelease on each of its tasks
 * (native/reap.h), so that their memory comes back as the kill lands instead of when each dying
 * task has unmapped its own pages. The standing orders' threads reap after their own kills; a
 * kill written by a pass calls this. The kernel reaps only a task already sent SIGKILL, so a
 * live process is never touched.
 */
import { addon, nativeAvailable, type ReapCounts, type ReapResult } from './addon';

let enabled = true;

/**
 * Whether kills are followed by a reap (`evictd run --reap-killed`, on by default): the kill
 * threads' reaps and reapCgroup's, for the whole process.
 */
export function setReapAfterKill(on: boolean): void {
  enabled = on;
  if (nativeAvailable()) addon().setReapAfterKill?.(on);
}

/** Reaps the pod under `dir` (its cgroup2 directory); null where the addon cannot (not built, or a build without it) or reaping is off. */
export async function reapCgroup(dir: string): Promise<ReapResult | null> {
  if (!enabled || !nativeAvailable()) return null;
  const a = addon();
  return a.reapCgroup ? a.reapCgroup(dir) : null;
}

/** This process's reaps so far; zeros without the addon. */
export function reapCounts(): ReapCounts {
  const none = { pods: 0, tasks: 0, reaped: 0, failed: 0 };
  if (!nativeAvailable()) return none;
  return addon().reapCounts?.() ?? none;
}
