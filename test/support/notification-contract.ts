/**
 * What the agent relies on from a NotificationPort's memory lines, written once and run against
 * both the fake (test/unit/notification-contract.test.ts) and the kernel's own port on real
 * cgroups (test/kernel/notification-contract.test.ts), so the fake cannot promise what the
 * kernel does not keep.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NotificationPort, Wakeup } from '../../src/agent/ports';
import { skipped } from './environment';
import { waitFor } from './wait';

/** A cgroup whose memory usage the contract drives. */
export interface ContractCgroup {
  dir: string;
  /** the usage now, bytes */
  usage(): number;
  /** charges `bytes` more */
  grow(bytes: number): Promise<void>;
  /** gives back what grow charged */
  shrink(): Promise<void>;
  remove(): Promise<void>;
}

export interface ContractSubject {
  port: NotificationPort;
  cgroup(): Promise<ContractCgroup>;
  /** how long a crossing may take to be reported (the polling fallback needs its interval) */
  deliveryMs: number;
  /**
   * How long a rearm may take to be in force. Until then the old line still covers (no gap), so
   * a crossing of it may still wake: the kernel's memcg threshold re-registers off the loop and
   * waits for an RCU grace period.
   */
  rearmSettleMs: number;
}

const MiB = 1024 * 1024;

/** Registers the contract's tests; `subject` returns why it cannot run here, or the subject. */
export function notificationContract(label: string, subject: () => Promise<ContractSubject | string>): void {
  const setup = async (t: { skip(m?: string): void; after(fn: () => unknown): void }) => {
    const s = await subject();
    if (typeof s === 'string') {
      skipped(t, s);
      return null;
    }
    const cg = await s.cgroup();
    t.after(() => cg.remove());
    return { s, cg };
  };
  const record = () => {
    const wakeups: Wakeup[] = [];
    const errors: Error[] = [];
    return { wakeups, errors, cb: { onWakeup: (w: Wakeup) => wakeups.push(w), onError: (e: Error) => errors.push(e) } };
  };

  test(`${label}: a memory line crossed upward wakes, stamped between the crossing and the callback`, async (t) => {
    const x = await setup(t);
    if (!x) return;
    const { s, cg } = x;
    const r = record();
    const line = s.port.watchMemoryUsage(cg.dir, cg.usage() + 8 * MiB, r.cb);
    t.after(() => line.close());
    await new Promise((res) => setTimeout(res, 50));
    assert.equal(r.wakeups.length, 0, 'no wake-up while usage is below the line');
    const before = process.hrtime.bigint();
    await cg.grow(16 * MiB);
    const w = await waitFor('a wake-up for the crossing', () => r.wakeups[0], s.deliveryMs);
    assert.ok(typeof w.source === 'string' && w.source.length > 0, 'the wake-up names its source');
    assert.ok(
      w.monotonicNs !== undefined && w.monotonicNs >= before && w.monotonicNs <= process.hrtime.bigint(),
      'CLOCK_MONOTONIC stamp after the crossing began and before the callback',
    );
    assert.deepEqual(r.errors, []);
  });

  test(`${label}: rearm moves the line; once in force, only the new line wakes`, async (t) => {
    const x = await setup(t);
    if (!x) return;
    const { s, cg } = x;
    const r = record();
    const base = cg.usage();
    const line = s.port.watchMemoryUsage(cg.dir, base + 8 * MiB, r.cb);
    t.after(() => line.close());
    line.rearm(base + 64 * MiB);
    assert.equal(line.lineBytes, base + 64 * MiB, 'the handle reports the new line at once');
    await new Promise((res) => setTimeout(res, s.rearmSettleMs));
    await cg.grow(16 * MiB);
    await new Promise((res) => setTimeout(res, s.deliveryMs / 2));
    assert.equal(r.wakeups.length, 0, 'the old line (8 MiB up) does not wake any more');
    await cg.grow(64 * MiB);
    await waitFor('a wake-up for the new line', () => r.wakeups[0], s.deliveryMs);
    assert.deepEqual(r.errors, []);
  });

  test(`${label}: after close, no wake-up; close twice is harmless`, async (t) => {
    const x = await setup(t);
    if (!x) return;
    const { s, cg } = x;
    const r = record();
    const line = s.port.watchMemoryUsage(cg.dir, cg.usage() + 8 * MiB, r.cb);
    await line.close();
    await line.close();
    await cg.grow(16 * MiB);
    await new Promise((res) => setTimeout(res, s.deliveryMs / 2));
    assert.deepEqual(r.wakeups, []);
    assert.deepEqual(r.errors, []);
  });
}
