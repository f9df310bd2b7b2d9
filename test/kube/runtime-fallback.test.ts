// While the API server or the kubelet is out of reach, the agent makes its pod specs from the
// runtime's sandboxes (agent/active-pods.ts): the pod source says so in its mode, its logs and
// its metrics, keeps serving the specs it has, and switches back when its server answers.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { ApiPodSource } from '../../src/kube/api-pod-source';
import type { KubeClient } from '../../src/kube/client';
import { KubeletPodSource } from '../../src/kube/kubelet-pod-source';
import { registerKubeMetrics } from '../../src/kube/metrics';
import type { PodSource } from '../../src/kube/pod-source';
import { FakeApiServer, makePod } from './fake-api-server';
import { client, MemoryLogger } from './helpers';
import { waitFor } from '../support/wait';

describe('fallback to runtime-only pod specs', () => {
  let api: FakeApiServer;
  let kc: KubeClient;
  let source: PodSource;
  let log: MemoryLogger;

  beforeEach(async () => {
    api = new FakeApiServer();
    kc = client(await api.start(), 300);
    log = new MemoryLogger();
  });

  afterEach(async () => {
    source?.stop();
    kc.close();
    await api.stop();
  });

  function build(kind: 'api' | 'kubelet'): PodSource {
    source =
      kind === 'api'
        ? new ApiPodSource({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 20, maxBackoffMs: 60 })
        : new KubeletPodSource({ client: kc, log, intervalMs: 30, maxBackoffMs: 60 });
    return source;
  }

  test('API down at start: the mode is runtime, the logs and metrics say so; API back: its specs are served', async () => {
    api.addPod(makePod('web', { priority: 500, memRequest: '1Gi' }));
    api.faults.push({ match: () => true, status: 503, times: 5 });
    const registry = new Registry();
    const s = build('api');
    registerKubeMetrics(registry, { source: s });
    await s.start();
    assert.equal(s.mode, 'runtime');
    assert.equal(s.healthy, false);
    assert.ok(log.has('warn', /falling back to runtime-only pod specs/));
    let text = await registry.metrics();
    assert.match(text, /evictd_kube_pod_source_healthy 0/);
    assert.match(text, /evictd_kube_pod_source_mode\{mode="runtime"\} 1/);

    await waitFor('api back', () => s.mode === 'api');
    assert.equal(s.get('uid-web')!.priority, 500, 'API spec once known');
    assert.equal(s.get('uid-web')!.containers[0].requests.memory!.toString(), '1Gi');
    assert.deepEqual(
      s.list().map((p) => p.name),
      ['web'],
    );
    assert.ok(log.has('info', /pod specs from the api source again/));
    text = await registry.metrics();
    assert.match(text, /evictd_kube_pod_source_healthy 1/);
    assert.match(text, /evictd_kube_pod_source_mode\{mode="api"\} 1/);
    assert.match(text, /evictd_kube_pod_source_failures_total 5/);
  });

  test('API up at start: no fallback is announced', async () => {
    api.addPod(makePod('web'));
    const s = build('api');
    await s.start();
    assert.equal(s.mode, 'api');
    assert.ok(!log.has('warn', /falling back/));
  });

  test("the kubelet's /pods: polled, and falls back the same way while stale specs are still served", async () => {
    api.addPod(makePod('a'));
    const s = build('kubelet');
    await s.start();
    assert.equal(s.mode, 'kubelet');
    assert.equal(s.get('uid-a')!.name, 'a');
    api.addPod(makePod('b'));
    await waitFor('b polled', () => s.get('uid-b') !== undefined);
    api.faults.push({ match: (r) => r.path === '/pods', status: 401, times: 3 });
    await waitFor('fallback', () => s.mode === 'runtime');
    assert.equal(s.get('uid-a')!.name, 'a', 'stale specs still served');
    assert.ok(log.has('warn', /kubelet source unavailable; falling back to runtime-only pod specs/));
    await waitFor('kubelet back', () => s.mode === 'kubelet');
  });
});
