import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { skipped } from '../support/environment';
import { MiB, hog, logTail, missingE2e, newLab, suiteCleanup, sleeper, startAgent } from './agent-harness';
import { waitFor } from '../support/wait';

const { labs, agents } = suiteCleanup();

test('memory.available: the BestEffort hog is evicted (its standing order, or a fast kill), Guaranteed and Burstable survive', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('memory', { memoryLimitBytes: 384 * MiB });
  labs.push(lab);
  const guaranteed = await lab.runPod({ name: 'guaranteed', qos: 'Guaranteed', containers: [sleeper('app', 64 * MiB)] });
  const burstable = await lab.runPod({
    name: 'burstable',
    qos: 'Burstable',
    containers: [sleeper('app', 128 * MiB)],
    annotations: { 'evictd.io/requests': 'memory=32Mi' },
  });
  const a = await startAgent(lab, { flags: { evictionHard: 'memory.available<128Mi' } });
  agents.push(a);
  await waitFor('the first pass', () => a.agent.controller.stats.passes > 0);
  assert.equal(a.evictions.length, 0, 'no pressure, no eviction');
  const hogPod = await lab.runPod({ name: 'hog', qos: 'BestEffort', containers: [hog(200, 360)] });

  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(rec.pod.uid, hogPod.uid, `evicted ${rec.pod.name}, reasons ${rec.reasons.join('; ')}`);
  // The node's line or the pod cgroup root's, whichever the ramp crossed first (their
  // inactive_file differ): reported once, under the signal a pass reclaims first when both are.
  assert.match(rec.signal, /^(memory|allocatableMemory)\.available$/);
  // Near the line a pass leaves a standing order, which the line's mechanism uses at the
  // crossing; a fast kill from the pass where the ramp outran the order.
  assert.ok(rec.action === 'standing-order' || rec.action === 'fast-kill', rec.action);
  assert.equal(rec.gracePeriodSeconds, 0);
  // The kubelet's threshold is met below the line, never at it: a mechanism armed at the line
  // itself would kill a pod with exactly 128Mi available.
  assert.ok(rec.threshold && rec.threshold.quantity === '128Mi' && rec.threshold.observed.available < 128 * MiB, JSON.stringify(rec.threshold));
  assert.ok(rec.reasons.length > 0, 'the ranking says why');
  assert.ok(rec.at.event, 'woken by a kernel event');
  assert.equal(rec.releasedWithinBound, true);

  // The hog's processes are gone, its sandbox is stopped; the others run on.
  await waitFor('the hog sandbox to stop', async () => !(await lab.sandboxReady(hogPod)), 10_000);
  assert.equal(lab.podAlive(hogPod), false);
  await sleep(500);
  assert.equal(await lab.sandboxReady(guaranteed), true);
  assert.equal(await lab.sandboxReady(burstable), true);
  assert.ok(lab.podAlive(guaranteed) && lab.podAlive(burstable));
  assert.equal(a.evictions.filter((e) => e.ok).length, 1, 'exactly one pod evicted');
  const metrics = await a.metrics.registry.getSingleMetricAsString('evictd_evictions_total');
  assert.match(metrics, new RegExp(`evictd_evictions_total\\{signal="${rec.signal}"\\} 1`));
  const log = logTail(a.logFile, 200);
  assert.match(log, /"msg":"evicted pod"/);
  assert.match(log, /"reasons":\[/);
});

test('allocatableMemory.available: pressure in the pod cgroup root alone evicts the hog', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('alloc', { memoryLimitBytes: 1024 * MiB, podsMemoryLimitBytes: 320 * MiB });
  labs.push(lab);
  const guaranteed = await lab.runPod({ name: 'guaranteed', qos: 'Guaranteed', containers: [sleeper('app', 64 * MiB)] });
  const a = await startAgent(lab, { flags: { evictionHard: 'memory.available<100Mi', enforceNodeAllocatable: 'pods' } });
  agents.push(a);
  await waitFor('the first pass', () => a.agent.controller.stats.passes > 0);
  const hogPod = await lab.runPod({ name: 'hog', qos: 'BestEffort', containers: [hog(200, 300)] });
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(rec.pod.uid, hogPod.uid);
  assert.equal(rec.signal, 'allocatableMemory.available');
  const ev = a.agent.lastEvaluation;
  assert.ok(ev);
  await sleep(300);
  assert.equal(await lab.sandboxReady(guaranteed), true);
});

test('dry run: the decision is logged, nothing is stopped', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('dry', { memoryLimitBytes: 384 * MiB });
  labs.push(lab);
  const a = await startAgent(lab, { flags: { evictionHard: 'memory.available<128Mi' }, dryRun: true });
  agents.push(a);
  const hogPod = await lab.runPod({ name: 'hog', qos: 'BestEffort', containers: [hog(300, 300)] });
  const rec = await waitFor('a dry-run decision', () => a.evictions.find((e) => e.dryRun), 20_000);
  assert.equal(rec.pod.uid, hogPod.uid);
  assert.equal(rec.action, 'none');
  await sleep(1500);
  assert.equal(await lab.sandboxReady(hogPod), true);
  assert.equal(lab.podAlive(hogPod), true);
  assert.match(logTail(a.logFile, 400), /would evict pod \(dry run\)/);
  assert.doesNotMatch(logTail(a.logFile, 400), /"msg":"evicted pod"/);
});

test('a soft threshold waits for its grace period, then evicts with a grace period (no fast kill)', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('soft', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const a = await startAgent(lab, {
    flags: {
      evictionSoft: 'memory.available<200Mi',
      evictionSoftGracePeriod: 'memory.available=1500ms',
      evictionMaxPodGracePeriod: '5',
      evictionHard: 'memory.available<20Mi',
    },
  });
  agents.push(a);
  await waitFor('the first pass', () => a.agent.controller.stats.passes > 0);
  // 360 MiB held: below the soft line (512 - 200 = 312 MiB of working set), far from the hard one.
  const hogPod = await lab.runPod({ name: 'hog', qos: 'BestEffort', containers: [hog(400, 360)] });
  const metAt = await waitFor(
    'the soft threshold to be met',
    () => (a.agent.lastEvaluation?.thresholdsMet.some((s) => s.kind === 'soft') ? Date.now() : 0),
    10_000,
  );
  const rec = await waitFor('the eviction', () => a.evictions.find((e) => e.ok), 15_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  const waited = Date.now() - metAt;
  assert.equal(rec.pod.uid, hogPod.uid);
  assert.equal(rec.action, 'stop', 'soft evictions stop through the runtime with a grace period');
  assert.equal(rec.gracePeriodSeconds, 5);
  assert.equal(rec.threshold?.kind, 'soft');
  assert.ok(waited >= 1000, `evicted ${waited} ms after the threshold was met`);
  // The hog handles SIGTERM itself: it exits well within its grace period.
  assert.ok(
    lab.podLog(hogPod, 'hog').some((l) => / term$/.test(l)),
    'the hog got SIGTERM first',
  );
});
