/**
 * The memory brake's effect (its rule is src/policy/brake.ts): sets memory.high on a pod cgroup,
 * puts back exactly what was there, and keeps a record on the node of every brake in force, so
 * that an agent that died with brakes on releases them at its next start. `braking` and
 * `releasing` are the two actions (see effect.ts) the actuator runs; dry run wraps them and
 * keeps its brakes in memory only.
 *
 * The record (brake-record.ts) is one JSON file in the state directory (default /run/evictd: tmpfs
 * is right, since cgroups do not outlive a reboot either), replaced atomically. It is
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
import path from 'node:path';
import type { Logger } from 'pino';
import { currentBootId } from '../../node/boot-id';
import type { CgroupPort } from '../../node/cgroup-port';
import { memoryCurrent, tightestMemoryLimitAbove } from '../../node/cgroup-limits';
import { brakeValue, stopEaseRoom, type ActiveBrake, type BrakeApply, type BrakeRelease } from '../../policy/brake';
import { STOP_EASE_LIMIT_MARGIN_BYTES, STOP_EASE_NODE_MARGIN_BYTES } from '../../policy/config';
import type { Signal } from '../../policy/types';
import { msSince } from '../clock';
import type { AgentMetrics } from '../metrics';
import type { Clock } from '../ports';
import type { Effect, Rehearsal } from './effect';
import { crashPoint } from '../crash-point';
import { BRAKE_RECORD_FILE, readBrakeRecord, writeBrakeRecord, type BrakeEntry } from './brake-record';

/** A brake set again this soon after a restart released it keeps its first start (see recover). */
const INHERIT_MS = 60_000;
/** The pods said once to be held lower already: bounded, a long-lived agent sees many pods. */
const ALREADY_HELD_MAX = 10_000;

export type BrakeEnd = BrakeRelease['why'] | 'agent-stop' | 'restart';

export interface MemoryBrakesOptions {
  stateDir: string;
  cgroups: CgroupPort;
  clock: Clock;
  marginBytes: number;
  logger: Logger;
  metrics: AgentMetrics;
  /**
   * The pod cgroup root's memory directory: a record entry naming a cgroup outside it is never
   * written to (a record is only evictd's, but it is still input read at start).
   */
  podRootDir?: string;
  /** this boot's id (default: the kernel's) */
  bootId?: string;
  /** what the node has left before the kernel's OOM killer, read fresh (MemAvailable); absent: no node bound on the ease */
  nodeAvailableBytes?: () => number | null;
}

export interface BrakeOn {
  brake: BrakeApply;
  /** the pod's cgroup path in the hierarchy */
  podPath: string;
}

export interface BrakeOff {
  uid: string;
  why: BrakeEnd;
}

export interface BrakeEase {
  uid: string;
  /** memory.high becomes usage + this (never above what the brake replaced) */
  headroomBytes: number;
  /** the pod's graceful stop has just been asked for: the pod is held still until its SIGTERM is queued (see easeForStop) */
  stopAsked?: boolean;
}

/**
 * How long a pod is held frozen for its graceful stop's SIGTERM to be queued, and how often that
 * is looked at. The runtime takes a few ms to send it on a node (0.3-1 s in the emulated lab);
 * past the wait the pod is thawed anyway (a runtime that did not send it, or a process that
 * ignores it).
 */
export const EASE_SIGNAL_WAIT_MS = 3000;

/** What an ease waited for, and how long. */
interface EaseWait {
  until: 'sigterm-queued' | 'no-process-left' | 'brake-gone' | 'wait-over';
  waitedMs: number;
}
const EASE_SIGNAL_POLL_MS = 2;

/** What a brake would be, read now: the entry to set, or why there is none. */
type Plan = { entry: BrakeEntry; details: Record<string, unknown> } | { skip: string | null; details: Record<string, unknown> };

export class MemoryBrakes {
  private readonly brakes = new Map<string, BrakeEntry>();
  /** pods found already held below the brake by their own memory.high: said once per pod */
  private readonly alreadyHeld = new Set<string>();
  /**
   * Pods whose brake a restart released, with that brake's start: a pod braked again right away
   * keeps it, so that a crash loop (each start releases, the next pass brakes again) cannot
   * keep a pod braked past --memory-brake-max-duration without it ever being stopped.
   */
  private readonly inherited = new Map<string, bigint>();
  private recoveredAt: bigint | null = null;
  /** pod cgroups this run holds frozen for their graceful stop (easeForStop) */
  private readonly frozenDirs = new Set<string>();
  private readonly bootId: string;
  readonly recordPath: string;

  /** The brake as an action: on, with the record written first. */
  readonly braking: Effect<BrakeOn, void> = {
    run: (input) => Promise.resolve(this.apply(input.brake, input.podPath)),
    rehearse: (input) => this.rehearseApply(input),
  };

  /** The easing as an action: at a graceful stop, room for the SIGTERM handler. */
  readonly easing: Effect<BrakeEase, void> = {
    run: (input) => (input.stopAsked ? this.easeForStop(input.uid, input.headroomBytes) : Promise.resolve(this.ease(input.uid, input.headroomBytes))),
    rehearse: (input) => {
      const e = this.brakes.get(input.uid);
      return {
        message: e ? 'would ease memory brake for the graceful stop (dry run)' : null,
        fields: e ? { pod: `${e.pod.namespace}/${e.pod.name}`, uid: input.uid, headroomBytes: input.headroomBytes } : {},
        outcome: undefined,
      };
    },
  };

  /** The release as an action: the original memory.high back, then the record. */
  readonly releasing: Effect<BrakeOff, void> = {
    run: (input) => Promise.resolve(this.release(input.uid, input.why)),
    rehearse: (input) => this.rehearseRelease(input),
  };

  constructor(private readonly o: MemoryBrakesOptions) {
    this.recordPath = path.join(o.stateDir, BRAKE_RECORD_FILE);
    this.bootId = o.bootId ?? currentBootId();
  }

  /** The brakes in force, for the policy. */
  get active(): ActiveBrake[] {
    return [...this.brakes].map(([uid, e]) => ({ uid, since: Number(e.sinceNs), signal: e.signal as Signal }));
  }

  /**
   * Every brake the record names (a previous run died with them on) is released and the record
   * emptied; one that cannot be released is re-owned. A pressure still there brakes again on the
   * next pass, from the restored value. A dry run reads the record and leaves it and the cgroups
   * as they are. readRecord and restoreRecord are its two halves, for an agent that reads at
   * start (a record it cannot read is refused with a log line, never a failed start) and releases
   * once it can act.
   */
  recover(opts: { dryRun?: boolean } = {}): void {
    this.restoreRecord(this.readRecord(opts), opts);
  }

  /** The record's brakes of this boot, or null (none, unreadable or another boot's: logged). */
  readRecord(opts: { dryRun?: boolean } = {}): BrakeEntry[] | null {
    const read = readBrakeRecord(this.recordPath, this.bootId, this.o.logger);
    // Another boot's record is discarded: rewritten as this run's (no brakes: no file).
    if (read.otherBoot && !opts.dryRun) this.persist();
    return read.brakes;
  }

  /** Releases (or re-owns) the brakes readRecord returned; rewrites the record. */
  restoreRecord(recorded: BrakeEntry[] | null, opts: { dryRun?: boolean } = {}): void {
    if (recorded === null) return;
    this.recoveredAt = this.o.clock.now();
    for (const e of recorded) {
      if (!this.insidePodRoot(e.dir)) {
        this.o.logger.error(
          { record: this.recordPath, dir: e.dir, podRoot: this.o.podRootDir, uid: e.pod?.uid },
          'memory brake record names a cgroup outside the pod cgroup root: not touched',
        );
        continue;
      }
      // A run that died while it held the pod still for its stop (easeForStop) left it frozen.
      if (!opts.dryRun && this.o.cgroups.read(e.dir, 'cgroup.freeze')?.trim() === '1') this.setFrozen(e.dir, false);
      let outcome: string;
      try {
        outcome = opts.dryRun ? 'dry run: left as is' : this.restore(e);
        this.inherited.set(e.pod.uid, BigInt(e.sinceNs));
      } catch (err) {
        // Re-owned: the passes release it (pod gone, pressure over) or stop the pod at the bound.
        this.brakes.set(e.pod.uid, e);
        outcome = `not restored (${(err as Error).message}): re-owned`;
      }
      const brakedMs = msSince(this.o.clock, BigInt(e.sinceNs));
      if (!this.brakes.has(e.pod.uid)) this.o.metrics.brakeDuration.observe({ end: 'restart' }, brakedMs / 1000);
      this.o.logger.warn(
        { pod: `${e.pod.namespace}/${e.pod.name}`, uid: e.pod.uid, brakeValue: e.value, restored: e.original, outcome, setAt: e.setAt, brakedMs },
        this.brakes.has(e.pod.uid) ? 'memory brake from a previous run re-owned' : 'memory brake from a previous run released',
      );
    }
    if (!opts.dryRun) this.persist();
    this.o.metrics.brakesActive.set(this.brakes.size);
  }

  /** Brakes a pod: memory.high = its usage now plus the margin, unless its own value is lower already. */
  apply(a: BrakeApply, podCgroupPath: string, sinceNs: bigint = this.o.clock.now()): void {
    const o = this.o;
    const p = this.plan(a, podCgroupPath, this.startOf(a.pod.uid, sinceNs));
    if (!('entry' in p)) {
      if (p.skip !== null) o.logger.info(p.details, p.skip);
      return;
    }
    const e = p.entry;
    this.brakes.set(a.pod.uid, e);
    try {
      this.persist();
      crashPoint('brake:recorded');
      o.cgroups.write(e.dir, 'memory.high', e.value);
      crashPoint('brake:set');
    } catch (err) {
      this.brakes.delete(a.pod.uid);
      this.persistQuietly();
      o.metrics.brakeFailures.inc();
      o.logger.warn({ ...p.details, err }, 'memory brake could not be set');
      return;
    }
    o.metrics.brakes.inc({ signal: a.threshold.signal });
    o.metrics.brakesActive.set(this.brakes.size);
    o.logger.warn(p.details, 'memory brake on');
  }

  /** Takes a brake off: the original value back (if the brake's value is still there), then the record. */
  release(uid: string, why: BrakeEnd): void {
    const e = this.brakes.get(uid);
    if (!e) return;
    // Held still for its stop (easeForStop) when the brake ends (the agent stopping): thawed
    // now, as the wait's own thaw may never run.
    if (this.frozenDirs.has(e.dir)) this.setFrozen(e.dir, false);
    let outcome: string;
    try {
      outcome = this.restore(e);
      crashPoint('brake:restored');
    } catch (err) {
      // Kept in the record: the next pass (or the next start) tries again.
      this.o.logger.error({ pod: `${e.pod.namespace}/${e.pod.name}`, uid, why, err }, 'memory brake could not be released; will retry');
      return;
    }
    this.brakes.delete(uid);
    this.persistQuietly();
    this.o.logger.info(this.ended(e, why, outcome), 'memory brake off');
  }

  /** When a brake set now on this pod started: now, or the start of the brake a restart just released. */
  private startOf(uid: string, now: bigint): bigint {
    const first = this.inherited.get(uid);
    if (first === undefined || this.recoveredAt === null) return now;
    this.inherited.delete(uid);
    return msSince(this.o.clock, this.recoveredAt) <= INHERIT_MS ? first : now;
  }

  private insidePodRoot(dir: unknown): boolean {
    if (typeof dir !== 'string') return false;
    if (this.o.podRootDir === undefined) return true;
    const rel = path.relative(this.o.podRootDir, dir);
    return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
  }

  /**
   * A braked pod's graceful stop has just been asked for: the pod is frozen (cgroup.freeze), its
   * brake eased (usage + headroom, read while nothing in it runs), and thawed once the runtime's
   * SIGTERM is queued for one of its processes (a frozen task cannot take it, so it shows), or no
   * process is left, or the brake is gone, or EASE_SIGNAL_WAIT_MS passed. Eased with the pod
   * running, the room went to whatever the pod did until the signal came (a ramp at 200 MiB/s
   * eats 128 MiB in 0.64 s, and the runtime took 0.3-1 s to send it in the emulated lab), and
   * the handler found none: throttled, or OOM-killed by a limit above the pod (seen in the
   * lab). Thawed with the signal queued, each task takes it on its way back to user space,
   * before it allocates again. A crash while frozen: the next start thaws every pod it finds
   * braked in the record (recover).
   */
  private async easeForStop(uid: string, headroomBytes: number): Promise<void> {
    const e = this.brakes.get(uid);
    const pending = this.o.cgroups.sigtermPending?.bind(this.o.cgroups);
    if (!e || !pending) return this.ease(uid, headroomBytes);
    const frozen = this.setFrozen(e.dir, true);
    const start = this.o.clock.now();
    let waited: EaseWait | undefined;
    try {
      this.ease(uid, headroomBytes);
      if (!frozen) return;
      for (;;) {
        const now = this.brakes.get(uid);
        const waitedMs = msSince(this.o.clock, start);
        const until = !now
          ? 'brake-gone'
          : pending(e.dir)
            ? 'sigterm-queued'
            : this.o.cgroups.pids(e.dir).length === 0
              ? 'no-process-left'
              : waitedMs >= EASE_SIGNAL_WAIT_MS
                ? 'wait-over'
                : null;
        if (until) {
          waited = { until, waitedMs };
          break;
        }
        await new Promise<void>((resolve) => this.o.clock.after(EASE_SIGNAL_POLL_MS, resolve));
      }
    } finally {
      if (frozen) this.setFrozen(e.dir, false);
    }
    this.o.logger.info(
      { pod: `${e.pod.namespace}/${e.pod.name}`, uid, waited: waited?.until, waitedMs: waited?.waitedMs },
      'memory brake: the pod held still until its SIGTERM was sent, then thawed for its handler',
    );
  }

  /** cgroup.freeze of a pod cgroup; false when it could not be written (the cgroup is gone, or no freezer). */
  private setFrozen(dir: string, frozen: boolean): boolean {
    try {
      this.o.cgroups.write(dir, 'cgroup.freeze', frozen ? '1' : '0');
      if (frozen) this.frozenDirs.add(dir);
      else this.frozenDirs.delete(dir);
      return true;
    } catch (err) {
      if (!frozen) this.o.logger.warn({ dir, err }, 'memory brake: the pod could not be thawed');
      return false;
    }
  }

  /**
   * A braked pod is being stopped with a grace period: memory.high = its usage + headroom, page
   * aligned, never above the value the brake replaced (the pod's own limit stays its own), and
   * never more room than the node has left beyond STOP_EASE_NODE_MARGIN_BYTES, nor than the
   * tightest limited cgroup above the pod has left beyond STOP_EASE_LIMIT_MARGIN_BYTES (both read
   * now). Where that leaves the handler less than asked, or nothing, the log says so: the handler
   * is then throttled until its grace period ends, not OOM-killed. The record first, as for the
   * brake itself; a pod not braked is left alone.
   */
  ease(uid: string, headroomBytes: number): void {
    const e = this.brakes.get(uid);
    if (!e) return;
    const usage = memoryCurrent(this.o.cgroups, e.dir);
    if (usage === null) return;
    const nodeLeft = this.o.nodeAvailableBytes?.() ?? null;
    const limit = tightestMemoryLimitAbove(this.o.cgroups, e.dir);
    const room = stopEaseRoom(headroomBytes, nodeLeft, limit?.leftBytes ?? null);
    const pod = `${e.pod.namespace}/${e.pod.name}`;
    if (room < headroomBytes) {
      const fields = {
        pod,
        uid,
        askedBytes: headroomBytes,
        roomBytes: room,
        nodeAvailableBytes: nodeLeft,
        nodeMarginBytes: STOP_EASE_NODE_MARGIN_BYTES,
        limitDir: limit?.dir ?? null,
        limitLeftBytes: limit?.leftBytes ?? null,
        limitMarginBytes: STOP_EASE_LIMIT_MARGIN_BYTES,
        usageBytes: usage,
      };
      // No room: the brake is kept; too little: eased by that much. Either way the handler is
      // throttled, not OOM-killed.
      this.o.logger.warn(
        fields,
        room <= 0
          ? 'memory brake kept for the graceful stop: the node (or a limited cgroup above the pod) has no room to give its SIGTERM handler (it will be throttled until its grace period ends, not OOM-killed)'
          : 'memory brake eased less than asked for the graceful stop: the node (or a limited cgroup above the pod) has only this much room (a handler that needs more will be throttled, not OOM-killed)',
      );
      if (room <= 0) return;
    }
    let value = brakeValue(usage, room);
    if (e.original !== 'max') value = Math.min(value, Number(e.original));
    if (value <= Number(e.value)) return;
    const before = e.value;
    e.value = String(value);
    e.previous = before;
    try {
      this.persist();
      crashPoint('brake:ease-recorded');
      this.o.cgroups.write(e.dir, 'memory.high', e.value);
      crashPoint('brake:eased');
    } catch (err) {
      e.value = before;
      delete e.previous;
      this.persistQuietly();
      this.o.logger.warn({ pod, uid, err }, 'memory brake could not be eased for the graceful stop');
      return;
    }
    // Landed: the record drops `previous` at its next write.
    delete e.previous;
    this.o.logger.info(
      {
        pod,
        uid,
        memoryHigh: e.value,
        was: before,
        usageBytes: usage,
        headroomBytes: room,
        nodeAvailableBytes: nodeLeft,
        limitDir: limit?.dir ?? null,
        limitLeftBytes: limit?.leftBytes ?? null,
      },
      'memory brake eased for the graceful stop',
    );
  }

  releaseAll(why: BrakeEnd): void {
    for (const uid of [...this.brakes.keys()]) this.release(uid, why);
  }

  /** Dry run: the brake is kept in memory only (the policy then sees it, and its bound), nothing is written. */
  private rehearseApply({ brake, podPath }: BrakeOn): Rehearsal<void> {
    const p = this.plan(brake, podPath, this.o.clock.now());
    if (!('entry' in p)) return { message: p.skip, fields: p.details, outcome: undefined };
    this.brakes.set(brake.pod.uid, p.entry);
    return { message: 'would brake pod (dry run)', fields: p.details, outcome: undefined };
  }

  private rehearseRelease({ uid, why }: BrakeOff): Rehearsal<void> {
    const e = this.brakes.get(uid);
    if (!e) return { message: null, fields: {}, outcome: undefined };
    this.brakes.delete(uid);
    return { message: 'would release memory brake (dry run)', fields: this.ended(e, why, 'dry run'), outcome: undefined };
  }

  /** The brake this pod would get now, read from its cgroup. */
  private plan(a: BrakeApply, podCgroupPath: string, since: bigint): Plan {
    const o = this.o;
    const dir = o.cgroups.memoryDir(podCgroupPath);
    const podLog = { pod: `${a.pod.namespace}/${a.pod.name}`, uid: a.pod.uid, signal: a.threshold.signal, threshold: a.threshold, reasons: a.reasons };
    const original = o.cgroups.read(dir, 'memory.high')?.trim() ?? null;
    const usage = memoryCurrent(o.cgroups, dir);
    if (original === null || usage === null) return { skip: 'memory brake: pod cgroup gone before the brake', details: podLog };
    const value = brakeValue(usage, o.marginBytes);
    if (original !== 'max' && Number(original) <= value) {
      const first = !this.alreadyHeld.has(a.pod.uid);
      if (this.alreadyHeld.size >= ALREADY_HELD_MAX) this.alreadyHeld.clear();
      this.alreadyHeld.add(a.pod.uid);
      return {
        skip: first ? 'memory brake: the pod memory.high is already at or below the brake; left as is' : null,
        details: { ...podLog, memoryHigh: original, brakeValue: value },
      };
    }
    const sinceNs = String(since);
    const entry: BrakeEntry = { pod: a.pod, dir, original, value: String(value), signal: a.threshold.signal, sinceNs, setAt: new Date().toISOString() };
    return { entry, details: { ...podLog, memoryHigh: entry.value, replaced: original, usageBytes: usage, marginBytes: o.marginBytes, at: sinceNs } };
  }

  /** A brake ended: metrics, and the fields of its log line. */
  private ended(e: BrakeEntry, why: BrakeEnd, outcome: string): Record<string, unknown> {
    const brakedMs = msSince(this.o.clock, BigInt(e.sinceNs));
    this.o.metrics.brakesActive.set(this.brakes.size);
    this.o.metrics.brakeDuration.observe({ end: why }, brakedMs / 1000);
    return { pod: `${e.pod.namespace}/${e.pod.name}`, uid: e.pod.uid, why, brakeValue: e.value, restored: e.original, outcome, brakedMs };
  }

  /** Writes the original back when memory.high still holds the brake's value; says what happened. */
  private restore(e: BrakeEntry): 'restored' | 'pod cgroup gone' | 'not the brake value: left as is' {
    const now = this.o.cgroups.read(e.dir, 'memory.high')?.trim() ?? null;
    if (now === null) return 'pod cgroup gone';
    if (now !== e.value && (e.previous === undefined || now !== e.previous)) return 'not the brake value: left as is';
    try {
      this.o.cgroups.write(e.dir, 'memory.high', e.original);
    } catch (err) {
      // The cgroup went away between the read and the write: nothing is held any more.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENODEV') return 'pod cgroup gone';
      throw err;
    }
    return 'restored';
  }

  /** The record as the map is now (see brake-record.ts). */
  private persist(): void {
    writeBrakeRecord(this.recordPath, this.bootId, [...this.brakes.values()]);
  }

  private persistQuietly(): void {
    try {
      this.persist();
    } catch (err) {
      this.o.logger.error({ record: this.recordPath, err }, 'memory brake record could not be written');
    }
  }
}
