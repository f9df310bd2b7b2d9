/**
 * `evictd run`'s code pages: locked in RAM at the start (--lock-memory), and trimmed to what the
 * agent runs once its first pass is done. Both are the node's to refuse: evictd then says why
 * and runs on.
 */
import type { Logger } from 'pino';
import { lockCode, shedCodePages } from '../kernel/memory-lock';
import { nativeAvailable } from '../kernel/addon';

const MiB = 2 ** 20;
/** How often to look whether the first pass is done, and for how long at most. */
const FIRST_PASS_POLL_MS = 250;
const FIRST_PASS_WAIT_MS = 10 * 60_000;

/** Locks the code before anything is armed; true when locked. */
export function lockCodeAtStart(logger: Logger): boolean {
  // What is mapped later (libbpf, with the tripwire) is locked once the first pass is done
  // (shedCodeOnceStarted); the BPF program's pages are kernel memory and need none.
  try {
    const bytes = lockCode();
    logger.info({ mappedFilesBytes: bytes }, 'code locked in memory (mlock2 MLOCK_ONFAULT on the mapped files)');
    return true;
  } catch (err) {
    // As with the priority: the node refuses it, the agent still does its job.
    logger.warn(
      { err: (err as Error).message },
      nativeAvailable()
        ? 'running with pageable code: mlock refused (CAP_IPC_LOCK missing and RLIMIT_MEMLOCK too low)'
        : 'running with pageable code: the native addon did not load (see err)',
    );
    return false;
  }
}

/**
 * Once `started()` (the first pass is done), gives back the code pages the start touched
 * (native/code_pages.cc: about half of the node binary's resident pages). Returns a cancel.
 */
export function shedCodeOnceStarted(started: () => boolean, locked: boolean, logger: Logger): () => void {
  const since = Date.now();
  const timer = setInterval(() => {
    if (!started() && Date.now() - since < FIRST_PASS_WAIT_MS) return;
    clearInterval(timer);
    if (!nativeAvailable()) return;
    try {
      const shed = shedCodePages(locked);
      if (shed) logger.info({ residentCodeMiB: { before: round(shed.before), after: round(shed.after) } }, 'code pages of the start given back (MADV_PAGEOUT)');
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "running with pageable code: the lock could not be taken again after giving back the start's pages");
    }
  }, FIRST_PASS_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

const round = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;
