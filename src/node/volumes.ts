/**
 * Disk usage of the pods' emptyDir volumes, read where the kubelet keeps them:
 * <kubelet root dir>/pods/<pod uid>/volumes/kubernetes.io~empty-dir/<volume name>.
 *
 * The kubelet measures a volume with du (bytes in allocated blocks, inodes, one filesystem:
 * pkg/volume/util/fs DiskUsage), in the background, at most every --volume-stats-agg-period.
 * This walks the tree the same way, in slices that yield to the event loop between them, so a
 * volume with many files never holds up the JS thread a pass runs on for more than a slice, and
 * within bounds, since the tenant decides what is in it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { VolumeUsage } from '../policy/types';

export interface DiskUsage {
  bytes: number;
  inodes: number;
  /**
   * Why the walk stopped short, when it did: what it counted is then a lower bound (see
   * WalkBounds). Acting on a lower bound can be late, never wrong: a volume found over its
   * limit is over it.
   */
  partial?: 'entries' | 'time' | 'depth' | 'links';
}

/**
 * What one volume's walk may cost. A pod writes its emptyDir, so what the walk meets is the
 * tenant's choice: the old walk read each directory whole and kept every hard-linked inode as a
 * string, and 200,000 files with 200,000 hard links took the agent from 39 to 147 MiB.
 * Now one directory is read 64 entries at a time, one open directory per level of depth, and
 * hard-linked inodes are kept as numbers, at most `linkedInodes` of them.
 */
export interface WalkBounds {
  /** entries looked at (each an lstat) */
  entries: number;
  /** time of one volume's walk, ms (monotonic: a clock step neither ends nor prolongs it) */
  timeMs: number;
  /** nested directories open at once */
  depth: number;
  /** distinct hard-linked inodes remembered, so that a link is not counted twice */
  linkedInodes: number;
}

export const DEFAULT_WALK_BOUNDS: WalkBounds = { entries: 1_000_000, timeMs: 20_000, depth: 128, linkedInodes: 262_144 };

/** The directory stream's read size: what one read holds in memory, whatever the directory's length. */
const DIR_BUFFER = 64;
/** Entries looked at between two yields to the event loop (about a millisecond of lstat). */
const SLICE = 256;

function closeQuietly(d: fs.Dir): void {
  try {
    d.closeSync();
  } catch {
    // closed already
  }
}

/**
 * du -x -s of `dir`: the allocated blocks (st_blocks x 512, so sparse files count what they
 * hold) and the inodes of every entry, the directory itself included, without crossing into
 * another filesystem, within `bounds`. Null when `dir` does not exist. Entries that vanish
 * during the walk are skipped: a volume in use changes while it is measured.
 */
export async function diskUsage(dir: string, bounds: WalkBounds = DEFAULT_WALK_BOUNDS, now: () => number = () => performance.now()): Promise<DiskUsage | null> {
  let top: fs.Stats;
  try {
    top = await fs.promises.lstat(dir);
  } catch {
    return null;
  }
  const total: DiskUsage = { bytes: top.blocks * 512, inodes: 1 };
  if (!top.isDirectory()) return total;
  // Hard links are counted once, as du does. One filesystem (st_dev is checked), so the inode
  // number alone names the file.
  const seen = new Set<number>();
  const deadline = now() + bounds.timeMs;
  const open: fs.Dir[] = [];
  const enter = (d: string): void => {
    try {
      open.push(fs.opendirSync(d, { bufferSize: DIR_BUFFER }));
    } catch {
      // gone or unreadable: not counted further
    }
  };
  let looked = 0;
  try {
    enter(dir);
    while (open.length > 0) {
      // The walk is synchronous in slices of SLICE entries (an lstat through the thread pool,
      // one promise each, was 10 times slower), and yields between them: a pass waiting on
      // this thread waits for one slice at most.
      if (looked % SLICE === 0) {
        await new Promise<void>((r) => setImmediate(r));
        if (now() > deadline) {
          total.partial = 'time';
          break;
        }
      }
      const d = open[open.length - 1]!;
      let entry: fs.Dirent | null;
      try {
        entry = d.readSync();
      } catch {
        entry = null;
      }
      if (entry === null) {
        open.pop();
        closeQuietly(d);
        continue;
      }
      if (++looked > bounds.entries) {
        total.partial = 'entries';
        break;
      }
      const p = path.join(d.path, entry.name);
      let st: fs.Stats;
      try {
        st = fs.lstatSync(p);
      } catch {
        continue;
      }
      if (st.dev !== top.dev) continue;
      if (st.nlink > 1 && !st.isDirectory()) {
        if (seen.has(st.ino)) continue;
        if (seen.size >= bounds.linkedInodes) {
          // Not remembered, so not counted: a later link to it would count it twice.
          total.partial = 'links';
          continue;
        }
        seen.add(st.ino);
      }
      total.bytes += st.blocks * 512;
      total.inodes++;
      if (st.isDirectory()) {
        if (open.length >= bounds.depth) total.partial ??= 'depth';
        else enter(p);
      }
    }
  } finally {
    for (const d of open) closeQuietly(d);
  }
  return total;
}

/** Where the kubelet mounts or creates a pod's emptyDir volume. */
export function emptyDirPath(kubeletRootDir: string, podUid: string, volume: string): string {
  return path.join(kubeletRootDir, 'pods', podUid, 'volumes', 'kubernetes.io~empty-dir', volume);
}

/** The usage of the named emptyDir volumes of one pod (a volume not on disk yet is left out). */
export async function readEmptyDirUsage(
  kubeletRootDir: string,
  podUid: string,
  volumes: readonly string[],
  bounds: WalkBounds = DEFAULT_WALK_BOUNDS,
): Promise<VolumeUsage[]> {
  const out: VolumeUsage[] = [];
  for (const name of volumes) {
    const u = await diskUsage(emptyDirPath(kubeletRootDir, podUid, name), bounds);
    if (u) out.push({ name, usedBytes: u.bytes, inodesUsed: u.inodes, ...(u.partial ? { partial: u.partial } : {}) });
  }
  return out;
}
