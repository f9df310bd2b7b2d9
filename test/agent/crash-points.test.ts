/**
 * Crash points of an eviction, on real parts (containerd, cgroups, `evictd run` as a process) and
 * the in-repo fake API server (test/kube/fake-api-server.ts): evictd is SIGKILLed at each step
 * (src/agent/crash-point.ts), started again,
 * and the end state must be what one uninterrupted run leaves: the hog's sandbox stopped, its
 * status Failed/Evicted with exactly one Evicted event, the other pod untouched. The brake's
 * crash (SIGKILL with a brake on) is test/agent/brake.test.ts's.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setting, skipped, slow } from '../support/environment';
import type { NodeLab } from '../../src/lab/node-lab';
import { AgentProcess } from '../../src/lab/ramp-lab';
import type { CrashPoint } from '../../src/agent/crash-point';
import { CRASH_AT_REQUIRE } from '../support/crash-at';
import { FakeApiServer, makePod, writeKubeconfig } from '../kube/fake-api-server';
import { MiB, criClient, hog, missingE2e, newLab, releaseHarness, sleeper } from './agent-harness';
import { waitFor } from '../support/wait';

const labs: NodeLab[] = [];
const procs: AgentProcess[] = [];
const apis: FakeApiServer[] = [];
after(async () => {
  for (const p of procs) await p.stop().catch(() => undefined);
  for (const a of apis) await a.stop().catch(() => undefined);
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
});

/**
 * Every point on the host; in the pure cgroup v2 lab the one after the stop, before the report
 * (the journal and its recovery touch no cgroup, and each point costs minutes of emulated CPU:
 * the lab proves the path on pure v2 once, the host proves each point), and a standing order's
 * kill written by its native thread before the loop did anything with it (the tripwire's thread
 * in the lab, the memcg v1 eventfd's on the host): the use log (src/agent/order-journal.ts).
 */
const POINTS: CrashPoint[] =
  setting() === 'v2vm' ? ['eviction:stopped', 'order:killed'] : ['eviction:journaled', 'eviction:stopped', 'eviction:reported', 'order:killed'];

for (const point of POINTS) {
  test(`SIGKILLed at ${point}: the next start finishes the eviction (stopped, reported once), nothing else evicted`, async (t) => {
    if (skipped(t, missingE2e())) return;
    const { endpoint } = await criClient();
    const lab = await newLab(`crash-${point.replace(':', '-')}`, { memoryLimitBytes: 384 * MiB });
    labs.push(lab);
    const kept = await lab.runPod({ name: 'kept', namespace: 'shop', qos: 'Guaranteed', containers: [sleeper('app', 32 * MiB)] });
    const api = new FakeApiServer();
    apis.push(api);
    const url = await api.start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-crash-'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    writeKubeconfig(kubeconfig, url);
    const stateDir = path.join(dir, 'state');
    const args = ['--pod-source=api', `--kubeconfig=${kubeconfig}`, '--node-name=node-a', `--state-dir=${stateDir}`];
    api.addPod(makePod('kept', { namespace: 'shop', uid: kept.uid, memRequest: '32Mi', memLimit: '32Mi', priority: 1000 }));
    const crashing = await AgentProcess.start({
      lab,
      endpoint,
      evictionHard: 'memory.available<128Mi',
      extraArgs: args,
      env: { EVICTD_CRASH_AT: point },
      nodeArgs: CRASH_AT_REQUIRE,
      startTimeoutMs: slow(30_000),
    });
    procs.push(crashing);
    await crashing.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('memory line '), slow(30_000)).catch(() => undefined);
    const hogPod = await lab.runPod({ name: 'hog', namespace: 'shop', qos: 'BestEffort', containers: [hog(100, 300)] });
    api.addPod(makePod('hog', { namespace: 'shop', uid: hogPod.uid }));
    // The timer is cleared: left pending it would hold this file's process for its whole span
    // after the last test (10 minutes in the lab).
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([crashing.exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), slow(60_000))))]);
    clearTimeout(timer);
    assert.equal(code, null, `evictd was to SIGKILL itself at ${point}; log: ${JSON.stringify(crashing.lines.slice(-5))}`);

    const leftBehind = fs.existsSync(stateDir)
      ? fs.readdirSync(stateDir).map((f) => `${f}: ${fs.readFileSync(path.join(stateDir, f), 'utf8').slice(0, 400)}`)
      : [];
    t.diagnostic(`state dir after the crash: ${JSON.stringify(leftBehind)}`);
    const next = await AgentProcess.start({ lab, endpoint, evictionHard: 'memory.available<128Mi', extraArgs: args, startTimeoutMs: slow(30_000) });
    procs.push(next);
    await waitFor('the hog reported Evicted', () => api.pod('shop', 'hog')?.status?.reason === 'Evicted', slow(30_000)).catch((err: Error) => {
      const files = fs.existsSync(stateDir)
        ? fs.readdirSync(stateDir).map((f) => `${f}: ${fs.readFileSync(path.join(stateDir, f), 'utf8').slice(0, 600)}`)
        : [];
      throw new Error(
        `${err.message}; state dir: ${JSON.stringify(files)}; crashed run's last lines: ${JSON.stringify(crashing.lines.slice(-4))}; next run's: ${JSON.stringify(next.lines.slice(-8))}`,
      );
    });
    await waitFor("the hog's sandbox stopped", async () => !(await lab.sandboxReady(hogPod)), slow(30_000));
    await waitFor('the journal emptied', () => !fs.existsSync(path.join(stateDir, 'evictions.json')), slow(30_000));
    const evictedEvents = api.events.filter((e) => e.reason === 'Evicted' && (e.involvedObject as { name?: string }).name === 'hog');
    assert.equal(evictedEvents.length, 1, `one Evicted event for the hog: ${JSON.stringify(evictedEvents.map((e) => e.metadata))}`);
    assert.equal(await lab.sandboxReady(kept), true, 'the kept pod runs');
    assert.notEqual(api.pod('shop', 'kept')?.status?.phase, 'Failed');
    assert.ok(
      next.lines.some((l) => l.msg === 'eviction from a previous run: finishing it (stop, then report)'),
      'the next start finished the eviction the journal held',
    );
    if (point === 'order:killed') {
      assert.ok(
        crashing.lines.some((l) => l.msg === 'standing order placed' && l.pod === 'shop/hog'),
        'the hog was named by a standing order',
      );
      const uses = path.join(stateDir, 'order-uses.log');
      const log = fs.existsSync(uses) ? fs.readFileSync(uses, 'utf8') : '';
      assert.ok(!log.includes(hogPod.uid), `the next start took the hog's use and started the log afresh: ${JSON.stringify(log)}`);
    }
    assert.equal(await next.stop(), 0);
  });
}
