/**
 * `--record FILE`: each pass's line (src/sim/recording.ts) appended to FILE. What the pass took in
 * and decided is put in words at the pass's end, after its actions and moved lines, so no kill
 * waits on it; its pods, most of the line, are made into text after it, in slices of at most
 * SLICE_MS on the event loop, so a wake-up that arrives meanwhile waits for one slice at most,
 * never for a line. A pass's pods are not changed after it (each pass joins them afresh; a spec
 * is replaced, never changed), so the line is the pass's. The write is buffered and asynchronous
 * (a write stream on the file), so nothing waits on the disk.
 *
 * Admission answers, given between passes, go through the same queue as lines of their own: an
 * answer lands after every pass line queued before it, so the file stays in the order things
 * happened (a replay gives an answer the conditions of the passes before it).
 *
 * Bounded: past `maxBytes` the file becomes FILE.1 (one earlier part is kept) and FILE starts
 * again with a header that carries the policy's state (KEP-5986's too), so each part replays exactly. A crash
 * loses the lines not yet made (the last pass's, or the last few) and leaves at most the last
 * line cut, which the reader leaves out.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { EvictionConfig, PolicyConfig } from '../policy/config';
import type { PolicyState } from '../policy/evaluate';
import type { ActivePod, FilesystemLayout, NodeCondition, PodSpec } from '../policy/types';
import { badValue, fileProblem } from '../errors';
import { admissionLine, recordedState, recordingHeader, type RecordedState } from '../sim/recording';
import { afterRelaxes, type MemoryPressureState, type RelaxResult } from '../policy/memory-pressure';
import { lineEnds, podText, SpecTexts, type LineEnds } from '../sim/recording-text';
import type { PassTrigger } from './controller';
import { msBetween, systemClock } from './clock';
import type { Decision } from './pass';
import type { Clock } from './ports';

/** How long one slice of line-making may hold the event loop, ms. */
const SLICE_MS = 0.5;
/** Pods made between two looks at the clock. */
const PODS_PER_LOOK = 8;
/**
 * Lines waiting to be made, at most: passes that follow each other faster than their lines are
 * made (a large node under pressure) would otherwise hold every pass's pods. The oldest is then
 * made at the pass, as a line was before it had slices.
 */
const MAX_PENDING = 3;

export interface RecorderOptions {
  path: string;
  maxBytes: number;
  eviction: EvictionConfig;
  policy: PolicyConfig;
  standingOrders: boolean;
  logger: Logger;
  /** the monotonic ns the recording's times count from */
  startNs: number;
  /** what an admission answer's time is read from: the agent's clock (the system's by default) */
  clock?: Pick<Clock, 'now'>;
}

/**
 * What recording cost: lines, bytes, the time spent making each line (at its pass and in the
 * slices after it, summed), and the longest slice (the longest a wake-up could wait on it).
 */
export interface RecorderStats {
  passes: number;
  bytes: number;
  parts: number;
  serializeMsTotal: number;
  serializeMsMax: number;
  sliceMsMax: number;
  /** lines made at a pass, the queue being full */
  madeAtPass: number;
  /** admission answers written */
  admissions: number;
}

/** A pass's line on its way to the file. */
interface PendingLine {
  ends: LineEnds;
  pods: readonly ActivePod[];
  /** how many pods are made; the line's bytes so far */
  made: number;
  chunks: Buffer[];
  bytes: number;
  layout: FilesystemLayout;
  /** the states before this pass: the header of a part this line starts carries them */
  stateBefore: StatesBetween | null;
  ms: number;
}

/** An admission answer's line, made when it was given, waiting behind the pass lines queued before it. */
interface PendingAdmission {
  text: string;
  /** the last pass's layout (null before the first) and the states after it: a part this line starts has them in its header */
  layout: FilesystemLayout | null;
  stateBefore: StatesBetween | null;
}

/** What a part's header carries of the passes before it: the policy's state, and KEP-5986's when it is on. */
interface StatesBetween {
  policy: PolicyState;
  pressure: MemoryPressureState | null;
}

type Pending = PendingLine | PendingAdmission;

const isAdmission = (p: Pending): p is PendingAdmission => 'text' in p;

/** The listed pods the pass did not rank (being stopped, confirmed): the brake's `present` beside the ranked. */
function otherUids(d: Decision): string[] {
  const ranked = new Set(d.ranked.map((j) => j.runtime.uid));
  return d.given.present.filter((u) => !ranked.has(u));
}

export class Recorder {
  readonly stats: RecorderStats = { passes: 0, bytes: 0, parts: 1, serializeMsTotal: 0, serializeMsMax: 0, sliceMsMax: 0, madeAtPass: 0, admissions: 0 };
  private stream: fs.WriteStream;
  private partBytes = 0;
  private layout: FilesystemLayout | null = null;
  /** the last pass's own layout (the header's may be an earlier one) */
  private lastLayout: FilesystemLayout | null = null;
  private lastState: StatesBetween | null = null;
  private readonly queue: Pending[] = [];
  /** pass lines in the queue (answers are made already: only these are bounded) */
  private pendingPasses = 0;
  private readonly specs = new SpecTexts();
  private scheduled = false;

  /** Opens (truncates) the file now: a path that cannot be written is refused at start, `--record` named. */
  constructor(private readonly o: RecorderOptions) {
    this.stream = this.open();
  }

  private open(): fs.WriteStream {
    let fd: number;
    try {
      fd = fs.openSync(this.o.path, 'w', 0o600);
    } catch (err) {
      throw badValue('--record', this.o.path, `cannot be written: ${fileProblem(err)}`);
    }
    const stream = fs.createWriteStream('', { fd });
    stream.on('error', (err) => this.o.logger.error({ err, path: this.o.path }, 'recording: write failed; recording stops'));
    return stream;
  }

  /** One pass, after its actions: what it took in and decided is put in words now, its pods after it. */
  pass(trigger: PassTrigger, d: Decision, relaxed: readonly RelaxResult[] = []): void {
    const t0 = performance.now();
    const o = this.o;
    const layout = d.observation.layout;
    if (this.layout === null) this.writeHeader(layout);
    const ends = lineEnds({
      atNs: d.given.now - o.startNs,
      startNs: o.startNs,
      wake: trigger.sources,
      node: d.observation.node,
      layout,
      // Only the brake reads them; a set, as a 10,000-pod node made this a quadratic second.
      otherUids: d.given.brakes ? otherUids(d) : [],
      noCgroup: d.ranked.filter((j) => !j.cgroup).map((j) => j.active.spec.uid),
      crossed: d.given.confirming.filter((c) => !c.reported).map((c) => c.order.threshold),
      confirmations: d.given.confirming,
      brakes: d.given.brakes,
      policy: o.policy,
      met: d.evaluation.thresholdsMet,
      conditions: d.evaluation.conditions,
      actions: d.actions,
      orders: d.orders,
      relaxed,
      ...(trigger.firstEventNs !== null ? { wakeMs: msBetween(trigger.firstEventNs, d.startedNs) } : {}),
      decideMs: msBetween(d.startedNs, d.stamps.decisionNs),
    });
    this.queue.push({
      ends,
      pods: d.ranked.map((j) => j.active),
      made: 0,
      chunks: [],
      bytes: 0,
      layout,
      stateBefore: this.lastState,
      ms: performance.now() - t0,
    });
    this.pendingPasses++;
    // KEP-5986's, as the agent holds it after the pass's relaxes (and the replay will)
    this.lastState = { policy: d.evaluation.state, pressure: d.given.pressure ? afterRelaxes(d.given.pressure, relaxed) : null };
    this.lastLayout = layout;
    if (this.pendingPasses > MAX_PENDING) this.makeOldest();
    this.schedule();
  }

  /**
   * One admission answer, as it is given: its line is made now (one small pod) and written at
   * once when no pass line waits, else after the pass lines queued. Its time is read here, on
   * the agent's clock: the answer was given an instant ago, on this same turn of the loop.
   */
  admission(pod: PodSpec, conditions: readonly NodeCondition[], decision: { admit: boolean; reason?: string }): void {
    const atNs = Number((this.o.clock ?? systemClock).now()) - this.o.startNs;
    const line: PendingAdmission = {
      text: JSON.stringify(admissionLine(Math.max(0, atNs), pod, conditions, decision)) + '\n',
      layout: this.lastLayout,
      stateBefore: this.lastState,
    };
    if (this.queue.length === 0 && this.layout !== null) return this.finishAdmission(line);
    // Before the first pass there is no header yet (the pass observes the layout): the answer
    // waits in the queue, which is made only once the header is out. The agent answers nothing
    // before its first pass (its conditions are unknown), so this is a guard, not a path.
    this.queue.push(line);
    this.schedule();
  }

  /** The oldest pass line (and the answers queued before it), made whole now. */
  private makeOldest(): void {
    this.stats.madeAtPass++;
    this.makeLines(Infinity, 1);
  }

  /** The next slice, on the loop's next turn (a pass woken meanwhile goes first or right after). */
  private schedule(): void {
    if (this.scheduled || !this.writable()) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const t0 = performance.now();
      this.makeLines(SLICE_MS);
      this.stats.sliceMsMax = Math.max(this.stats.sliceMsMax, performance.now() - t0);
      this.schedule();
    });
  }

  /** Whether a queued line can go to the file: there is one, and the header is out. */
  private writable(): boolean {
    return this.queue.length > 0 && this.layout !== null;
  }

  /**
   * Makes the queued lines, oldest first, for about `budgetMs` (or `lines` pass lines), and
   * writes each one made whole; an answer, made already, is written when its turn comes.
   */
  private makeLines(budgetMs: number, lines = Infinity): void {
    const deadline = performance.now() + budgetMs;
    let done = 0;
    while (done < lines && this.writable() && performance.now() < deadline) {
      const line = this.queue[0]!;
      if (isAdmission(line)) {
        this.finishAdmission(line);
        this.queue.shift();
        continue;
      }
      try {
        if (!this.makePods(line, deadline)) break;
        this.finish(line);
      } catch (err) {
        // A line that cannot be made is left out; the recording, like the pass, goes on.
        this.o.logger.warn({ err }, 'recording: a pass could not be recorded');
      }
      this.queue.shift();
      this.pendingPasses--;
      done++;
    }
  }

  /** An answer's line, in the part it lands in (a new one when this one would pass the size bound). */
  private finishAdmission(a: PendingAdmission): void {
    const bytes = Buffer.byteLength(a.text);
    if (this.partBytes > 0 && this.partBytes + bytes > this.o.maxBytes) this.rotate(a.layout ?? this.layout!, a.stateBefore);
    this.write(a.text);
    this.stats.admissions++;
  }

  /** The line's pods, until the deadline: true once all are made. */
  private makePods(line: PendingLine, deadline: number): boolean {
    const t0 = performance.now();
    let text = line.made === 0 ? line.ends.head : '';
    let i = line.made;
    while (i < line.pods.length) {
      text += (i > 0 ? ',' : '') + podText(line.pods[i]!, this.specs);
      i++;
      if (i % PODS_PER_LOOK === 0 && performance.now() >= deadline) break;
    }
    line.made = i;
    // Made bytes here, a slice at a time: the stream would make them of the whole line at once.
    this.addChunk(line, text);
    line.ms += performance.now() - t0;
    return i === line.pods.length;
  }

  private addChunk(line: PendingLine, text: string): void {
    const buf = Buffer.from(text);
    line.chunks.push(buf);
    line.bytes += buf.length;
  }

  /** The line's end, in the part it lands in (a new one when this one would pass the size bound), and its write. */
  private finish(line: PendingLine): void {
    const t0 = performance.now();
    if (this.partBytes > 0 && this.partBytes + line.bytes + Buffer.byteLength(line.ends.tail(this.layout!)) + 1 > this.o.maxBytes)
      this.rotate(line.layout, line.stateBefore);
    this.addChunk(line, line.ends.tail(this.layout!) + '\n');
    this.specs.endPass();
    // Not corked: a writev of the whole line was measured at 1 ms on the loop, where the stream
    // gathers the chunks behind the first write on its own.
    for (const c of line.chunks) this.stream.write(c);
    this.partBytes += line.bytes;
    this.stats.bytes += line.bytes;
    this.stats.passes++;
    const ms = line.ms + performance.now() - t0;
    this.stats.serializeMsTotal += ms;
    this.stats.serializeMsMax = Math.max(this.stats.serializeMsMax, ms);
  }

  private write(text: string): void {
    const buf = Buffer.from(text);
    this.partBytes += buf.length;
    this.stats.bytes += buf.length;
    this.stream.write(buf);
  }

  /** Resolves once every pass so far is made into its line and handed to the file (as between two live passes, when the loop idles). */
  async flushed(): Promise<void> {
    while (this.writable() || this.stream.writableLength > 0) await new Promise((r) => setImmediate(r));
  }

  /** FILE becomes FILE.1; FILE starts again, its header carrying the policy's state before the line that starts it. */
  private rotate(layout: FilesystemLayout, stateBefore: StatesBetween | null): void {
    const o = this.o;
    this.stream.end();
    this.dropEarlierPart();
    try {
      fs.renameSync(o.path, `${o.path}.1`);
    } catch (err) {
      o.logger.warn({ err, path: o.path }, 'recording: could not keep the previous part');
    }
    this.stream = this.open();
    this.partBytes = 0;
    this.stats.parts++;
    const state = stateBefore ? recordedState(o.policy, layout, stateBefore.policy, o.startNs, stateBefore.pressure) : null;
    this.writeHeader(layout, { part: this.stats.parts, ...(state ? { state } : {}) });
  }

  /** A part's header: the layout it says is the one its lines compare theirs with. */
  private writeHeader(layout: FilesystemLayout, more: { part?: number; state?: RecordedState } = {}): void {
    const o = this.o;
    this.layout = layout;
    this.write(
      JSON.stringify(
        recordingHeader(o.eviction, layout, {
          startedAt: new Date(),
          standingOrders: o.standingOrders,
          pressureTransitionNs: o.policy.pressureTransitionPeriodNs,
          ...more,
        }),
      ) + '\n',
    );
  }

  /**
   * FILE.1 out of the way, deleted in the background: a file as large as the size bound frees its
   * blocks in the call that deletes it (tens of ms measured), which renaming FILE over it would do
   * on the event loop.
   */
  private dropEarlierPart(): void {
    const earlier = `${this.o.path}.1`;
    const dropped = `${earlier}.old`;
    const warn = (err: NodeJS.ErrnoException | null) => {
      if (err && err.code !== 'ENOENT') this.o.logger.warn({ err, path: earlier }, 'recording: could not delete the earlier part');
    };
    try {
      fs.renameSync(earlier, dropped);
    } catch (err) {
      return warn(err as NodeJS.ErrnoException);
    }
    fs.unlink(dropped, warn);
  }

  /** Makes the lines still to make, at once, then flushes and closes the file. */
  close(): Promise<void> {
    this.makeLines(Infinity);
    return new Promise((resolve) => this.stream.end(() => resolve()));
  }
}
