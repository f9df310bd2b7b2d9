/**
 * The container runtime gone at the worst moments, on a real containerd (the agent harness's):
 * - frozen (SIGSTOP) after a standing order is placed: the order still kills at the line from
 *   native code (it needs no runtime), memory comes back and the eviction is reported, no OOM
 *   kill; the sandbox stop fails and is kept, and once the runtime answers it lands (reported
 *   once, not again);
 * - frozen while the wall clock is stepped back an hour (the pure cgroup v2 lab only: its clock
 *   is its own): passes go on, the runtime's health comes back as soon as it answers (its
 *   deadlines are on the monotonic clock), and the next ramp is evicted through it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeLab } from '../../src/lab/node-lab';
import { Memhog } from '../../src/lab/workload';
import { needsPureV2, skipped } from '../support/environment';
import { waitFor } from '../support/wait';
import { MiB, containerdPid, criClient, hog, logTail, missingE2e, newLab, startAgent, suiteCleanup, type TestAgent } from './agent-harness';

const { labs, agents } = suiteCleanup();

const logLines = (a: TestAgent): Record<string, unknown>[] =>
  fs
    .readFileSync(a.logFile, 'utf8')
    .split('\n')
    .flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as Record<string, unknown>] : []));

/** A 384 MiB lab and a healthy agent on it, a hard line at 128Mi, housekeeping every 200 ms. */
async function labWithAgent(name: string): Promise<{ lab: NodeLab; a: TestAgent }> {
  await criClient();
  const lab = await newLab(name, { memoryLimitBytes: 384 * MiB });
  labs.push(lab);
  const a = await startAgent(lab, {
    flags: { evictionHard: 'memory.available<128Mi' },
    housekeepingIntervalMs: 200,
    // not replayed: a pass whose runtime calls fail while containerd is frozen is not recorded
    noReplay: 'passes failing on the frozen runtime are not recorded',
  });
  agents.push(a);
  await waitFor('a healthy agent', () => a.agent.health().ok, 10_000);
  return { lab, a };
}

/** SIGSTOP containerd for as long as `during` runs; SIGCONT whatever happens. */
async function frozen<T>(during: () => Promise<T>): Promise<T> {
  const pid = containerdPid();
  assert.ok(pid, 'the harness containerd runs');
  process.kill(pid, 'SIGSTOP');
  try {
    return await during();
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}

test("containerd frozen before a standing order's kill: the order kills at the line without it and the eviction is reported, no OOM kill; the sandbox stop is kept until the runtime answers, then lands", async (t) => {
  if (skipped(t, missingE2e())) return;
  const { lab, a } = await labWithAgent('order-outage');
  const oomBefore = NodeLab.oomKills();
  // The hog holds 180 MiB of the lab's 384: the line (near 256 MiB used) is near, so the passes
  // name it in an order, and nothing crosses until the test says so.
  const hogPod = await lab.runPod({ name: 'hog', qos: 'BestEffort', containers: [hog(100, 180)] });
  const fail = (err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile, 40)}`);
  };
  await waitFor('the hog at 180 MiB', () => lab.podLog(hogPod, 'hog').some((l) => / 180$/.test(l)), 20_000).catch(fail);
  await waitFor(
    'a standing order on the hog',
    () => logLines(a).some((l) => l.msg === 'standing order placed' && String(l.pod).endsWith('/hog')),
    20_000,
  ).catch(fail);
  // More memory for the hog's pod without the runtime: a process in a child cgroup of the pod.
  const extra = lab.podChildCgroup(hogPod, 'evictd-test-extra');
  const more = await Memhog.start(extra.dirs);
  const { passesFrozen, rec } = await frozen(async () => {
    const before = a.agent.controller.stats.passes;
    // The pod crosses the line while the runtime cannot answer: its processes end all the same,
    // and the eviction is reported once its memory is back (the sandbox stop runs apart).
    void more.alloc(160 * MiB).catch(() => undefined);
    await waitFor('the hog killed with the runtime frozen', () => !lab.podAlive(hogPod), 30_000).catch(fail);
    const r = await waitFor('the eviction reported with the runtime frozen', () => a.evictions.find((e) => e.ok), 20_000).catch(fail);
    // Its sandbox stop fails meanwhile (the runtime's deadline), and is kept to be tried again.
    await waitFor('the failed stop', () => logLines(a).some((l) => String(l.msg).startsWith('StopPodSandbox after a standing order failed')), 20_000).catch(
      fail,
    );
    return { passesFrozen: a.agent.controller.stats.passes - before, rec: r };
  });
  assert.notEqual((await more.exited).signal, null, 'the extra process was killed with its pod');
  extra.remove();
  assert.equal(rec.pod.uid, hogPod.uid);
  assert.equal(rec.action, 'standing-order', `the order's kill, reported as such: ${rec.action}`);
  assert.equal(rec.releasedWithinBound, true, 'memory back without the runtime');
  assert.ok(passesFrozen >= 2, `passes went on with the runtime frozen (${passesFrozen})`);
  // The runtime answers again: the stop is tried again and lands; nothing is reported twice.
  await waitFor('the hog sandbox stopped', async () => !(await lab.sandboxReady(hogPod)), 30_000).catch(fail);
  await waitFor('the stop logged', () => logLines(a).some((l) => l.msg === 'pod sandbox stopped after its standing order'), 10_000).catch(fail);
  await sleep(1000);
  assert.equal(a.evictions.filter((e) => e.ok).length, 1, 'reported once');
  assert.equal(NodeLab.oomKills(), oomBefore, 'no kernel OOM kill');
  const failedStops = logLines(a).filter((l) => String(l.msg).startsWith('StopPodSandbox after a standing order failed')).length;
  t.diagnostic(`passes while frozen: ${passesFrozen}; stops that failed before the runtime answered: ${failedStops}`);
});

test('the wall clock stepped back an hour during a runtime outage: passes go on, health is back as soon as the runtime answers, the next ramp is evicted through it', async (t) => {
  if (needsPureV2(t) || skipped(t, missingE2e())) return;
  const { lab, a } = await labWithAgent('clock-step');
  const STEP_S = 3600;
  const setClock = (deltaS: number) => execFileSync('date', ['-s', `@${(Date.now() / 1000 + deltaS).toFixed(3)}`], { stdio: 'ignore' });
  let stepped = false;
  let passesFrozen: number;
  try {
    passesFrozen = await frozen(async () => {
      await waitFor('the agent to notice', () => !a.agent.health().ok, 10_000);
      setClock(-STEP_S);
      stepped = true;
      const before = a.agent.controller.stats.passes;
      await sleep(3000);
      return a.agent.controller.stats.passes - before;
    });
    // Monotonic deadlines: back within seconds of the runtime answering, not after the hour the
    // wall clock went back (waitFor itself reads the wall clock, which only moved back: a
    // deadline on it can only come late, never early).
    const t0 = performance.now();
    await waitFor('health back', () => a.agent.health().ok, 15_000);
    t.diagnostic(`passes in 3 s frozen after the step: ${passesFrozen}; health back ${(performance.now() - t0).toFixed(0)} ms after the runtime was`);
  } finally {
    if (stepped) setClock(STEP_S);
  }
  assert.ok(passesFrozen >= 2, `passes went on after the step (${passesFrozen})`);
  const hogPod = await lab.runPod({ name: 'hog', qos: 'BestEffort', containers: [hog(200, 360)] });
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile, 40)}`);
  });
  assert.equal(rec.pod.uid, hogPod.uid);
  await waitFor('the hog sandbox stopped', async () => !(await lab.sandboxReady(hogPod)), 10_000);
});
