/**
 * The memory brake on real cgroup v2, a real containerd and a real agent (pure cgroup v2 VM):
 * - a workload that checkpoints on SIGTERM ramps under a soft threshold with a 5 s grace: with
 *   the brake it is held, then stopped gracefully (checkpoint written, exit 0), no OOM kill;
 * - crash safety: `evictd run` SIGKILLed with a brake on; the next start releases it (the exact
 *   original memory.high back, the record gone), and a start with the pressure still there
 *   brakes again from that original.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BRAKE_RECORD_FILE } from '../../src/agent/effects/brake-record';
import { STOP_EASE_LIMIT_MARGIN_BYTES } from '../../src/policy/config';
import type { LabPod, NodeLab } from '../../src/lab/node-lab';
import { AgentProcess } from '../../src/lab/ramp-lab';
import { needsPureV2, skipped, slow } from '../support/environment';
import { waitFor } from '../support/wait';
import { MiB, criClient, logTail, missingE2e, newLab, sleeper, startAgent, suiteCleanup } from './agent-harness';

const { labs, agents } = suiteCleanup();
const procs: AgentProcess[] = [];
test.after(async () => {
  for (const p of procs) await p.stop().catch(() => undefined);
});

/**
 * A BestEffort pod whose hog writes `<dir>/checkpoint` from its SIGTERM handler, after
 * allocating `handlerMiB` MiB there (a workload serializing its state into buffers).
 */
async function checkpointingHog(lab: NodeLab, rateMiBs: number, targetMiB: number, handlerMiB = 0): Promise<{ pod: LabPod; checkpoint: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-ckpt-'));
  const pod = await lab.runPod({
    name: `hog-${rateMiBs}`,
    qos: 'BestEffort',
    containers: [
      {
        name: 'hog',
        image: 'localhost/evictd/hog:1',
        args: [String(rateMiBs), String(targetMiB)],
        env: { HOG_CHECKPOINT: '/ckpt/checkpoint', ...(handlerMiB > 0 ? { HOG_CHECKPOINT_ALLOC_MIB: String(handlerMiB) } : {}) },
        mounts: [{ containerPath: '/ckpt', hostPath: dir }],
      },
    ],
  });
  return { pod, checkpoint: path.join(dir, 'checkpoint') };
}

function memoryEvents(lab: NodeLab, pod: LabPod): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of fs
    .readFileSync(path.join(lab.memoryDir(pod.cgroupPath), 'memory.events'), 'utf8')
    .trim()
    .split('\n')) {
    const [k, v] = l.split(' ');
    out[k!] = Number(v);
  }
  return out;
}

const tail = (p: AgentProcess) =>
  p.lines
    .slice(-15)
    .map((l) => JSON.stringify(l))
    .join('\n');

const highOf = (lab: NodeLab, pod: LabPod) => fs.readFileSync(path.join(lab.memoryDir(pod.cgroupPath), 'memory.high'), 'utf8').trim();

// A 512 MiB node; the soft line at 200 MiB available is crossed near 312 MiB of working set and
// the hog asks for 700 MiB: without a stop, the kernel OOM-kills it near 512 MiB. No hard
// threshold: the soft one and its 5 s grace are the only rule.
const SOFT = {
  evictionHard: 'memory.available<0%',
  evictionSoft: 'memory.available<200Mi',
  evictionSoftGracePeriod: 'memory.available=5s',
  evictionMaxPodGracePeriod: '30',
};

for (const rate of [200, 2000]) {
  test(`soft threshold, 5 s grace, a ${rate} MiB/s ramp: braked, then stopped gracefully (a checkpoint that allocates 64 MiB in its SIGTERM handler written, exit 0), no OOM kill; the other pod unharmed`, async (t) => {
    if (needsPureV2(t) || skipped(t, missingE2e())) return;
    const lab = await newLab(`brake-${rate}`, { memoryLimitBytes: 512 * MiB });
    labs.push(lab);
    const kept = await lab.runPod({ name: 'kept', qos: 'Guaranteed', containers: [sleeper('app', 32 * MiB)] });
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-state-'));
    const a = await startAgent(lab, { flags: { ...SOFT, memoryBrake: true }, stateDir });
    agents.push(a);
    await waitFor('the first pass', () => a.agent.controller.stats.passes > 0, 5000);
    const { pod, checkpoint } = await checkpointingHog(lab, rate, 700, 64);
    const fail = (err: Error) => {
      throw new Error(`${err.message}\n${logTail(a.logFile, 40)}`);
    };
    // Braked as soon as the soft line is crossed, long before its grace period ends.
    const brakeHigh = await waitFor('the brake', () => (highOf(lab, pod) !== 'max' ? highOf(lab, pod) : null), 3000).catch(fail);
    assert.equal(a.evictions.length, 0, 'the brake comes before any eviction');
    assert.match(await a.metrics.registry.getSingleMetricAsString('evictd_brakes_active'), /evictd_brakes_active 1/);
    const rec = await waitFor('the soft eviction', () => a.evictions.find((e) => e.ok), 8000).catch(fail);
    assert.equal(rec.pod.uid, pod.uid);
    assert.equal(rec.action, 'stop');
    assert.equal(rec.threshold?.kind, 'soft');
    assert.equal(rec.gracePeriodSeconds, 30, 'min(evictionMaxPodGracePeriod, terminationGracePeriodSeconds 30)');
    await waitFor('the hog to exit', () => !lab.containerAlive(pod, 'hog'), 5000);
    const exit = await lab.containerExited(pod, 'hog', slow(5000));
    assert.equal(exit?.state, 'CONTAINER_EXITED', JSON.stringify(exit));
    assert.equal(exit.exitCode, 0, `the SIGTERM handler's exit: ${JSON.stringify(exit)}`);
    assert.notEqual(exit?.reason, 'OOMKilled');
    // The handler allocated its 64 MiB under the eased brake (usage + 128 MiB at SIGTERM) and wrote
    // the checkpoint: how long that took is the price of the brake for the pod's own stop.
    const ckpt = /^checkpoint (\d+) (\d+) 64 (\d+)\n$/.exec(fs.readFileSync(checkpoint, 'utf8'));
    assert.ok(ckpt, 'the checkpoint was written after the 64 MiB were allocated');
    const logged = logTail(a.logFile, 100_000)
      .split('\n')
      .flatMap((l) =>
        l.startsWith('{')
          ? [
              JSON.parse(l) as {
                msg?: string;
                memoryHigh?: string;
                was?: string;
                headroomBytes?: number;
                limitDir?: string;
                limitLeftBytes?: number;
                waited?: string;
                waitedMs?: number;
              },
            ]
          : [],
      );
    const eased = logged.find((l) => l.msg === 'memory brake eased for the graceful stop');
    const held = logged.find((l) => l.msg === 'memory brake: the pod held still until its SIGTERM was sent, then thawed for its handler');
    t.diagnostic(
      `SIGTERM handler: 64 MiB allocated and the checkpoint written in ${((Number(ckpt[3]) - Number(ckpt[1])) / 1e6).toFixed(1)} ms, holding ${ckpt[2]} MiB; ` +
        (eased
          ? `memory.high eased ${(Number(eased.was) / MiB).toFixed(0)} -> ${(Number(eased.memoryHigh) / MiB).toFixed(0)} MiB for the stop ` +
            `(the lab node's cgroup had ${((eased.limitLeftBytes ?? NaN) / MiB).toFixed(0)} MiB left under its limit), ` +
            `held still ${held?.waitedMs?.toFixed(0)} ms until: ${held?.waited}`
          : 'memory.high not eased'),
    );
    assert.ok(eased, 'the brake was eased for the graceful stop');
    assert.equal(held?.waited, 'sigterm-queued', "held still until the runtime's SIGTERM was queued for the pod");
    // The lab's node is a cgroup with a 512 MiB limit above the pod: the ease stays inside it.
    assert.equal(typeof eased.limitLeftBytes, 'number', `the lab node's limit was read: ${JSON.stringify(eased)}`);
    assert.ok(eased.headroomBytes! <= eased.limitLeftBytes! - STOP_EASE_LIMIT_MARGIN_BYTES, JSON.stringify(eased));
    const events = memoryEvents(lab, pod);
    assert.equal(events.oom_kill, 0, `memory.events: ${JSON.stringify(events)}`);
    assert.ok(events.high > 0, 'the kernel throttled the pod at memory.high');
    // Released once the pod is gone: the pod cgroup (left by the lab's runtime) has its original back.
    await waitFor(
      'the brake released',
      async () => /evictd_brakes_active 0/.test(await a.metrics.registry.getSingleMetricAsString('evictd_brakes_active')),
      5000,
    ).catch(fail);
    assert.equal(highOf(lab, pod), 'max');
    assert.ok(Number(brakeHigh) > 0);
    assert.equal(fs.existsSync(path.join(stateDir, BRAKE_RECORD_FILE)), false, 'no brake, no record');
    assert.equal(await lab.sandboxReady(kept), true);
    assert.ok(lab.podAlive(kept));
    const log = logTail(a.logFile, 400);
    assert.match(log, /"msg":"memory brake on"/);
    assert.match(log, /"replaced":"max"/);
  });
}

test('a pod braked past --memory-brake-max-duration is stopped (grace 0) though its soft grace period has not ended', async (t) => {
  if (needsPureV2(t) || skipped(t, missingE2e())) return;
  const lab = await newLab('brake-bound', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-state-'));
  // A 10 min soft grace: only the brake's 3 s bound can end this.
  const a = await startAgent(lab, {
    flags: { ...SOFT, evictionSoftGracePeriod: 'memory.available=10m', memoryBrake: true, memoryBrakeMaxDuration: '3s' },
    stateDir,
  });
  agents.push(a);
  await waitFor('the first pass', () => a.agent.controller.stats.passes > 0, 5000);
  const { pod } = await checkpointingHog(lab, 100, 340);
  const fail = (err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile, 40)}`);
  };
  await waitFor('the brake', () => highOf(lab, pod) !== 'max', 3000).catch(fail);
  const braked = Date.now();
  const rec = await waitFor('the stop at the bound', () => a.evictions.find((e) => e.ok), 8000).catch(fail);
  assert.ok(Date.now() - braked >= 2500, `stopped ${Date.now() - braked} ms after the brake`);
  assert.equal(rec.pod.uid, pod.uid);
  assert.equal(rec.gracePeriodSeconds, 0);
  assert.equal(rec.threshold, null, 'not a threshold eviction');
  assert.match(rec.reasons[0]!, /^held by the memory brake for \S+, past its bound of 3s$/);
  assert.match(await a.metrics.registry.getSingleMetricAsString('evictd_brake_stops_total'), /evictd_brake_stops_total 1/);
  await waitFor('the hog gone', () => !lab.containerAlive(pod, 'hog'), 5000);
  await waitFor(
    'the brake released',
    async () => /evictd_brakes_active 0/.test(await a.metrics.registry.getSingleMetricAsString('evictd_brakes_active')),
    5000,
  ).catch(fail);
});

test('crash safety: evictd SIGKILLed with a brake on; the next start puts the exact original memory.high back and clears the record', async (t) => {
  if (needsPureV2(t) || skipped(t, missingE2e())) return;
  const { endpoint } = await criClient();
  const lab = await newLab('brake-crash', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-state-'));
  const record = path.join(stateDir, BRAKE_RECORD_FILE);
  // A long grace: the brake stays on, nothing is evicted while the test kills the agent.
  const args = ['--eviction-soft', 'memory.available<200Mi', '--eviction-soft-grace-period', 'memory.available=10m', '--state-dir', stateDir];
  const start = (brake: boolean) =>
    AgentProcess.start({ lab, endpoint, evictionHard: 'memory.available<0%', extraArgs: [...args, `--memory-brake=${brake}`], startTimeoutMs: slow(15_000) });
  const first = await start(true);
  procs.push(first);
  // The pod's own memory.high (as a MemoryQoS-like setting would leave it): the brake replaces
  // it and must give back exactly this.
  const { pod } = await checkpointingHog(lab, 100, 340);
  const original = String(1024 * MiB);
  fs.writeFileSync(path.join(lab.memoryDir(pod.cgroupPath), 'memory.high'), original);
  const key = `${pod.namespace}/${pod.name}`;
  const on = await first.waitFor((l) => l.msg === 'memory brake on' && l.pod === key, slow(8000));
  assert.equal(on.replaced, original);
  assert.equal(highOf(lab, pod), on.memoryHigh);
  const rec = JSON.parse(fs.readFileSync(record, 'utf8')) as { brakes: { pod: { uid: string }; original: string; value: string }[] };
  assert.deepEqual(
    rec.brakes.map((b) => [b.pod.uid, b.original, b.value]),
    [[pod.uid, original, on.memoryHigh]],
  );

  first.child.kill('SIGKILL');
  await first.exited;
  assert.equal(highOf(lab, pod), on.memoryHigh, 'the brake outlives the agent: that is why the record exists');

  // Restarted with the brake off: what the dead run left is released all the same.
  const second = await start(false);
  procs.push(second);
  const released = await second.waitFor((l) => l.msg === 'memory brake from a previous run released', slow(5000));
  assert.equal(released.outcome, 'restored');
  assert.equal(highOf(lab, pod), original);
  assert.equal(fs.existsSync(record), false);
  assert.equal(lab.containerAlive(pod, 'hog'), true, 'the pod was released, not stopped');
  assert.equal(await second.stop(), 0, tail(second));

  // Restarted with the brake on and the pressure still there: braked again, from the original.
  const third = await start(true);
  procs.push(third);
  const again = await third.waitFor((l) => l.msg === 'memory brake on' && l.pod === key, slow(8000));
  assert.equal(again.replaced, original);
  // A clean stop takes its brakes off: no agent, nobody to end them.
  assert.equal(await third.stop(), 0, tail(third));
  assert.equal(highOf(lab, pod), original);
  assert.equal(fs.existsSync(record), false);
  assert.ok(third.lines.some((l) => l.msg === 'memory brake off' && l.why === 'agent-stop'));
});
