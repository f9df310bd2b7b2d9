import { EventEmitter } from 'node:events';
import { parseCounters } from './counters';
import type { NativeCallback, NativeWatcher } from './addon';
import type { KernelEvent, Watcher, WatchKind } from './types';

/**
 * Opens one native source. `onArmed` must be called once the kernel registration is in force:
 * memcg events pass it to the addon (their registration completes off the loop); PSI triggers
 * and kernfs files are armed when the open returns.
 */
export type NativeOpener<N extends NativeWatcher = NativeWatcher> = (cb: NativeCallback, onArmed: () => void) => N;

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(err: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // The failure also reaches 'error' listeners: a ready() nobody awaits must not crash the process.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/**
 * The TS face of one native source; runs on the loop of the thread that created it. A threshold
 * re-arm swaps the source: the new one is opened, and only once the kernel has it in force is
 * the old one closed, so there is no moment without a registration. Until then the old one keeps
 * reporting.
 */
export class NativeBackedWatcher<N extends NativeWatcher = NativeWatcher> extends EventEmitter implements Watcher {
  readonly mechanism = 'native' as const;
  private native: N;
  private pending: { native: N; armed: Deferred } | undefined;
  private armed: Deferred;
  private refed = true;
  private paused = false;
  private state: 'open' | 'failed' | 'closed' = 'open';
  private closing: Promise<void> | undefined;

  constructor(
    readonly kind: WatchKind,
    readonly source: string,
    open: NativeOpener<N>,
    /** The counter name for files that hold one number (usage_in_bytes). */
    private readonly singleCounter = 'value',
  ) {
    super();
    this.armed = deferred();
    const armed = this.armed;
    this.native = this.openNative(open, () => armed.resolve());
  }

  get closed(): boolean {
    return this.state !== 'open';
  }

  /** Resolves once the kernel registration is in force (rejects if it failed). */
  ready(): Promise<void> {
    return this.pending?.armed.promise ?? this.armed.promise;
  }

  start(): void {
    if (this.state !== 'open') throw new Error(`${this.kind} watcher on ${this.source} is closed`);
    this.paused = false;
    this.native.start();
    this.pending?.native.start();
  }

  stop(): void {
    this.paused = true;
    if (this.state !== 'open') return;
    this.native.stop();
    this.pending?.native.stop();
  }

  ref(): this {
    this.refed = true;
    if (this.state === 'open') for (const n of this.natives()) n.ref();
    return this;
  }

  unref(): this {
    this.refed = false;
    if (this.state === 'open') for (const n of this.natives()) n.unref();
    return this;
  }

  close(): Promise<void> {
    if (this.closing === undefined) {
      if (this.state === 'open') this.state = 'closed';
      const natives = this.natives();
      this.pending?.armed.reject(new Error(`${this.kind} watcher on ${this.source} closed before it was armed`));
      this.closing = Promise.all(natives.map((n) => new Promise<void>((resolve) => n.close(resolve)))).then(() => undefined);
    }
    return this.closing;
  }

  /** Opens a replacement source; the current one is closed once the replacement is armed. */
  protected replaceNative(open: NativeOpener<N>): Promise<void> {
    if (this.state !== 'open') throw new Error(`${this.kind} watcher on ${this.source} is closed`);
    // A re-arm while another is in flight supersedes it.
    if (this.pending !== undefined) {
      this.pending.native.close();
      this.pending.armed.reject(new Error('superseded by a later rearm'));
    }
    const armed = deferred();
    const native: N = this.openNative(open, () => {
      if (this.pending?.native !== native || this.state !== 'open') return;
      const old = this.native;
      this.native = native;
      this.pending = undefined;
      old.close();
      armed.resolve();
    });
    this.pending = { native, armed };
    return armed.promise;
  }

  /** The native source in force (a tripwire re-arms it in place). */
  protected current(): N {
    return this.native;
  }

  /** Fails the watcher from outside the native callback (a companion source ended). */
  protected fail(err: Error): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    for (const n of this.natives()) n.close();
    this.pending?.armed.reject(err);
    this.armed.reject(err);
    this.emit('error', err);
  }

  /** An event from the current source, before it is emitted (a subclass may adjust it). */
  protected adjust(event: KernelEvent): KernelEvent {
    return event;
  }

  private natives(): N[] {
    return this.pending ? [this.native, this.pending.native] : [this.native];
  }

  private openNative(open: NativeOpener<N>, onArmed: () => void): N {
    // The callbacks run on later loop turns, after `native` is assigned.
    const native: N = open((err, count, monotonicNs, text) => {
      const current = native === this.native || native === this.pending?.native;
      if (!current || this.state !== 'open') return;
      if (err) {
        this.state = 'failed';
        for (const n of this.natives()) if (n !== native) n.close();
        this.pending?.armed.reject(err);
        this.armed.reject(err);
        this.emit('error', err);
        return;
      }
      this.emit('event', this.adjust(new NativeEvent(this.source, this.kind, count ?? 1, monotonicNs ?? 0n, text, this.singleCounter)));
    }, onArmed);
    if (!this.refed) native.unref();
    if (!this.paused) native.start();
    return native;
  }
}

/**
 * An event from a native source. The probe file's text becomes `counters` only when someone
 * reads them: the agent wakes on the event alone and decides on numbers it reads itself, so on
 * its hot path nothing is parsed. A class with the getter on its prototype, not a property
 * defined on each event: Object.defineProperty is a runtime call, measured at 140 us of a
 * cold delivery under emulation against 80 us for all of this.
 */
class NativeEvent implements KernelEvent {
  #text: string | undefined;
  readonly #single: string | undefined;
  #counters: Record<string, number> | undefined;

  constructor(
    readonly source: string,
    readonly kind: WatchKind,
    readonly count: number,
    readonly monotonicNs: bigint,
    text: string | undefined,
    single: string | undefined,
  ) {
    this.#text = text;
    this.#single = single;
  }

  get counters(): Record<string, number> | undefined {
    if (this.#counters === undefined && this.#text !== undefined) {
      this.#counters = parseCounters(this.#text, this.#single);
      this.#text = undefined;
    }
    return this.#counters;
  }
}
