/**
 * The memory brake's I/O (the decision is src/policy/brake.ts): sets memory.high on a pod cgroup,
 * puts back exactly what was there, and keeps a record on the node of every brake in force, so
 * that an agent that died with brakes on releases them at its next start.
 *
 * The record is one JSON file in the state directory (default /run/evictd: tmpfs is right, since
 * cgroups do not outlive a reboot either), replaced atomically (write, then rename). It is
 * written BEFORE memory.high is set and rewritten only AFTER the original is restored, so a crash
 * at any point leaves no brake the record does not name. A restore writes the original back only
 * while memory.high still holds the brake's value: a crash between the record and the write
 * leaves the original in place, and a value someone else set since is theirs to keep.
 *
 * The brake is on the pod cgroup, never a container's: the kubelet's MemoryQoS sets memory.high
 * on containers, and those values are left alone.
 *
 * Runs on the main JS thread, inside a pass (the controller runs one at a time), with sync I/O:
 * a few small writes to cgroupfs and tmpfs.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { cgroupDir, readCgroupFile, readCgroupNumber } from '../node/cgroups';
import { brakeValue, type ActiveBrake, type BrakeApply, type BrakeRelease } from '../policy/brake';
import type { PodRef } from '../policy/types';
import type { AgentMetrics } from './metrics';

export const BRAKE_RECORD_FILE = 'memory-brakes.json';

/** One brake in force, as the record keeps it. */
export interface BrakeEntry {
  pod: PodRef;
  /** the pod's memory cgroup directory */
  dir: string;
  /** memory.high before the brake, exactly as read ("max" or a number) */
  original: string;
  /** memory.high the brake set */
  value: string;
  /** the threshold signal that called for it */
  signal: string;
  /** CLOCK_MONOTONIC ns (decimal): the record lives on tmpfs, so it never outlives the boot whose clock it is */
  sinceNs: string;
  /** wall clock, for people reading the file */
  setAt: string;
}

interface RecordFile {
  version: 1;
  brakes: BrakeEntry[];
}

export type BrakeEnd = BrakeRelease['why'] | 'agent-stop' | 'restart';

export interface MemoryBrakesOptions {
  stateDir: string;
  /** the cgroup2 mount the pod cgroups are under */
  memoryMount: string;
  marginBytes: number;
  dryRun: boolean;
  logger: Logger;
  metrics: AgentMetrics;
}

const nowNs = (): bigint => process.hrtime.bigint();

/** memory.high as the kernel prints it, trimmed; null when the cgroup is gone. */
function readHigh(dir: string): string | null {
  return readCgroupFile(path.join(dir, 'memory.high'))?.trim() ?? null;
}

function readCurrent(dir: string): number | null {
  try {
    const n = readCgroupNumber(path.join(dir, 'memory.current'));
    return n !== null && Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

export class MemoryBrakes {
  private readonly brakes = new Map<string, BrakeEntry>();
  /** pods found already held below the brake by their own memory.high: said once per pod */
  private readonly alreadyHeld = new Set<string>();
  readonly recordPath: string;

  constructor(private readonly o: MemoryBrakesOptions) {
    this.recordPath = path.join(o.stateDir, BRAKE_RECORD_FILE);
  }

  /** The brakes in force, for the policy. */
  get active(): ActiveBrake[] {
    return [...this.brakes].map(([uid, e]) => ({ uid, since: Number(e.sinceNs) }));
  }

  entry(uid: string): BrakeEntry | undefined {
    return this.brakes.get(uid);
  }

  /**
   * At start: every brake the record names (a previous run died with them on) is released and
   * the record emptied; one that cannot be released is re-owned. A pressure still there brakes
   * again on the first pass, from the restored value.
   */
  recover(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.recordPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let rec: RecordFile;
    try {
      rec = JSON.parse(text) as RecordFile;
      if (!Array.isArray(rec.brakes)) throw new Error('no "brakes" list');
    } catch (err) {
      // Renames are atomic, so only a hand edit gets here: keep the file for a person to read.
      this.o.logger.error({ record: this.recordPath, err: (err as Error).message }, 'memory brake record unreadable: brakes it names (if any) are not released');
      return;
    }
    for (const e of rec.brakes) {
      let outcome: string;
      try {
        outcome = this.o.dryRun ? 'dry run: left as is' : this.restore(e);
      } catch (err) {
        // Re-owned: the passes release it (pod gone, pressure over) or stop the pod at the bound.
        this.brakes.set(e.pod.uid, e);
        outcome = `not restored (${(err as Error).message}): re-owned`;
      }
      const brakedMs = Number(nowNs() - BigInt(e.sinceNs)) / 1e6;
      if (!this.brakes.has(e.pod.uid)) this.o.metrics.brakeDuration.observe({ end: 'restart' }, brakedMs / 1000);
      this.o.logger.warn({ pod: `${e.pod.namespace}/${e.pod.name}`, uid: e.pod.uid, brakeValue: e.value, restored: e.original, outcome, setAt: e.setAt, brakedMs }, this.brakes.has(e.pod.uid) ? 'memory brake from a previous run re-owned' : 'memory brake from a previous run released');
    }
    if (!this.o.dryRun) this.persist();
    this.o.metrics.brakesActive.set(this.brakes.size);
  }

  /** Brakes a pod: memory.high = its usage now plus the margin, unless its own value is lower already. */
  apply(a: BrakeApply, podCgroupPath: string, sinceNs: bigint): void {
    const o = this.o;
    const dir = cgroupDir(o.memoryMount, podCgroupPath);
    const podLog = { pod: `${a.pod.namespace}/${a.pod.name}`, uid: a.pod.uid, signal: a.threshold.signal, threshold: a.threshold, reasons: a.reasons };
    const original = readHigh(dir);
    const usage = readCurrent(dir);
    if (original === null || usage === null) {
      o.logger.info(podLog, 'memory brake: pod cgroup gone before the brake');
      return;
    }
    const value = brakeValue(usage, o.marginBytes);
    if (original !== 'max' && Number(original) <= value) {
      if (!this.alreadyHeld.has(a.pod.uid)) o.logger.info({ ...podLog, memoryHigh: original, brakeValue: value }, 'memory brake: the pod memory.high is already at or below the brake; left as is');
      this.alreadyHeld.add(a.pod.uid);
      return;
    }
    const e: BrakeEntry = { pod: a.pod, dir, original, value: String(value), signal: a.threshold.signal, sinceNs: String(sinceNs), setAt: new Date().toISOString() };
    const details = { ...podLog, memoryHigh: e.value, replaced: original, usageBytes: usage, marginBytes: o.marginBytes, at: e.sinceNs };
    if (o.dryRun) {
      this.brakes.set(a.pod.uid, e);
      o.logger.info({ ...details, dryRun: true }, 'would brake pod (dry run)');
      return;
    }
    this.brakes.set(a.pod.uid, e);
    try {
      this.persist();
      fs.writeFileSync(path.join(dir, 'memory.high'), e.value);
    } catch (err) {
      this.brakes.delete(a.pod.uid);
      this.persistQuietly();
      o.metrics.brakeFailures.inc();
      o.logger.warn({ ...details, err }, 'memory brake could not be set');
      return;
    }
    o.metrics.brakes.inc({ signal: a.threshold.signal });
    o.metrics.brakesActive.set(this.brakes.size);
    o.logger.warn(details, 'memory brake on');
  }

  /** Takes a brake off: the original value back (if the brake's value is still there), then the record. */
  release(uid: string, why: BrakeEnd): void {
    const e = this.brakes.get(uid);
    if (!e) return;
    let outcome: string;
    try {
      outcome = this.o.dryRun ? 'dry run' : this.restore(e);
    } catch (err) {
      // Kept in the record: the next pass (or the next start) tries again.
      this.o.logger.error({ pod: `${e.pod.namespace}/${e.pod.name}`, uid, why, err }, 'memory brake could not be released; will retry');
      return;
    }
    this.brakes.delete(uid);
    if (!this.o.dryRun) this.persistQuietly();
    const brakedMs = Number(nowNs() - BigInt(e.sinceNs)) / 1e6;
    this.o.metrics.brakesActive.set(this.brakes.size);
    this.o.metrics.brakeDuration.observe({ end: why }, brakedMs / 1000);
    this.o.logger.info({ pod: `${e.pod.namespace}/${e.pod.name}`, uid, why, brakeValue: e.value, restored: e.original, outcome, brakedMs }, this.o.dryRun ? 'would release memory brake (dry run)' : 'memory brake off');
  }

  releaseAll(why: BrakeEnd): void {
    for (const uid of [...this.brakes.keys()]) this.release(uid, why);
  }

  /** Writes the original back when memory.high still holds the brake's value; says what happened. */
  private restore(e: BrakeEntry): 'restored' | 'pod cgroup gone' | 'not the brake value: left as is' {
    const now = readHigh(e.dir);
    if (now === null) return 'pod cgroup gone';
    if (now !== e.value) return 'not the brake value: left as is';
    try {
      fs.writeFileSync(path.join(e.dir, 'memory.high'), e.original);
    } catch (err) {
      // The cgroup went away between the read and the write: nothing is held any more.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENODEV') return 'pod cgroup gone';
      throw err;
    }
    return 'restored';
  }

  /** The record as the map is now; no brakes: no file. Atomic: a reader sees the old or the new. */
  private persist(): void {
    if (this.brakes.size === 0) {
      fs.rmSync(this.recordPath, { force: true });
      return;
    }
    fs.mkdirSync(this.o.stateDir, { recursive: true, mode: 0o700 });
    const tmp = `${this.recordPath}.${process.pid}.tmp`;
    const rec: RecordFile = { version: 1, brakes: [...this.brakes.values()] };
    fs.writeFileSync(tmp, JSON.stringify(rec, null, 1) + '\n', { mode: 0o600 });
    fs.renameSync(tmp, this.recordPath);
  }

  private persistQuietly(): void {
    try {
      this.persist();
    } catch (err) {
      this.o.logger.error({ record: this.recordPath, err }, 'memory brake record could not be written');
    }
  }
}
