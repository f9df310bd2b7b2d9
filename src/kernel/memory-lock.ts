/**
 * The agent's code locked in RAM (native/addon.cc lockMappedFiles: mlock2 with MLOCK_ONFAULT on
 * every file-backed mapping). A node near the end of memory reclaims file pages first, and an
 * idle agent's code is file pages: without the lock, the moment it must act is the moment its
 * code is paged out, and each fault waits on a disk that reclaim keeps busy. earlyoom and nohang
 * lock themselves for the same reason (mlockall; a V8 process cannot: see the addon).
 */
import fs from 'node:fs';
import { addon } from './addon';

/**
 * Locks the pages of every file mapped now (the node binary, its libraries, the addon) once
 * touched. Returns the mappings' size in bytes (what RLIMIT_MEMLOCK counts, not what is resident).
 * Throws a KernelError (EPERM or ENOMEM without CAP_IPC_LOCK), nothing then locked.
 */
export function lockCode(): number {
  return addon().lockMappedFiles();
}

/**
 * How many of a process's file-backed mappings there are, and how many are locked (smaps'
 * VmFlags "lo"); null when the process is gone.
 */
export function lockedFileMappings(pid: number | 'self' = 'self'): { files: number; locked: number } | null {
  let smaps: string;
  try {
    smaps = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return null;
  }
  let files = 0;
  let locked = 0;
  let isFile = false;
  for (const line of smaps.split('\n')) {
    // A mapping's header: start-end perms offset dev inode [path]
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (header) {
      isFile = header[1]!.startsWith('/') && !header[1]!.endsWith(' (deleted)');
      if (isFile) files++;
    } else if (isFile && line.startsWith('VmFlags:') && line.split(' ').includes('lo')) locked++;
  }
  return { files, locked };
}
