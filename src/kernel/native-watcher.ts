import { EventEmitter } from 'node:events';
import { parseCounters } from './counters';
import type { NativeCallback, NativeWatcher } from './addon';
import type { KernelEvent, Watcher, WatchKind } from './types';

/** Opens one native source with the given callback. */
export type NativeOpener = (cb: NativeCallback) => NativeWatcher;

/**
 * The TS face of one native source. Runs on the loop of the thread that created it. It can swap
 * its native source for a new one (threshold re-arm): the new source is armed and polling before
 * the old one is closed, and events from the old one after the swap are dropped.
 */
export class NativeBackedWatcher extends EventEmitter implements Watcher {
  readonly mechanism = 'native' as const;
  private native: NativeWatcher;
  private refed = true;
  private paused = false;
  private state: 'open' | 'failed' | 'closed' = 'open';
  private closing: Promise<void> | undefined;

  constructor(
    readonly kind: WatchKind,
    readonly source: string,
    open: NativeOpener,
    /** The counter name for files that hold one number (usage_in_bytes). */
    private readonly singleCounter = 'value',
  ) {
    super();
    this.native = this.openNative(open);
  }

  get closed(): boolean {
    return this.state !== 'open';
  }

  start(): void {
    if (this.state !== 'open') throw new Error(`${this.kind} watcher on ${this.source} is closed`);
    this.paused = false;
    this.native.start();
  }

  stop(): void {
    this.paused = true;
    if (this.state === 'open') this.native.stop();
  }

  ref(): this {
    this.refed = true;
    if (this.state === 'open') this.native.ref();
    return this;
  }

  unref(): this {
    this.refed = false;
    if (this.state === 'open') this.native.unref();
    return this;
  }

  close(): Promise<void> {
    if (this.closing === undefined) {
      if (this.state === 'open') this.state = 'closed';
      const native = this.native;
      this.closing = new Promise<void>((resolve) => native.close(resolve));
    }
    return this.closing;
  }

  /** Arms a new source, then releases the old one: no moment without a registration. */
  protected replaceNative(open: NativeOpener): void {
    if (this.state !== 'open') throw new Error(`${this.kind} watcher on ${this.source} is closed`);
    const old = this.native;
    this.native = this.openNative(open);
    old.close();
  }

  private openNative(open: NativeOpener): NativeWatcher {
    // The callback runs on a later loop turn, after `native` is assigned.
    const native: NativeWatcher = open((err, count, monotonicNs, text) => {
      // Late events from a source replaced by rearm(), or delivered after close(), are dropped.
      if (native !== this.native || this.state !== 'open') return;
      if (err) {
        this.state = 'failed';
        this.emit('error', err);
        return;
      }
      const event: KernelEvent = { source: this.source, kind: this.kind, count: count ?? 1, monotonicNs: monotonicNs ?? 0n };
      if (text !== undefined) event.counters = parseCounters(text, this.singleCounter);
      this.emit('event', event);
    });
    if (!this.refed) native.unref();
    if (!this.paused) native.start();
    return native;
  }
}
