import fs from 'node:fs';
import path from 'node:path';
import { addon, nativeAvailable, nativeLoadError, type NativeCallback, type NativeTripwireLine, type TripwireStatus } from './addon';
import { watchCgroupEvents } from './cgroup-events';
import { isCgroup2Root } from './cgroup2-root';
import { rootUsageBytes } from './kubelet-memory';
import { NativeBackedWatcher } from './native-watcher';
import { orderEventOf } from './order-event';
import type { KernelEvent, ThresholdWatcher, Watcher } from './types';
import { measureReader, type LineMeasure } from './working-set';

// The memcg tripwire on cgroup v2 (native/bpf/memcg_tripwire.bpf.c): a BPF program on
// fexit/page_counter_{try_charge,charge,uncharge} reports, through a ring buffer, the charge or
// uncharge that takes a watched memory counter across its line. Both directions, re-armed by
// the addon as it consumes each event, one event in flight per line. The addon's tripwire
// (native/tripwire.h) polls that ring buffer and calls each line's callback from there.
//
// A line compares the cgroup's counter ('usage') or the kubelet's working set ('working-set'),
// which the program computes at the charge itself: usage - inactive_file for a cgroup, anon +
// file - inactive_file for the v2 root (enum tripwire_measure in memcg_tripwire.h). The
// program's numbers may be stale (memcg statistics fold lazily), so they only wake: a standing
// order's kill waits for the addon's order thread to read the kubelet's numbers fresh.

const PAGE = 4096;
/** How often a line on the v2 root re-measures the gap between the machine's usage and the root's counter. */
const ROOT_CALIBRATION_MS = 1000;

let availability: string | null | undefined;

/**
 * Null when the tripwire works here, else why not, in one line: addon missing, left out of the
 * build (EVICTD_TRIPWIRE=0), libbpf.so.1 missing or too old, or the kernel refused the program
 * (no BTF, no CAP_BPF/CAP_PERFMON, kernel symbols it cannot resolve, as on this host's 6.18).
 * Loads the program on first call (once per thread).
 */
export function tripwireUnavailable(): string | null {
  if (availability !== undefined) return availability;
  if (!nativeAvailable()) return (availability = `native addon unavailable: ${nativeLoadError()?.message}`);
  const a = addon();
  if (!a.tripwireStatus().built || a.tripwireLoad === undefined) {
    return (availability = 'tripwire left out of this build (the addon was built with EVICTD_TRIPWIRE=0)');
  }
  try {
    a.tripwireLoad();
    availability = null;
  } catch (err) {
    const e = err as Error & { stage?: string };
    availability = e.stage === 'libbpf' ? e.message : `BPF program refused at ${e.stage ?? 'load'}: ${e.message}`;
  }
  return availability;
}

/** The addon's tripwire status (built, loaded, load and attach times, root counter, counts). */
export function tripwireStatus(): TripwireStatus {
  return nativeAvailable() ? addon().tripwireStatus() : { built: false, loaded: false };
}

/** The root memcg's page counter as the program last saw it, or null (not loaded, no charge yet). */
export function rootCounterBytes(): number | null {
  return tripwireStatus().rootUsageBytes ?? null;
}

function checkBytes(value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`thresholdBytes: ${JSON.stringify(value)}: must be a positive integer number of bytes`);
}

class TripwireWatcher extends NativeBackedWatcher<NativeTripwireLine> implements ThresholdWatcher {
  readonly lineMechanism = 'bpf-tripwire' as const;
  private bytes: number;
  /** Root usage lines only: machine usage minus the root counter, added to the counter to compare with the line. */
  private offset = 0;
  private calibrated = false;
  private calibration: NodeJS.Timeout | undefined;
  private companion: Watcher | undefined;

  /** Reads this line's measure now, to arm it on the right side (null: the addon knows). */
  private readonly side: (() => number) | null;

  constructor(
    private readonly cgroupDir: string,
    private readonly root: boolean,
    thresholdBytes: number,
    readonly measure: LineMeasure,
  ) {
    const id = fs.statSync(cgroupDir).ino;
    // The root's usage is calibrated against the machine's; a working set needs no calibration:
    // the program computes the kubelet's formula, from counters at most a fold behind.
    const calibrating = root && measure === 'usage';
    const code = measure === 'usage' ? 0 : root ? 2 : 1;
    const side = calibrating ? null : measureReader(cgroupDir, measure).read;
    const state = { offset: 0, calibrated: true };
    super('memcg-threshold', root ? cgroupDir : path.join(cgroupDir, 'memory.current'), (cb: NativeCallback, onArmed) => {
      Object.assign(state, TripwireWatcher.calibrate(calibrating, cgroupDir));
      const native = addon().openTripwire!(cgroupDir, id, code, TripwireWatcher.counterLine(thresholdBytes, state.offset), side ? side() : -1, cb);
      onArmed();
      return native;
    });
    this.side = side;
    this.bytes = thresholdBytes;
    this.offset = state.offset;
    this.calibrated = state.calibrated;
    if (calibrating) {
      // The gap drifts (kernel memory charged to the counter, processes in the root cgroup): keep
      // the counter's line where the root's usage line is. Reading memory.stat once a second
      // only places the line; the crossing itself is the program's.
      this.calibration = setInterval(() => this.recalibrate(), ROOT_CALIBRATION_MS);
      this.calibration.unref();
    } else if (!root) {
      // The program cannot tell that a cgroup was removed: cgroup.events' watcher can (ENODEV).
      this.companion = watchCgroupEvents(path.join(cgroupDir, 'cgroup.events'));
      this.companion.unref();
      this.companion.on('error', (err: Error) => this.endWith(err));
    }
  }

  get thresholdBytes(): number {
    return this.bytes;
  }

  rearm(thresholdBytes: number): Promise<void> {
    checkBytes(thresholdBytes);
    if (this.closed) throw new Error(`${this.kind} watcher on ${this.source} is closed`);
    this.bytes = thresholdBytes;
    const value = this.side ? this.side() : -1;
    this.current().rearm(TripwireWatcher.counterLine(thresholdBytes, this.offset), value);
    // A working-set line is re-armed after every pass that found its signal unmet (see
    // src/agent/arming.ts). Re-arming resets the line's in-flight event (a new generation): a
    // crossing the program reported an instant ago is dropped as stale and, the fresh value being
    // past the line, the line now waits for the way down. Report that crossing here instead. (A
    // usage line keeps the v1 eventfd's contract: re-armed past usage, it waits silently.)
    if (this.measure === 'working-set' && value >= thresholdBytes) {
      const counters = { usage_bytes: value, line_bytes: thresholdBytes, above: 1 };
      const at = process.hrtime.bigint();
      setImmediate(() => {
        if (!this.closed) this.emit('event', { source: this.source, kind: this.kind, count: 1, monotonicNs: at, counters } satisfies KernelEvent);
      });
    }
    return Promise.resolve();
  }

  setOrder(podCgroupDir: string | null, ttlMs = 1000, workingSetLineBytes?: number, tag?: string): boolean {
    if (this.closed) return false;
    if (podCgroupDir === null) return this.current().setOrder(null);
    // The kill is confirmed on the kubelet's working set against this line (a working-set line's
    // own bytes); a usage line does not know where the kubelet's line is.
    const wsLine = workingSetLineBytes ?? (this.measure === 'working-set' ? this.bytes : undefined);
    if (wsLine === undefined) throw new TypeError('setOrder: a usage line needs workingSetLineBytes');
    checkBytes(wsLine);
    // cgroup.kill (Linux 5.14): one write kills every process of the pod's cgroup tree.
    const killPath = path.join(podCgroupDir, 'cgroup.kill');
    if (!fs.existsSync(killPath)) return false;
    return this.current().setOrder(
      killPath,
      ttlMs,
      (text: string, written: string) => this.emit('order', orderEventOf(text, written)),
      this.cgroupDir,
      wsLine,
      tag ?? '',
    );
  }

  override close(): Promise<void> {
    this.stopCompanions();
    return super.close();
  }

  protected override adjust(event: KernelEvent): KernelEvent {
    if (!this.root || this.measure !== 'usage' || event.counters === undefined) return event;
    const c = event.counters;
    // Report in the line's terms (machine usage); keep the raw counter beside it.
    c.counter_bytes = c.usage_bytes;
    c.usage_bytes += this.offset;
    c.line_bytes += this.offset;
    // Armed before the program had seen the root counter: now it has.
    if (!this.calibrated) this.recalibrate();
    return event;
  }

  private endWith(err: Error): void {
    this.stopCompanions();
    this.fail(err);
  }

  private stopCompanions(): void {
    if (this.calibration !== undefined) clearInterval(this.calibration);
    this.calibration = undefined;
    void this.companion?.close();
    this.companion = undefined;
  }

  private recalibrate(): void {
    if (this.closed) return;
    const { offset, calibrated } = TripwireWatcher.calibrate(true, this.cgroupDir);
    if (!calibrated) return;
    const moved = Math.abs(offset - this.offset) >= PAGE * 64 || !this.calibrated;
    this.offset = offset;
    this.calibrated = true;
    if (moved) this.current().rearm(TripwireWatcher.counterLine(this.bytes, offset), -1);
  }

  /** A root usage line: the gap between the root's usage (the kubelet's: anon + file) and the root counter (0 elsewhere). */
  private static calibrate(calibrating: boolean, rootDir: string): { offset: number; calibrated: boolean } {
    if (!calibrating) return { offset: 0, calibrated: true };
    const counter = rootCounterBytes();
    const machine = rootUsageBytes(rootDir);
    // Counter not seen yet: put the line at zero (fires at the next charge, which calibrates).
    if (counter === null) return { offset: machine, calibrated: false };
    return { offset: machine - counter, calibrated: true };
  }

  private static counterLine(thresholdBytes: number, offset: number): number {
    return Math.max(PAGE, thresholdBytes - offset);
  }
}

/**
 * A line on a cgroup v2 memory cgroup, watched by the tripwire: fires when `measure` crosses
 * `thresholdBytes` up or down, within one charge batch (64 pages per CPU) of the crossing.
 * 'usage' compares the counter; on the v2 root that line is in the kubelet's usage terms (the
 * root's memory.stat anon + file) and is placed on the root's page counter by their measured gap. 'working-set'
 * compares the kubelet's working set, computed by the program at each charge (see above).
 * Events carry usage_bytes (the measure) and line_bytes (at the crossing), charge_began_ns (when
 * the crossing charge began: no reader can see it past the line before), fired_ns (the program's
 * CLOCK_MONOTONIC stamp), above (1 up, 0 down) and, on a root usage line, counter_bytes.
 * Throws when the tripwire is unavailable (see tripwireUnavailable()).
 */
export function watchTripwire(cgroupDir: string, thresholdBytes: number, measure: LineMeasure = 'usage'): ThresholdWatcher {
  checkBytes(thresholdBytes);
  const why = tripwireUnavailable();
  if (why !== null) throw new Error(`memcg tripwire unavailable: ${why}`);
  return new TripwireWatcher(cgroupDir, isCgroup2Root(cgroupDir), thresholdBytes, measure);
}
