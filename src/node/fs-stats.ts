/** nodefs / imagefs from statfs(2): what an unprivileged writer could still use (f_bavail). */
import fs from 'node:fs';
import type { FsStats } from '../policy/types';

export function statfsStats(p: string): FsStats {
  const s = fs.statfsSync(p);
  return {
    availableBytes: s.bavail * s.bsize,
    capacityBytes: s.blocks * s.bsize,
    inodesFree: s.ffree,
    inodes: s.files,
  };
}
