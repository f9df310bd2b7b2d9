/**
 * The memory brakes' record on the node: one JSON file in the state directory naming every brake
 * in force, so that an agent that died with brakes on releases them at its next start (see
 * memory-brake.ts for when it is written). Replaced atomically (write, then rename) and never
 * read through a link (state-file.ts).
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import { readStateFile, writeStateFile } from '../../node/state-file';
import type { PodRef } from '../../policy/types';

export const BRAKE_RECORD_FILE = 'memory-brakes.json';

/**
 * Why the state dir cannot be trusted with the brakes' record, or null: anyone else able to
 * write it could name any cgroup for evictd to write memory.high into at its next start.
 * An absent dir is fine (created 0700 at the first brake).
 */
export function stateDirProblem(dir: string, euid: number = process.geteuid?.() ?? 0): string | null {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : (err as Error).message;
  }
  if (st.isSymbolicLink()) return 'a symbolic link (the record must be where it is named)';
  if (!st.isDirectory()) return 'not a directory';
  if (st.uid !== euid) return `owned by uid ${st.uid}, not by evictd's ${euid}`;
  if (st.mode & 0o022) return `writable by others (mode 0${(st.mode & 0o777).toString(8)})`;
  return null;
}

/** One brake in force, as the record keeps it. */
export interface BrakeEntry {
  pod: PodRef;
  /** the pod's memory cgroup directory */
  dir: string;
  /** memory.high before the brake, exactly as read ("max" or a number) */
  original: string;
  /** memory.high the brake set */
  value: string;
  /**
   * While `value` is being changed (the graceful stop's ease): the value memory.high holds until
   * the write lands. A crash between the record and the write leaves this one in the cgroup, and
   * it is still the brake's, so a restore accepts either.
   */
  previous?: string;
  /** the threshold signal that called for it */
  signal: string;
  /** CLOCK_MONOTONIC ns (decimal): the record lives on tmpfs, so it never outlives the boot whose clock it is */
  sinceNs: string;
  /** wall clock, for people reading the file */
  setAt: string;
}

interface RecordFile {
  version: 1;
  /** the boot the record was written in (absent in records of older versions) */
  bootId?: string;
  brakes: BrakeEntry[];
}

/** The record's brakes of this boot; null when there is none, it is unreadable, or another boot's (each logged). */
export function readBrakeRecord(file: string, bootId: string, logger: Logger): { brakes: BrakeEntry[] | null; otherBoot: boolean } {
  let text: string;
  try {
    // Never through a link (state-file.ts): a link in the record's place is refused.
    text = readStateFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { brakes: null, otherBoot: false };
    // Unreadable (a link, a directory, no permission): refused with the reason, and the agent
    // starts; failing the start would only loop a restarting agent on the same file.
    logger.error({ record: file, err: (err as Error).message }, 'memory brake record unreadable: brakes it names (if any) are not released');
    return { brakes: null, otherBoot: false };
  }
  let rec: RecordFile;
  try {
    rec = JSON.parse(text) as RecordFile;
    if (!Array.isArray(rec.brakes)) throw new Error('no "brakes" list');
  } catch (err) {
    // Renames are atomic, so only a hand edit gets here: keep the file for a person to read.
    logger.error({ record: file, err: (err as Error).message }, 'memory brake record unreadable: brakes it names (if any) are not released');
    return { brakes: null, otherBoot: false };
  }
  if (rec.bootId !== undefined && rec.bootId !== bootId) {
    // Its cgroups went with that boot, and its monotonic times mean nothing now.
    logger.warn({ record: file, recordBoot: rec.bootId, boot: bootId, brakes: rec.brakes.length }, 'memory brake record from another boot: discarded');
    return { brakes: null, otherBoot: true };
  }
  return { brakes: rec.brakes, otherBoot: false };
}

/** Writes the record naming `brakes`; no brakes: no file. Atomic: a reader sees the old or the new. */
export function writeBrakeRecord(file: string, bootId: string, brakes: BrakeEntry[]): void {
  if (brakes.length === 0) {
    fs.rmSync(file, { force: true });
    return;
  }
  const rec: RecordFile = { version: 1, bootId, brakes };
  writeStateFile(file, JSON.stringify(rec, null, 1) + '\n');
}
