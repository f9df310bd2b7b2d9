/**
 * The pods whose ContainerMemoryPressure condition (KEP-5986) evictd set True, kept in the state
 * dir, so that a restart does not leave one True for good: the policy's state starts fresh, as
 * the KEP's does on a kubelet restart, so the first pass holds no condition, and the pods this
 * file names get theirs cleared then, as the KEP's kubelet clears them at its next sync.
 *
 * Root's file (0600, in the 0700 state dir) of uids, namespaces and names from the runtime and
 * the pod source: nothing a pod writes. Written when the set changes (a relax applied, a
 * condition cleared, a pod gone), which is rare and off the kill path.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { readStateFile, writeStateFile } from '../node/state-file';
import type { PodRef } from '../policy/types';

export const CONDITION_FILE = 'memory-pressure-conditions.json';

interface FileShape {
  version: 1;
  pods: Record<string, { namespace: string; name: string }>;
}

export class ConditionRecord {
  private readonly file: string;

  constructor(
    stateDir: string,
    private readonly logger: Logger,
  ) {
    this.file = path.join(stateDir, CONDITION_FILE);
  }

  /** The pods of the last run, by uid; none when there is no file or it does not parse (logged). */
  load(): Map<string, PodRef> {
    const out = new Map<string, PodRef>();
    let text: string;
    try {
      text = readStateFile(this.file, 4 * 1024 * 1024);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.logger.warn({ file: this.file, err }, 'ContainerMemoryPressure record unreadable; ignored');
      return out;
    }
    try {
      const parsed = JSON.parse(text) as FileShape;
      if (parsed?.version !== 1 || typeof parsed.pods !== 'object' || parsed.pods === null) throw new Error('not a version 1 record');
      for (const [uid, p] of Object.entries(parsed.pods))
        if (typeof p?.namespace === 'string' && typeof p.name === 'string') out.set(uid, { uid, namespace: p.namespace, name: p.name });
    } catch (err) {
      this.logger.warn({ file: this.file, err: (err as Error).message }, 'ContainerMemoryPressure record does not parse; ignored');
    }
    return out;
  }

  /** Writes the set (atomically); a failure is logged: the conditions themselves are in the API. */
  save(pods: ReadonlyMap<string, PodRef>): void {
    const shape: FileShape = { version: 1, pods: Object.fromEntries([...pods].map(([uid, p]) => [uid, { namespace: p.namespace, name: p.name }])) };
    try {
      writeStateFile(this.file, JSON.stringify(shape) + '\n');
    } catch (err) {
      this.logger.error({ file: this.file, err }, 'ContainerMemoryPressure record not written: a restart may leave a condition True');
    }
  }
}
