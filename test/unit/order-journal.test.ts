/**
 * The standing orders on disk (src/agent/order-journal.ts): an order written before it is
 * placed, a use appended as the native order thread appends it (native/use_log.h's line), and
 * what the next start makes of them. A temp dir as the state dir; nothing else is touched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import pino from 'pino';
import { OrderJournal, orderTag, tagOf, type OrderEntry } from '../../src/agent/order-journal';
import { tempDir } from '../support/temp-dir';

const logger = pino({ level: 'silent' });
const BOOT = 'boot-a';

function dir(): string {
  return tempDir('order-journal');
}

function entry(uid: string, line = 'node:line0'): OrderEntry {
  return {
    tag: orderTag(line, uid),
    pod: { namespace: 'shop', name: `pod-${uid}`, uid },
    sandboxId: `sandbox-${uid}`,
    signal: 'memory.available',
    message: 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 99Mi. ',
    gracePeriodSeconds: 0,
    annotations: { offending_containers: 'app' },
  };
}

/** What the order thread writes before a kill (native/use_log.cc). */
function nativeUse(j: OrderJournal, tag: string, ns: bigint): void {
  fs.appendFileSync(j.usesFile, `use ${tag} ${ns}\n`);
}

test('a use the last run never confirmed becomes an eviction to finish, timed at the use; both files then start afresh', () => {
  const d = dir();
  let now = 50_000_000_000n;
  const j = new OrderJournal({ stateDir: d, logger, bootId: BOOT, monotonicNs: () => now });
  const e = entry('u1');
  j.placed(e);
  nativeUse(j, e.tag, now);
  now += 2_000_000_000n;
  // The next start: same boot, a new process.
  const next = new OrderJournal({ stateDir: d, logger, bootId: BOOT, monotonicNs: () => now });
  const before = Date.now();
  const out = next.takeUsed(new Set());
  assert.equal(out.length, 1);
  const r = out[0]!;
  assert.deepEqual(r.pod, e.pod);
  assert.equal(r.sandboxId, e.sandboxId);
  assert.equal(r.message, e.message);
  assert.deepEqual(r.annotations, e.annotations);
  assert.ok(r.atMs <= before - 1900 && r.atMs >= before - 2100 - 50, `the use's time, 2 s before the start: ${before - r.atMs} ms`);
  assert.match(r.podEventName, /^pod-u1\./);
  assert.equal(fs.existsSync(j.ordersFile), false);
  assert.equal(fs.existsSync(j.usesFile), false);
  assert.deepEqual(new OrderJournal({ stateDir: d, logger, bootId: BOOT }).takeUsed(new Set()), [], 'taken once');
});

test('a use whose eviction was journaled (done), or whose pod the eviction journal finishes, is not finished twice', () => {
  const d = dir();
  const j = new OrderJournal({ stateDir: d, logger, bootId: BOOT });
  const a = entry('a');
  const b = entry('b', 'pods:line0');
  j.placed(a);
  j.placed(b);
  nativeUse(j, a.tag, 1n);
  nativeUse(j, b.tag, 2n);
  j.done(a.tag);
  assert.deepEqual(new OrderJournal({ stateDir: d, logger, bootId: BOOT }).takeUsed(new Set(['b'])), []);
});

test('orders placed but never used, another boot, an unknown tag and garbage lines finish nothing', () => {
  const d = dir();
  const j = new OrderJournal({ stateDir: d, logger, bootId: BOOT });
  const placedOnly = entry('p');
  j.placed(placedOnly);
  fs.appendFileSync(j.usesFile, 'use node:line0/nobody 5\nuse\nhello world\ndone\nuse node:line0/p notanumber\n');
  assert.deepEqual(new OrderJournal({ stateDir: d, logger, bootId: BOOT }).takeUsed(new Set()), []);

  const other = dir();
  const k = new OrderJournal({ stateDir: other, logger, bootId: BOOT });
  const e = entry('x');
  k.placed(e);
  nativeUse(k, e.tag, 3n);
  assert.deepEqual(new OrderJournal({ stateDir: other, logger, bootId: 'boot-b' }).takeUsed(new Set()), [], "another boot's orders went with their pods");
});

test('a refreshed order writes nothing; a new pod on the line, or a new sandbox, is written', () => {
  const d = dir();
  const j = new OrderJournal({ stateDir: d, logger, bootId: BOOT });
  j.placed(entry('a'));
  const first = fs.statSync(j.ordersFile).ino;
  j.placed(entry('a'));
  assert.equal(fs.statSync(j.ordersFile).ino, first, 'the same order placed again: the file is not rewritten');
  j.placed({ ...entry('a'), sandboxId: 'restarted' });
  assert.notEqual(fs.statSync(j.ordersFile).ino, first, 'the pod restarted in place: a new sandbox to stop');
  const text = JSON.parse(fs.readFileSync(j.ordersFile, 'utf8')) as { orders: OrderEntry[] };
  assert.deepEqual(
    text.orders.map((o) => o.sandboxId),
    ['restarted'],
  );
  assert.equal(fs.statSync(j.ordersFile).mode & 0o777, 0o600);
});

test("tags are one field of the native log's alphabet, whatever the uid holds", () => {
  assert.equal(tagOf({ signal: 'memory.available', thresholdIndex: 0, pod: { namespace: 'n', name: 'p', uid: '3f2a-9c' } }), 'node:line0/3f2a-9c');
  assert.equal(tagOf({ signal: 'allocatableMemory.available', thresholdIndex: 1, pod: { namespace: 'n', name: 'p', uid: 'a b\nc' } }), 'pods:line1/a_b_c');
  assert.equal(orderTag('node:line0', 'x'.repeat(400)).length, 160);
  assert.match(orderTag('node:line0', 'ü€ $%'), /^[A-Za-z0-9._:/-]+$/);
});
