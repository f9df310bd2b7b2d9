/**
 * Disk usage of the pods' emptyDir volumes, read where the kubelet keeps them:
 * <kubelet root dir>/pods/<pod uid>/volumes/kubernetes.io~empty-dir/<volume name>.
 *
 * The kubelet measures a volume with du (bytes in allocated blocks, inodes, one filesystem:
 * pkg/volume/util/fs DiskUsage), in the background, at most every --volume-stats-agg-period.
 * This walks the tree the same way, asynchronously, so a volume with many files never holds up
 * the JS thread a pass runs on.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { VolumeUsage } from '../policy/types';

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

/**
 * du -x -s of `dir`: the allocated blocks (st_blocks x 512, so sparse files count what they
 * hold) and the inodes of every entry, the directory itself included, without crossing into
 * another filesystem. Null when `dir` does not exist. Entries that vanish during the walk are
 * skipped: a volume in use changes while it is measured.
 */
export async function diskUsage(dir: string): Promise<DiskUsage | null> {
  let top: fs.Stats;
  try {
    top = await fs.promises.lstat(dir);
  } catch {
    return null;
  }
  const total: DiskUsage = { bytes: top.blocks * 512, inodes: 1 };
  if (!top.isDirectory()) return total;
  // Hard links are counted once, as du does.
  const seen = new Set<string>();
  const pending = [dir];
  while (pending.length > 0) {
    const d = pending.pop()!;
    let names: string[];
    try {
      names = await fs.promises.readdir(d);
    } catch {
      continue;
    }
    for (const name of names) {
      const p = path.join(d, name);
      let st: fs.Stats;
      try {
        st = await fs.promises.lstat(p);
      } catch {
        continue;
      }
      if (st.dev !== top.dev) continue;
      if (st.nlink > 1 && !st.isDirectory()) {
        const key = `${st.dev}:${st.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      total.bytes += st.blocks * 512;
      total.inodes++;
      if (st.isDirectory()) pending.push(p);
    }
  }
  return total;
}

/** Where the kubelet mounts or creates a pod's emptyDir volume. */
export function emptyDirPath(kubeletRootDir: string, podUid: string, volume: string): string {
  return path.join(kubeletRootDir, 'pods', podUid, 'volumes', 'kubernetes.io~empty-dir', volume);
}

/** The usage of the named emptyDir volumes of one pod (a volume not on disk yet is left out). */
export async function readEmptyDirUsage(kubeletRootDir: string, podUid: string, volumes: readonly string[]): Promise<VolumeUsage[]> {
  const out: VolumeUsage[] = [];
  for (const name of volumes) {
    const u = await diskUsage(emptyDirPath(kubeletRootDir, podUid, name));
    if (u) out.push({ name, usedBytes: u.bytes, inodesUsed: u.inodes });
  }
  return out;
}
