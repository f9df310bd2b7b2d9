/**
 * A standing order's fresh read where the node's statistics lag an anonymous ramp (cgroup v1, the
 * agent's layout: node/kubepods/besteffort/pod/container). On recent kernels (seen on 6.18) a
 * busy container can stop the count of pending statistic updates of every cgroup above it, so the
 * node's memory.stat stays behind its usage until the kernel's periodic fold, every 2 s
 * (native/fold_nudge.h). The order thread counts that unlisted usage as the pod's (it may be page
 * cache) and reads again: it must not wait for the kernel. Given the pod's memory directory it
 * reads the statistics of the pod and of the cgroups between it and the line, which lets the
 * node's fold at its next read. On kernels where the statistics do not lag this way the order
 * kills at the first read.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { readKubeletMemory } from '../../src/kernel/kubelet-memory';
import { watchMemcgThreshold } from '../../src/kernel/memcg';
import { orderCounts } from '../../src/kernel/order-event';
import type { OrderEvent, ThresholdWatcher } from '../../src/kernel/types';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { needsV1, skipped } from '../support/environment';
import { MiB, missingKernel, sleep, v1Root, v2Root } from './support';

/** Far beyond the 2-10 ms the reads take, far under the kernel's 2 s fold. */
const BEFORE_THE_FOLD_MS = 250;

test("cgroup v1, the agent's layout: an anonymous ramp in a pod's container is killed at the line within milliseconds, though the node's statistics lag it", async (t) => {
  if (skipped(t, missingKernel({ cgroup2: true })) || needsV1(t)) return;
  const node = ScratchCgroup.create(v1Root(), 'order-fold-node', 1);
  const kubepods = ScratchCgroup.create(node.dir, 'kubepods', 1);
  const besteffort = ScratchCgroup.create(kubepods.dir, 'besteffort', 1);
  const pod = ScratchCgroup.create(besteffort.dir, 'pod', 1);
  const held = ScratchCgroup.create(pod.dir, 'held', 1);
  const ramp = ScratchCgroup.create(pod.dir, 'ramp', 1);
  // The pod's cgroup2 directory (hybrid: controller-less), where its cgroup.kill is.
  const unified = ScratchCgroup.create(v2Root(), 'order-fold-pod', 2);
  node.write('memory.limit_in_bytes', 512 * MiB);
  const hogs: Memhog[] = [];
  // The line's watch closes first (it watches the node's files), then its tasks, then the cgroups.
  const watches: ThresholdWatcher[] = [];
  t.after(async () => {
    for (const w of watches) await w.close();
    for (const h of hogs) h.kill();
    await Promise.all(hogs.map((h) => h.exited));
    for (const cg of [ramp, held, pod, besteffort, kubepods, node, unified]) await cg.remove();
  });
  const holder = await Memhog.start([held.dir, unified.dir]);
  const rammer = await Memhog.start([ramp.dir, unified.dir]);
  hogs.push(holder, rammer);
  await holder.alloc(128 * MiB);
  // A usage line as the agent arms it (src/agent/arming.ts): the kubelet's line plus inactive_file.
  const before = readKubeletMemory(node.dir, 'v1')!;
  const wsLine = before.workingSetBytes + 32 * MiB;
  const usageLine = wsLine + before.inactiveFileBytes;
  const w = watchMemcgThreshold(node.dir, usageLine);
  watches.push(w);
  await w.ready();
  const orders: OrderEvent[] = [];
  w.on('order', (o: OrderEvent) => orders.push(o));
  assert.equal(w.setOrder!(unified.dir, 60_000, wsLine, undefined, pod.dir), true, 'the order is placed');
  const refused0 = orderCounts().eventfd.refused;
  // 192 MiB at full speed from 32 MiB under the line: the workload stamps its crossing.
  const reply = await rammer.alloc(192 * MiB, path.join(node.dir, 'memory.usage_in_bytes'), usageLine).catch(() => null);
  const end = Date.now() + 5000;
  while (orders.length === 0 && Date.now() < end) await sleep(5);
  const refused = orderCounts().eventfd.refused - refused0;
  assert.equal(orders.length, 1, `the order was used (refusals: ${refused})`);
  const o = orders[0];
  const crossedToKilledMs = Number(o.killedNs - o.chargeBeganNs) / 1e6;
  t.diagnostic(
    `crossing (the line's wake-up) to kill ${crossedToKilledMs.toFixed(2)} ms; refusals ${refused}; at the kill: working set ` +
      `${(o.usageBytes / MiB).toFixed(1)} MiB, ${(o.unlistedBytes / MiB).toFixed(1)} MiB unlisted; the ramp ${reply ? 'ended before the kill' : 'was killed'}`,
  );
  assert.ok(crossedToKilledMs < BEFORE_THE_FOLD_MS, `killed ${crossedToKilledMs.toFixed(1)} ms after the crossing, not at the kernel's fold`);
  assert.equal(reply, null, 'the ramp was killed before it ended');
  const killed = await Promise.all([holder.exited, rammer.exited]);
  assert.deepEqual(
    killed.map((k) => k.signal),
    ['SIGKILL', 'SIGKILL'],
    'both processes of the pod were killed',
  );
});
