/**
 * `--record FILE`: each pass's line (src/sim/recording.ts) appended to FILE. The line is made
 * after the pass has issued its actions and moved its lines, so no kill waits on it; the write
 * is buffered and asynchronous (a write stream on the file), so no pass waits on the disk.
 *
 * Bounded: past `maxBytes` the file becomes FILE.1 (one earlier part is kept) and FILE starts
 * again with a header that carries the policy's state, so each part replays exactly. A crash
 * leaves at most the last line cut, which the reader leaves out.
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { EvictionConfig, PolicyConfig } from '../policy/config';
import type { PolicyState } from '../policy/evaluate';
import type { FilesystemLayout } from '../policy/types';
import { badValue } from '../errors';
import { passLine, recordedState, recordingHeader } from '../sim/recording';
import type { PassTrigger } from './controller';
import { msBetween } from './clock';
import type { Decision } from './pass';

export interface RecorderOptions {
  path: string;
  maxBytes: number;
  eviction: EvictionConfig;
  policy: PolicyConfig;
  standingOrders: boolean;
  logger: Logger;
  /** the monotonic ns the recording's times count from */
  startNs: number;
}

/** What recording cost: lines, bytes, and the time spent making lines (after the passes' actions). */
export interface RecorderStats {
  passes: number;
  bytes: number;
  parts: number;
  serializeMsTotal: number;
  serializeMsMax: number;
}

/** The listed pods the pass did not rank (being stopped, confirmed): the brake's `present` beside the ranked. */
function otherUids(d: Decision): string[] {
  const ranked = new Set(d.ranked.map((j) => j.runtime.uid));
  return d.given.present.filter((u) => !ranked.has(u));
}

export class Recorder {
  readonly stats: RecorderStats = { passes: 0, bytes: 0, parts: 1, serializeMsTotal: 0, serializeMsMax: 0 };
  private stream: fs.WriteStream;
  private partBytes = 0;
  private layout: FilesystemLayout | null = null;
  private lastState: PolicyState | null = null;

  /** Opens (truncates) the file now: a path that cannot be written is refused at start, `--record` named. */
  constructor(private readonly o: RecorderOptions) {
    this.stream = this.open();
  }

  private open(): fs.WriteStream {
    let fd: number;
    try {
      fd = fs.openSync(this.o.path, 'w', 0o600);
    } catch (err) {
      throw badValue('--record', this.o.path, `cannot be written: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const stream = fs.createWriteStream('', { fd });
    stream.on('error', (err) => this.o.logger.error({ err, path: this.o.path }, 'recording: write failed; recording stops'));
    return stream;
  }

  /** One pass, after its actions: its line is made and queued. */
  pass(trigger: PassTrigger, d: Decision): void {
    const t0 = process.hrtime.bigint();
    const o = this.o;
    const layout = d.observation.layout;
    if (this.layout === null) {
      this.layout = layout;
      this.write(recordingHeader(o.eviction, layout, { startedAt: new Date(), standingOrders: o.standingOrders, pressureTransitionNs: o.policy.pressureTransitionPeriodNs }));
    }
    const line = passLine({
      atNs: d.given.now - o.startNs,
      startNs: o.startNs,
      wake: trigger.sources,
      node: d.observation.node,
      layout,
      headerLayout: this.layout,
      pods: d.ranked.map((j) => j.active),
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
      ...(trigger.firstEventNs !== null ? { wakeMs: msBetween(trigger.firstEventNs, d.startedNs) } : {}),
      decideMs: msBetween(d.startedNs, d.stamps.decisionNs),
    });
    const text = JSON.stringify(line) + '\n';
    if (this.partBytes > 0 && this.partBytes + text.length > o.maxBytes) this.rotate(layout);
    this.write(line, text);
    this.lastState = d.evaluation.state;
    this.stats.passes++;
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    this.stats.serializeMsTotal += ms;
    this.stats.serializeMsMax = Math.max(this.stats.serializeMsMax, ms);
  }

  private write(obj: unknown, text = JSON.stringify(obj) + '\n'): void {
    const bytes = Buffer.byteLength(text);
    this.partBytes += bytes;
    this.stats.bytes += bytes;
    this.stream.write(text);
  }

  /** Resolves once every line queued so far is handed to the file (as between two live passes, when the loop idles). */
  async flushed(): Promise<void> {
    while (this.stream.writableLength > 0) await new Promise((r) => setImmediate(r));
  }

  /** FILE becomes FILE.1; FILE starts again, its header carrying the policy's state. */
  private rotate(layout: FilesystemLayout): void {
    const o = this.o;
    this.stream.end();
    try {
      fs.renameSync(o.path, `${o.path}.1`);
    } catch (err) {
      o.logger.warn({ err, path: o.path }, 'recording: could not keep the previous part');
    }
    this.stream = this.open();
    this.partBytes = 0;
    this.stats.parts++;
    this.layout = layout;
    const state = this.lastState ? recordedState(o.policy, layout, this.lastState, o.startNs) : undefined;
    this.write(recordingHeader(o.eviction, layout, { startedAt: new Date(), standingOrders: o.standingOrders, pressureTransitionNs: o.policy.pressureTransitionPeriodNs, part: this.stats.parts, ...(state ? { state } : {}) }));
  }

  /** Flushes and closes the file. */
  close(): Promise<void> {
    return new Promise((resolve) => this.stream.end(() => resolve()));
  }
}
