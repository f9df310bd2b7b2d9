/**
 * What the pod source last said about each running pod's priority, kept in the state dir, so
 * that a pod the API (or the kubelet) once called system-critical stays protected when evictd
 * starts while its source is unreachable. Without it, such a pod would get a runtime-only spec
 * with priority 0 (outside kube-system): a `system-node-critical` CNI pod in its own namespace
 * would become evictable, which the kubelet never does.
 *
 * The file is root's (0600, in the 0700 state dir on tmpfs) and holds only uids, names and
 * priorities: nothing a pod writes. Written off the decision path (a timer after the pass that
 * learned something new), atomically (a reader sees the old file or the new one).
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { readStateFile, writeStateFile } from '../node/state-file';
import { cancel, systemClock } from './clock';
import type { Clock, Timer } from './ports';

export const LAST_KNOWN_FILE = 'pod-priorities.json';

interface Entry {
  namespace: string;
  name: string;
  priority: number;
}

interface FileShape {
  version: 1;
  pods: Record<string, Entry>;
}

/** What the join reads: a uid's last known priority from the pod source. */
export type LastKnownPriority = (uid: string) => number | undefined;

export class LastKnownPriorities {
  private readonly file: string;
  private pods = new Map<string, Entry>();
  private dirty = false;
  private timer: Timer | null = null;

  constructor(private readonly o: { stateDir: string; logger: Logger; saveDelayMs?: number; clock?: Clock }) {
    this.file = path.join(o.stateDir, LAST_KNOWN_FILE);
  }

  /** Reads the file of the last run, if any. A file that does not parse is ignored (logged). */
  load(): void {
    let text: string;
    try {
      text = readStateFile(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.o.logger.warn({ file: this.file, err }, 'last known pod priorities unreadable; ignored');
      return;
    }
    try {
      const parsed = JSON.parse(text) as FileShape;
      if (parsed.version !== 1 || typeof parsed.pods !== 'object' || parsed.pods === null) throw new Error('not a version 1 record');
      for (const [uid, e] of Object.entries(parsed.pods)) {
        if (typeof e?.priority === 'number' && Number.isInteger(e.priority))
          this.pods.set(uid, { namespace: String(e.namespace), name: String(e.name), priority: e.priority });
      }
      this.o.logger.info({ file: this.file, pods: this.pods.size }, 'last known pod priorities loaded');
    } catch (err) {
      this.o.logger.warn({ file: this.file, err: err instanceof Error ? err.message : String(err) }, 'last known pod priorities do not parse; ignored');
    }
  }

  readonly priorityOf: LastKnownPriority = (uid) => this.pods.get(uid)?.priority;

  /**
   * One pass's pods: those with a spec from the source are remembered as it says now; pods no
   * longer running are forgotten. `fromSource` false: the source did not speak for the pod.
   */
  learn(pods: readonly { uid: string; namespace: string; name: string; priority: number; fromSource: boolean }[]): void {
    const running = new Set<string>();
    for (const p of pods) {
      running.add(p.uid);
      if (!p.fromSource) continue;
      const held = this.pods.get(p.uid);
      if (held?.priority === p.priority && held.name === p.name && held.namespace === p.namespace) continue;
      this.pods.set(p.uid, { namespace: p.namespace, name: p.name, priority: p.priority });
      this.dirty = true;
    }
    for (const uid of this.pods.keys()) {
      if (!running.has(uid)) {
        this.pods.delete(uid);
        this.dirty = true;
      }
    }
    if (this.dirty && !this.timer) this.timer = (this.o.clock ?? systemClock).after(this.o.saveDelayMs ?? 1000, () => this.save(), true);
  }

  /** Writes the file now if anything changed (and at close). */
  save(): void {
    this.timer = cancel(this.timer);
    if (!this.dirty) return;
    this.dirty = false;
    try {
      const rec: FileShape = { version: 1, pods: Object.fromEntries(this.pods) };
      writeStateFile(this.file, JSON.stringify(rec) + '\n');
    } catch (err) {
      this.o.logger.error({ file: this.file, err }, 'last known pod priorities could not be written');
    }
  }
}
