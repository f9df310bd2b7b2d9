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
 * Gives back the code pages a start touched and the agent no longer runs (native/code_pages.cc):
 * each file-backed mapping paged out (MADV_PAGEOUT), locked again once touched when `locked`.
 * Returns the resident file pages' bytes before and after (/proc/self/status RssFile), or null
 * where the addon is too old to shed. Throws a KernelError when the lock cannot be taken again.
 */
export function shedCodePages(locked: boolean): { before: number; after: number } | null {
  const shed = addon().shedFilePages;
  if (!shed) return null;
  const before = residentFileBytes();
  shed(locked);
  return { before, after: residentFileBytes() };
}

function residentFileBytes(): number {
  const kb = /^RssFile:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1];
  return kb === undefined ? 0 : Number(kb) * 1024;
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
