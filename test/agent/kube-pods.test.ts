import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped } from '../support/environment';
import type { NodeLab } from '../../src/lab/node-lab';
import { createKubeParts, type KubeParts } from '../../src/kube/setup';
import { FakeApiServer, makePod, writeKubeconfig } from '../kube/fake-api-server';
import { MiB, hog, logTail, missingE2e, newLab, releaseHarness, stopAgents, startAgent, type TestAgent } from './agent-harness';
import { waitFor } from '../support/wait';

const labs: NodeLab[] = [];
const agents: TestAgent[] = [];
let api: FakeApiServer | null = null;
let parts: KubeParts | null = null;
let tmp: string | null = null;
after(async () => {
  // each agent's recording replayed as it stops; a difference fails the file once all is torn down
  const replayed = await stopAgents(agents).then(
    () => null,
    (e: Error) => e,
  );
  parts?.source.stop();
  parts?.close();
  await api?.stop();
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });

  if (replayed) throw replayed;
});

test('with the Kubernetes pod source: API priorities and requests rank the pods, forged protection annotations count for nothing, and the eviction is written back', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('kube', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  // Two pods the runtime alone cannot tell apart (same QoS tier, no annotations): "big" uses more
  // memory but within its API request; "small" uses less but has no request. The kubelet's
  // ranking, fed by the API specs, evicts "small" (usage over request) first.
  const big = await lab.runPod({ name: 'big', namespace: 'shop', qos: 'Burstable', containers: [hog(400, 250)] });
  const small = await lab.runPod({ name: 'small', namespace: 'shop', qos: 'Burstable', containers: [hog(400, 60)] });
  await waitFor(
    'both hogs to hold their memory',
    () => lab.podLog(big, 'hog').some((l) => / 250$/.test(l)) && lab.podLog(small, 'hog').some((l) => / 60$/.test(l)),
    10_000,
  );

  api = new FakeApiServer();
  const url = await api.start();
  api.addPod(makePod('big', { namespace: 'shop', uid: big.uid, memRequest: '300Mi', memLimit: '400Mi' }));
  // "small"'s author claims every protection an annotation could give: a static pod's source, the
  // old critical-pod mark, evictd's own priority and requests. None of it is the author's to
  // give (docs/kubernetes.md): it is still the one evicted.
  const forged = {
    'kubernetes.io/config.source': 'file',
    'scheduler.alpha.kubernetes.io/critical-pod': '',
    'evictd.io/priority': '2000001000',
    'evictd.io/requests': 'memory=1Gi',
  };
  api.addPod(makePod('small', { namespace: 'shop', uid: small.uid, annotations: forged }));
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-kube-'));
  const kubeconfig = path.join(tmp, 'kubeconfig');
  writeKubeconfig(kubeconfig, url);
  parts = createKubeParts({ kubeconfig, nodeName: 'node-a', podSource: 'api' });
  await parts.source.start();
  await waitFor('the pod source to know both pods', () => parts!.source.get(big.uid) && parts!.source.get(small.uid), 10_000);

  const a = await startAgent(lab, { flags: { evictionHard: 'memory.available<250Mi' }, pods: parts.source, reporter: parts.reporter! });
  agents.push(a);
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(rec.pod.uid, small.uid, `evicted ${rec.pod.name}: ${rec.reasons.join('; ')}`);
  assert.match(logTail(a.logFile, 300), /"specSource":"pod-source"/);
  // What the kubelet writes: the pod Failed/Evicted, and an Evicted event.
  await waitFor('the status write-back', () => api!.pod('shop', 'small')?.status?.reason === 'Evicted', 10_000);
  assert.equal(api.pod('shop', 'small')!.status!.phase, 'Failed');
  await waitFor('the Evicted event', () => api!.events.some((e) => e.reason === 'Evicted'), 10_000);
  assert.notEqual(api.pod('shop', 'big')!.status!.phase, 'Failed');
});
