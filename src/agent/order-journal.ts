/**
 * Standing orders on disk: a kill an order thread writes must outlive a crash of
 * evictd before the JS loop hears of it, or the kubelet restarts the pod in place with no Evicted
 * event and the pressure comes back with it.
 *
 * Two files in the state dir, both root's and 0600:
 * - `standing-orders.json`: every order placed since the last start, written (atomically) before
 *   the mechanism holds it: the pod, its sandbox and the eviction it stands for (signal, message,
 *   annotations, grace), under the order's tag. Refreshes of the same order write nothing.
 * - `order-uses.log`: the order threads append `use <tag> <CLOCK_MONOTONIC ns>` before each kill
 *   (native/use_log.h); the agent appends `done <tag>` once the confirming pass has put the
 *   eviction in the eviction journal (evictions.json), which finishes it from then on.
 * At start, every use without its `done`, of an order of this boot, becomes an eviction to finish
 * (the sandbox stopped, the eviction reported) unless the eviction journal holds that pod already;
 * then both files start afresh.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { eventNameAt } from '../policy/messages';
import { currentBootId } from '../node/boot-id';
import { readStateFile, writeStateFile } from '../node/state-file';
import type { OrderChoice } from '../policy/standing-order';
import { lineKey } from './memory-lines';
import type { JournalEntry } from './eviction-journal';

export const ORDERS_FILE = 'standing-orders.json';
export const USES_FILE = 'order-uses.log';
/** Orders kept on file at most: the oldest go first (one per line and pod near the line is typical). */
const MAX_ORDERS = 64;
/** What a start reads of the uses log at most: a use is a line of under 200 bytes. */
const MAX_USES_BYTES = 1024 * 1024;

/** An order as placed: the eviction it stands for, but its time (the use's). */
export type OrderEntry = Omit<JournalEntry, 'atMs' | 'podEventName'> & { tag: string };

interface FileShape {
  version: 1;
  bootId: string;
  orders: OrderEntry[];
}

/** The tag of the order on `line` for pod `uid`: one field of the uses log (native/use_log.h's alphabet, 160 at most). */
export function orderTag(line: string, uid: string): string {
  return `${line}/${uid}`.replace(/[^A-Za-z0-9._:/-]/g, '_').slice(0, 160);
}

/** An order's tag: its line (the arming's key) and its pod. */
export function tagOf(c: Pick<OrderChoice, 'signal' | 'thresholdIndex' | 'pod'>): string {
  return orderTag(lineKey(c.signal, c.thresholdIndex), c.pod.uid);
}

export class OrderJournal {
  readonly ordersFile: string;
  readonly usesFile: string;
  private readonly orders = new Map<string, OrderEntry>();
  private readonly bootId: string;

  constructor(private readonly o: { stateDir: string; logger: Logger; bootId?: string; monotonicNs?: () => bigint }) {
    this.ordersFile = path.join(o.stateDir, ORDERS_FILE);
    this.usesFile = path.join(o.stateDir, USES_FILE);
    this.bootId = o.bootId ?? currentBootId();
  }

  /**
   * The uses a previous run of this boot left unfinished, as evictions to finish (`known`: pods
   * the eviction journal finishes already), oldest first; both files then start afresh.
   */
  takeUsed(known: ReadonlySet<string>): JournalEntry[] {
    const placed = this.readOrders();
    const uses = this.readUses();
    const out: JournalEntry[] = [];
    const nowNs = (this.o.monotonicNs ?? process.hrtime.bigint)();
    for (const [tag, ns] of uses) {
      const order = placed.get(tag);
      if (!order) {
        this.o.logger.error({ tag, file: this.usesFile }, 'standing order used with no order on file: its pod cannot be named');
        continue;
      }
      if (known.has(order.pod.uid)) continue;
      // The use's time on the wall clock: the same boot, so the monotonic clocks compare.
      const atMs = Date.now() - Math.max(0, Number((nowNs - ns) / 1_000_000n));
      const { tag: _tag, ...rest } = order;
      out.push({ ...rest, atMs, podEventName: eventNameAt(order.pod.name, BigInt(atMs) * 1_000_000n) });
    }
    this.orders.clear();
    this.persist();
    try {
      fs.rmSync(this.usesFile, { force: true });
    } catch (err) {
      this.o.logger.error({ file: this.usesFile, err }, 'standing order uses log could not be cleared');
    }
    return out.sort((a, b) => a.atMs - b.atMs);
  }

  /**
   * Gives the order threads the uses log's path to open (`setLog`), its directory made first
   * (0700, as every state file's). Where that fails, orders still kill at the line; only a crash
   * before a use is confirmed would lose its report: said, not fatal.
   */
  openUsesLog(setLog: (file: string) => void): void {
    try {
      fs.mkdirSync(path.dirname(this.usesFile), { recursive: true, mode: 0o700 });
      setLog(this.usesFile);
    } catch (err) {
      this.o.logger.error({ err, file: this.usesFile }, 'standing order uses log unavailable: a kill is on disk only once confirmed');
    }
  }

  /** An order about to be placed: on disk first (written only when this tag is new or its eviction changed). */
  placed(entry: OrderEntry): void {
    const had = this.orders.get(entry.tag);
    if (had && had.sandboxId === entry.sandboxId && had.signal === entry.signal && had.message === entry.message) return;
    this.orders.delete(entry.tag);
    this.orders.set(entry.tag, entry);
    while (this.orders.size > MAX_ORDERS) this.orders.delete(this.orders.keys().next().value!);
    this.persist();
  }

  /** The use of `tag` is in the eviction journal now: nothing left to finish from here. */
  done(tag: string): void {
    try {
      const fd = fs.openSync(this.usesFile, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
      try {
        fs.writeSync(fd, `done ${tag}\n`);
      } finally {
        fs.closeSync(fd);
      }
    } catch (err) {
      // The eviction journal has it: at worst the next start finds the pod there and skips it.
      this.o.logger.error({ file: this.usesFile, err, tag }, 'standing order uses log could not be written');
    }
  }

  private readOrders(): Map<string, OrderEntry> {
    const out = new Map<string, OrderEntry>();
    let parsed: FileShape;
    try {
      parsed = JSON.parse(readStateFile(this.ordersFile)) as FileShape;
      if (parsed.version !== 1 || !Array.isArray(parsed.orders)) throw new Error('not a version 1 file');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.o.logger.error({ file: this.ordersFile, err: err instanceof Error ? err.message : String(err) }, 'standing orders file unreadable; ignored');
      return out;
    }
    if (parsed.bootId !== this.bootId) return out;
    for (const e of parsed.orders) {
      if (
        typeof e?.tag === 'string' &&
        typeof e.pod?.uid === 'string' &&
        typeof e.pod.name === 'string' &&
        typeof e.sandboxId === 'string' &&
        typeof e.signal === 'string'
      )
        out.set(e.tag, e);
    }
    return out;
  }

  /** Each used tag without a `done` after it, with its use's CLOCK_MONOTONIC ns, in order. */
  private readUses(): Map<string, bigint> {
    let text: string;
    try {
      text = readStateFile(this.usesFile, MAX_USES_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.o.logger.error({ file: this.usesFile, err }, 'standing order uses log unreadable; ignored');
      return new Map();
    }
    const open = new Map<string, bigint>();
    for (const line of text.split('\n')) {
      const use = /^use (\S{1,160}) (\d{1,20})$/.exec(line);
      if (use) open.set(use[1]!, BigInt(use[2]!));
      const done = /^done (\S{1,160})$/.exec(line);
      if (done) open.delete(done[1]!);
    }
    return open;
  }

  private persist(): void {
    try {
      if (this.orders.size === 0) {
        fs.rmSync(this.ordersFile, { force: true });
        return;
      }
      const rec: FileShape = { version: 1, bootId: this.bootId, orders: [...this.orders.values()] };
      writeStateFile(this.ordersFile, JSON.stringify(rec) + '\n');
    } catch (err) {
      // The order still stands: losing its crash-safety is better than not placing it.
      this.o.logger.error({ file: this.ordersFile, err }, 'standing orders file could not be written');
    }
  }
}
