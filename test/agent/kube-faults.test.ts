/**
 * The Kubernetes side's faults on real parts (containerd, cgroups, the agent; the API is the
 * in-repo fake API server, test/kube/fake-api-server.ts):
 * - a report that gave up does not swallow the next eviction of the pod the kubelet restarted in
 *   place under the same uid: that eviction is written too;
 * - with the API down at start, a system-node-critical pod outside kube-system keeps the
 *   priority the API last gave it (the state dir's last-known priorities) and is not evicted,
 *   even after a start in between with the API and containerd both down.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped } from '../support/environment';
import type { NodeLab } from '../../src/lab/node-lab';
import { createKubeParts, type KubeParts } from '../../src/kube/setup';
import { FakeApiServer, makePod, writeKubeconfig } from '../kube/fake-api-server';
import { MiB, containerdPid, hog, logTail, missingE2e, newLab, releaseHarness, stopAgents, startAgent, type TestAgent } from './agent-harness';
import { waitFor } from '../support/wait';

const labs: NodeLab[] = [];
const agents: TestAgent[] = [];
const apis: FakeApiServer[] = [];
const kube: KubeParts[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-kube-faults-'));
after(async () => {
  // each agent's recording replayed as it stops; a difference fails the file once all is torn down
  const replayed = await stopAgents(agents).then(
    () => null,
    (e: Error) => e,
  );
  for (const k of kube) {
    k.source.stop();
    k.close();
  }
  for (const api of apis) await api.stop().catch(() => undefined);
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
  fs.rmSync(tmp, { recursive: true, force: true });

  if (replayed) throw replayed;
});

function kubeconfig(name: string, url: string): string {
  const file = path.join(tmp, name);
  return writeKubeconfig(file, url);
}

const fail = (a: TestAgent) => (err: Error) => {
  throw new Error(`${err.message}\n${logTail(a.logFile, 40)}`);
};

test('a report that gave up does not swallow the next eviction of a pod restarted in place: that one is written', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('report-again', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const api = new FakeApiServer();
  apis.push(api);
  const url = await api.start();
  const first = await lab.runPod({ name: 'hog', namespace: 'shop', qos: 'BestEffort', containers: [hog(400, 320)] });
  api.addPod(makePod('hog', { namespace: 'shop', uid: first.uid }));
  // The first status write is refused for good (422: not retried): that report gives up.
  api.faults.push({ match: (r) => r.method === 'PATCH' && r.path.endsWith('/pods/hog/status'), status: 422, times: 1 });
  const parts = createKubeParts({ kubeconfig: kubeconfig('report-again', url), nodeName: 'node-a', podSource: 'api' });
  kube.push(parts);
  await parts.source.start();
  await waitFor('the pod source to know the hog', () => parts.source.get(first.uid), 10_000);
  const a = await startAgent(lab, { flags: { evictionHard: 'memory.available<250Mi' }, pods: parts.source, reporter: parts.reporter! });
  agents.push(a);
  await waitFor('the first eviction', () => a.evictions.find((e) => e.ok && e.pod.uid === first.uid), 20_000).catch(fail(a));
  await waitFor('the refused status write', () => api.requests.some((r) => r.method === 'PATCH' && r.path.endsWith('/pods/hog/status')), 10_000);
  await parts.reporter!.drain();
  assert.notEqual(api.pod('shop', 'hog')?.status?.reason, 'Evicted', 'the first status write was refused');

  // The kubelet, never told, restarts the pod in place: same uid, a new sandbox. It fills the node again.
  const again = await lab.runPod({ name: 'hog', namespace: 'shop', qos: 'BestEffort', uid: first.uid, attempt: 1, containers: [hog(400, 320)] });
  await waitFor('the second eviction', () => a.evictions.filter((e) => e.ok && e.pod.uid === again.uid).length >= 2, 20_000).catch(fail(a));
  await waitFor('the status write-back of the second eviction', () => api.pod('shop', 'hog')?.status?.reason === 'Evicted', 10_000);
  assert.equal(api.pod('shop', 'hog')!.status!.phase, 'Failed');
  await waitFor('an Evicted event per eviction', () => api.events.filter((e) => e.reason === 'Evicted').length === 2, 10_000);
});

test('API down at start, after a start with the API and containerd both down: a system-node-critical pod outside kube-system keeps its last-known priority and is not evicted; the other pod is', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('last-known', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  // The critical pod uses the most memory and requests none: by usage alone it would go first.
  const cni = await lab.runPod({ name: 'cni', namespace: 'net', qos: 'BestEffort', containers: [hog(400, 200)] });
  const app = await lab.runPod({ name: 'app', namespace: 'shop', qos: 'BestEffort', containers: [hog(400, 150)] });
  await waitFor(
    'both hogs to hold their memory',
    () => lab.podLog(cni, 'hog').some((l) => / 200$/.test(l)) && lab.podLog(app, 'hog').some((l) => / 150$/.test(l)),
    10_000,
  );
  const stateDir = path.join(tmp, 'state');

  // A first run with the API up learns the priorities (no threshold is met: it evicts nothing).
  const api = new FakeApiServer();
  apis.push(api);
  const url = await api.start();
  api.addPod(makePod('cni', { namespace: 'net', uid: cni.uid, priority: 2000001000 }));
  api.addPod(makePod('app', { namespace: 'shop', uid: app.uid }));
  const config = kubeconfig('last-known', url);
  const up = createKubeParts({ kubeconfig: config, nodeName: 'node-a', podSource: 'api' });
  kube.push(up);
  await up.source.start();
  await waitFor('the pod source to know both pods', () => up.source.get(cni.uid) && up.source.get(app.uid), 10_000);
  const learning = await startAgent(lab, { flags: { evictionHard: 'memory.available<1Mi' }, pods: up.source, stateDir, housekeepingIntervalMs: 500 });
  agents.push(learning);
  const file = path.join(stateDir, 'pod-priorities.json');
  await waitFor('the priorities kept in the state dir', () => fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes(cni.uid), 10_000).catch(
    fail(learning),
  );
  await learning.stop();
  up.source.stop();
  up.close();
  await api.stop();

  // A start with the API and containerd both down (frozen): it lists no pod and hears of none,
  // and must forget no last-known priority (it used to write {"pods":{}} within 10 s).
  const pid = containerdPid();
  assert.ok(pid, 'the harness containerd runs');
  const blind = createKubeParts({ kubeconfig: config, nodeName: 'node-a', podSource: 'api' });
  kube.push(blind);
  void blind.source.start().catch(() => undefined);
  process.kill(pid, 'SIGSTOP');
  try {
    const b = await startAgent(lab, {
      flags: { evictionHard: 'memory.available<1Mi' },
      pods: blind.source,
      stateDir,
      housekeepingIntervalMs: 500,
      noReplay: 'passes failing on the frozen runtime are not recorded',
    });
    agents.push(b);
    await waitFor('10 passes blind', () => b.agent.controller.stats.passes >= 10, 30_000).catch(fail(b));
    await b.stop();
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  blind.source.stop();
  blind.close();
  const kept = JSON.parse(fs.readFileSync(file, 'utf8')) as { pods: Record<string, unknown> };
  assert.ok(Object.keys(kept.pods).includes(cni.uid), `the critical pod's priority kept through the double outage: ${JSON.stringify(kept)}`);

  // The next start finds the API gone; the threshold is met at once.
  const down = createKubeParts({ kubeconfig: config, nodeName: 'node-a', podSource: 'api' });
  kube.push(down);
  void down.source.start().catch(() => undefined);
  const a = await startAgent(lab, { flags: { evictionHard: 'memory.available<250Mi' }, pods: down.source, stateDir });
  agents.push(a);
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 20_000).catch(fail(a));
  assert.equal(rec.pod.uid, app.uid, `evicted ${rec.pod.namespace}/${rec.pod.name}: ${rec.reasons.join('; ')}`);
  assert.ok(lab.podAlive(cni), 'the critical pod runs');
  assert.match(logTail(a.logFile, 100_000), /"specSource":"last-known"/, 'the agent says which source it decided on');
});
