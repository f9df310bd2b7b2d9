/**
 * The order book (src/agent/order-book.ts): one record per order, its life stepped by hand on a
 * clock that is only a number. Placement, refresh and replacement; the hold of a crossed line;
 * a use becoming a confirmation, its report and stop ending it; a second line's use of the same
 * kill (superseded or a duplicate); a pass's own eviction; the TTL, the grace and forgetting.
 * The agent around it: standing-orders-agent.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JoinedPod } from '../../src/agent/active-pods';
import type { LineKey } from '../../src/agent/memory-lines';
import { OrderBook } from '../../src/agent/order-book';
import type { OrderFired } from '../../src/agent/ports';
import { compileConfig, configFromFlags } from '../../src/policy/config';
import { decideOrders, type OrderChoice } from '../../src/policy/standing-order';
import { makeObservations } from '../../src/policy/thresholds';
import { memoryPod, mi } from '../support/pods';

const MS = 1_000_000n;
const TTL = 1000;
const NODE: LineKey = 'node:line0';
const PODS_LINE: LineKey = 'pods:line0';

// Two pods near both hard lines (the node's and the pod cgroup root's): each line's order names `big`.
const pods = [memoryPod('big', 600, 100), memoryPod('small', 200, 400)];
const decisions = (withDir: (uid: string) => string = (uid) => `/kubepods/pod${uid}`) =>
  decideOrders(
    compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi' })),
    makeObservations({
      memory: { availableBytes: mi(150), workingSetBytes: mi(4096 - 150) },
      allocatableMemory: { availableBytes: mi(150), workingSetBytes: mi(2850) },
    }),
    pods.map((p) => ({ pod: p, cgroupDir: withDir(p.spec.uid) })),
    'single',
    TTL,
  );
const [onNode, onPods] = ((): [OrderChoice, OrderChoice] => {
  const ds = decisions();
  return [ds.find((d) => d.signal === 'memory.available')!.order!, ds.find((d) => d.signal === 'allocatableMemory.available')!.order!];
})();
const small: OrderChoice = { ...onNode, pod: { ...onNode.pod, name: 'small', uid: 'uid-small' }, podCgroupDir: '/kubepods/poduid-small' };

const joined = (c: OrderChoice, sandboxId = `sb-${c.pod.uid}`): JoinedPod =>
  ({ runtime: { uid: c.pod.uid, sandboxId }, active: c.snapshot, specSource: 'runtime' }) as unknown as JoinedPod;

/** the mechanism's use of an order on `c`'s pod, 3 MiB past the line */
const use = (c: OrderChoice, at: bigint, error?: string): OrderFired => ({
  podCgroupDir: c.podCgroupDir,
  crossedNs: at,
  killedNs: at + 40_000n,
  ageMs: 10,
  valueBytes: c.capacityBytes - c.lineBytes + mi(3),
  lineBytes: c.capacityBytes - c.lineBytes + 1,
  ...(error ? { error } : {}),
});

test('order book: placed, refreshed in place, replaced by another pod (withdrawn), each one record', () => {
  const b = new OrderBook();
  const first = b.place(NODE, onNode, joined(onNode), 0n);
  assert.equal(first.refreshed, false);
  const again = b.place(NODE, onNode, joined(onNode), 500n * MS);
  assert.equal(again.refreshed, true);
  assert.equal(again.record.id, first.record.id, 'a refresh is the same record');
  assert.equal(again.record.untilNs, 1500n * MS, 'with its TTL from the refresh');
  const other = b.place(NODE, small, joined(small), 600n * MS);
  assert.equal(other.replaced?.id, first.record.id);
  assert.deepEqual(
    b.all().map((r) => [r.choice.pod.name, r.phase, r.withdrawnBecause]),
    [
      ['big', 'withdrawn', 'replaced'],
      ['small', 'standing', null],
    ],
  );
  assert.equal(b.standingOn(NODE)?.choice.pod.name, 'small');
});

test('order book: a crossed line holds its order until its use can have arrived, past the TTL too; the use ends the hold', () => {
  const b = new OrderBook();
  b.place(NODE, onNode, joined(onNode), 0n);
  b.crossed(NODE, 900n * MS);
  assert.deepEqual([...b.heldLines(1000n * MS)], [NODE]);
  // Past its TTL (1000 ms) but within the hold (900 + 1000): still standing, still held.
  b.prune(1500n * MS);
  assert.equal(b.standingOn(NODE)?.phase, 'standing');
  assert.deepEqual([...b.heldLines(1500n * MS)], [NODE]);
  // The hold over: the order lapsed in the mechanism long ago.
  b.prune(1901n * MS);
  assert.equal(b.standingOn(NODE), undefined);
  assert.equal(b.all()[0]!.withdrawnBecause, 'lapsed');
  // Another order held, then used: no longer standing, no longer held.
  b.place(PODS_LINE, onPods, joined(onPods), 2000n * MS);
  b.crossed(PODS_LINE, 2100n * MS);
  assert.equal(b.used(PODS_LINE, use(onPods, 2100n * MS), 2150n * MS).kind, 'confirming');
  assert.deepEqual([...b.heldLines(2150n * MS)], []);
});

test('order book: a use becomes a confirmation; its report and its stop, in either order, end it; the kill is then known for 60 s', () => {
  const b = new OrderBook();
  b.place(NODE, onNode, joined(onNode), 0n);
  const out = b.used(NODE, use(onNode, 100n * MS), 120n * MS);
  assert.equal(out.kind, 'confirming');
  const [c] = b.confirming();
  assert.equal(c!.confirmation.order, onNode);
  assert.equal(c!.confirmation.availableBytes, mi(97), 'the signal at the crossing: 3 MiB past the 100Mi line');
  assert.equal(c!.confirmation.crossedNs, 100n * MS);
  b.stopped(onNode.pod.uid, 'runtime down', 200n * MS);
  b.reported(onNode.pod.uid, true, 210n * MS);
  assert.equal(b.failedAttempts(), 1);
  assert.equal(b.confirming().length, 1, 'reported, not stopped: still confirming');
  b.stopped(onNode.pod.uid, null, 1200n * MS);
  assert.deepEqual(b.confirming(), []);
  assert.deepEqual(
    b.all().map((r) => [r.phase, r.end]),
    [['over', 'confirmed']],
  );
  // A second use of the same placement on the same sandbox (re-placed after the first kill) is that eviction.
  b.place(NODE, onNode, joined(onNode), 1300n * MS);
  assert.equal(b.used(NODE, use(onNode, 1400n * MS), 1400n * MS).kind, 'duplicate');
  // Past 60 s after the end and the TTL and grace of the last order, the confirmed record is forgotten; the pod restarted in place (another sandbox) is a new eviction.
  b.prune(63_000n * MS);
  assert.deepEqual(b.all(), []);
  b.place(NODE, onNode, joined(onNode, 'sb-restarted'), 63_000n * MS);
  assert.equal(b.used(NODE, use(onNode, 63_100n * MS), 63_100n * MS).kind, 'confirming');
});

test('order book: both lines used on one pod by one charge: one confirmation, reported under memory.available whichever use came first', () => {
  for (const [firstLine, firstChoice, secondLine, secondChoice, want] of [
    [PODS_LINE, onPods, NODE, onNode, 'superseded'],
    [NODE, onNode, PODS_LINE, onPods, 'duplicate'],
  ] as const) {
    const b = new OrderBook();
    b.place(NODE, onNode, joined(onNode), 0n);
    b.place(PODS_LINE, onPods, joined(onPods), 0n);
    assert.equal(b.used(firstLine, use(firstChoice, 100n * MS), 110n * MS).kind, 'confirming');
    b.stopped(onNode.pod.uid, null, 115n * MS);
    const second = b.used(secondLine, use(secondChoice, 105n * MS), 120n * MS);
    assert.equal(second.kind, want);
    const [c] = b.confirming();
    assert.equal(b.confirming().length, 1);
    assert.equal(c!.confirmation.order.signal, 'memory.available');
    assert.equal(c!.confirmation.crossedNs, 100n * MS, "the kill is the first use's");
    assert.equal(c!.stopped, true, 'and so is its stop');
    assert.deepEqual(
      b
        .all()
        .filter((r) => r.phase === 'over')
        .map((r) => r.end),
      [want],
    );
  }
});

test("order book: a pass that evicted the pod itself ends its confirmation, and a later use on that sandbox is the pass's eviction", () => {
  const b = new OrderBook();
  b.place(NODE, onNode, joined(onNode), 0n);
  b.place(PODS_LINE, onPods, joined(onPods), 0n);
  b.used(PODS_LINE, use(onPods, 100n * MS), 100n * MS);
  const ended = b.passEvictedPod(onNode.pod.uid, `sb-${onNode.pod.uid}`, 150n * MS);
  assert.equal(ended?.line, PODS_LINE);
  assert.deepEqual(b.confirming(), []);
  assert.equal(b.used(NODE, use(onNode, 100n * MS), 160n * MS).kind, 'duplicate');
});

test('order book: a kill that failed confirms nothing; a use nobody ordered is unknown; a use after a withdrawal or the TTL still finds its order', () => {
  const b = new OrderBook();
  b.place(NODE, onNode, joined(onNode), 0n);
  assert.equal(b.used(NODE, use(onNode, 10n * MS, 'EACCES'), 20n * MS).kind, 'kill-failed');
  assert.deepEqual(b.confirming(), []);
  assert.equal(b.used(NODE, use(small, 30n * MS), 30n * MS).kind, 'unknown');
  b.place(NODE, small, joined(small), 40n * MS);
  b.withdraw(b.standingOn(NODE)!, 'pod-set');
  // The kill was written before the withdrawal; it reaches the loop after the TTL (a busy loop).
  assert.equal(b.used(NODE, use(small, 900n * MS), 1500n * MS).kind, 'confirming');
  // Past the TTL and the 60 s grace, an unused order is forgotten.
  b.place(PODS_LINE, onPods, joined(onPods), 2000n * MS);
  b.prune(2000n * MS + 61_001n * MS);
  assert.equal(
    b.all().some((r) => r.line === PODS_LINE),
    false,
  );
  assert.equal(b.confirming().length, 1, 'a confirmation is never forgotten');
});
