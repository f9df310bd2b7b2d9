import { EventEmitter } from 'node:events';
import type { KernelEvent, WatchKind } from './types';

/**
 * What every watcher that reads a file on a JS timer shares (the fixed pollers of polling.ts and
 * the adaptive poller): the lifecycle (start, stop, close, ref, unref), one timer at a time, and
 * the failure rule (a read that throws ends the watch with 'error'). A subclass reads in poll()
 * and says how long to wait before the next read.
 */
export abstract class TimerWatcher extends EventEmitter {
  readonly mechanism = 'polling' as const;
  private timer: NodeJS.Timeout | undefined;
  private refed = true;
  private running = false;
  private state: 'open' | 'failed' | 'closed' = 'open';

  constructor(
    readonly kind: WatchKind,
    readonly source: string,
  ) {
    super();
  }

  get closed(): boolean {
    return this.state !== 'open';
  }

  ready(): Promise<void> {
    return Promise.resolve();
  }

  start(): void {
    if (this.state !== 'open') throw new Error(`${this.kind} poller on ${this.source} is closed`);
    if (this.running) return;
    this.running = true;
    this.schedule(this.firstDelayMs());
  }

  stop(): void {
    this.running = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  close(): Promise<void> {
    if (this.state === 'open') this.state = 'closed';
    this.stop();
    return Promise.resolve();
  }

  ref(): this {
    this.refed = true;
    this.timer?.ref();
    return this;
  }

  unref(): this {
    this.refed = false;
    this.timer?.unref();
    return this;
  }

  /** The delay before the first read after start(). */
  protected abstract firstDelayMs(): number;

  /** One read: emits what it found (see emitEvent) and returns the delay before the next read. */
  protected abstract poll(): number;

  /** Reads again now, replacing the planned wait (a moved line changes the plan). */
  protected replan(): void {
    if (this.running) this.schedule(0);
  }

  /** Emits one event stamped now: call it once the value is read, never before. */
  protected emitEvent(counters: Record<string, number>, monotonicNs = process.hrtime.bigint()): void {
    const event: KernelEvent = { source: this.source, kind: this.kind, count: 1, monotonicNs, counters };
    this.emit('event', event);
  }

  private schedule(delayMs: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), delayMs);
    if (!this.refed) this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.running) return;
    let next: number;
    try {
      next = this.poll();
    } catch (err) {
      this.state = 'failed';
      this.stop();
      this.emit('error', err);
      return;
    }
    // A listener may have stopped or closed the watcher from inside the event.
    if (this.running && this.state === 'open') this.schedule(next);
  }
}
