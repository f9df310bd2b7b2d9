/**
 * The evictions in progress, kept in the state dir until each is reported, so that a crash
 * (SIGKILL, OOM, a node agent restart) between the kill and the status write loses no eviction.
 * Without it the kubelet would restart such a pod in place with no Evicted event, and the
 * pressure would come back with it.
 *
 * An entry is written before the pod is killed or stopped, and removed once its report to
 * Kubernetes has ended (written, or given up after its retries) or the eviction failed (the pod
 * was not evicted: the next pass decides again). At start, every entry of this boot is finished:
 * the sandbox stopped again (idempotent in the runtime; a sandbox already gone counts as
 * stopped) and the eviction reported. The file is root's, 0600 in the 0700 state dir, replaced
 * atomically; it holds identities and the eviction's message, nothing a pod could use.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { PodRef } from '../policy/types';
import { currentBootId } from '../node/boot-id';
import { readStateFile, writeStateFile } from '../node/state-file';

export const EVICTION_JOURNAL_FILE = 'evictions.json';

export interface JournalEntry {
  pod: PodRef;
  sandboxId: string;
  signal: string;
  message: string;
  gracePeriodSeconds: number;
  annotations: Record<string, string>;
  /** when the eviction began (wall clock, ms): the report's time, and its events' names */
  atMs: number;
  /** the Evicted event's name, chosen once: a report repeated after a crash meets 409, not a second event */
  podEventName: string;
}

interface FileShape {
  version: 1;
  bootId: string;
  evictions: JournalEntry[];
}

export class EvictionJournal {
  readonly file: string;
  private readonly entries = new Map<string, JournalEntry>();
  private readonly bootId: string;

  constructor(private readonly o: { stateDir: string; logger: Logger; bootId?: string }) {
    this.file = path.join(o.stateDir, EVICTION_JOURNAL_FILE);
    this.bootId = o.bootId ?? currentBootId();
  }

  /**
   * The evictions a previous run of this boot left unfinished (the file is then empty until
   * they are begun again). Another boot's are dropped: their sandboxes went with it.
   */
  takeUnfinished(): JournalEntry[] {
    let parsed: FileShape;
    try {
      parsed = JSON.parse(readStateFile(this.file)) as FileShape;
      if (parsed.version !== 1 || !Array.isArray(parsed.evictions)) throw new Error('not a version 1 journal');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.o.logger.error({ file: this.file, err: err instanceof Error ? err.message : String(err) }, 'eviction journal unreadable; ignored');
      return [];
    }
    if (parsed.bootId !== this.bootId) {
      if (parsed.evictions.length) this.o.logger.warn({ file: this.file, evictions: parsed.evictions.length }, 'eviction journal from another boot: discarded');
      return [];
    }
    return parsed.evictions.filter(
      (e) => typeof e?.pod?.uid === 'string' && typeof e.sandboxId === 'string' && typeof e.podEventName === 'string' && typeof e.atMs === 'number',
    );
  }

  /** An eviction about to kill or stop its pod. Synchronous: on the state dir's tmpfs, tens of µs. */
  begin(e: JournalEntry): void {
    this.entries.set(e.pod.uid, e);
    this.persist();
  }

  entry(uid: string): JournalEntry | undefined {
    return this.entries.get(uid);
  }

  /** The eviction is reported (or failed, or never was): nothing left to finish. */
  end(uid: string): void {
    if (!this.entries.delete(uid)) return;
    this.persist();
  }

  private persist(): void {
    try {
      if (this.entries.size === 0) {
        fs.rmSync(this.file, { force: true });
        return;
      }
      const rec: FileShape = { version: 1, bootId: this.bootId, evictions: [...this.entries.values()] };
      writeStateFile(this.file, JSON.stringify(rec) + '\n');
    } catch (err) {
      // The eviction goes on: losing its crash-safety is better than not evicting.
      this.o.logger.error({ file: this.file, err }, 'eviction journal could not be written');
    }
  }
}
