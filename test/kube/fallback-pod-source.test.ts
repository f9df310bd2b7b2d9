import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { ApiPodSource } from '../../src/kube/api-pod-source';
import type { KubeClient } from '../../src/kube/client';
import { FallbackPodSource } from '../../src/kube/fallback-pod-source';
import { KubeletPodSource } from '../../src/kube/kubelet-pod-source';
import { registerKubeMetrics } from '../../src/kube/metrics';
import { RuntimePodSource, type RuntimeSandbox } from '../../src/kube/runtime-pod-source';
import { FakeApiServer, makePod } from './fake-api-server';
import { client, MemoryLogger } from './helpers';
import { waitFor } from '../support/wait';

describe('fallback to runtime-only pod specs', () => {
  let api: FakeApiServer;
  let kc: KubeClient;
  let source: FallbackPodSource;
  let sandboxes: RuntimeSandbox[];
  let log: MemoryLogger;

  beforeEach(async () => {
    api = new FakeApiServer();
    kc = client(await api.start(), 300);
    log = new MemoryLogger();
    sandboxes = [];
  });

  afterEach(async () => {
    source?.stop();
    kc.close();
    await api.stop();
  });

  function build(primaryKind: 'api' | 'kubelet') {
    const primary =
      primaryKind === 'api'
        ? new ApiPodSource({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 20, maxBackoffMs: 60 })
        : new KubeletPodSource({ client: kc, log, intervalMs: 30, maxBackoffMs: 60 });
    const runtime = new RuntimePodSource({ listSandboxes: async () => sandboxes, intervalMs: 20 });
    source = new FallbackPodSource(primary, runtime, log);
    return source;
  }

  test('API down at start: runtime specs are served, the logs and metrics say so; API back: its specs win', async () => {
    api.addPod(makePod('web', { priority: 500, memRequest: '1Gi' }));
    sandboxes = [{ metadata: { name: 'web', namespace: 'default', uid: 'uid-web' } }, { metadata: { name: 'new', namespace: 'default', uid: 'uid-new' } }];
    api.faults.push({ match: () => true, status: 503, times: 5 });
    const registry = new Registry();
    const s = build('api');
    registerKubeMetrics(registry, { source: s });
    await s.start();
    assert.equal(s.mode, 'runtime');
    assert.equal(s.healthy, false);
    assert.equal(s.get('uid-web')!.priority, 0, 'runtime guess: no priority');
    assert.ok(log.has('warn', /falling back to runtime-only pod specs/));
    let text = await registry.metrics();
    assert.match(text, /evictd_kube_pod_source_healthy 0/);
    assert.match(text, /evictd_kube_pod_source_mode\{mode="runtime"\} 1/);

    await waitFor('api back', () => s.mode === 'api');
    assert.equal(s.get('uid-web')!.priority, 500, 'API spec wins once known');
    assert.equal(s.get('uid-web')!.containers[0].requests.memory!.toString(), '1Gi');
    assert.equal(s.get('uid-new')!.name, 'new', 'a sandbox the API does not know is still served');
    assert.deepEqual(s.list().map((p) => p.name).sort(), ['new', 'web']);
    assert.ok(log.has('info', /pod specs from the api source again/));
    text = await registry.metrics();
    assert.match(text, /evictd_kube_pod_source_healthy 1/);
    assert.match(text, /evictd_kube_pod_source_mode\{mode="api"\} 1/);
    assert.match(text, /evictd_kube_pod_source_failures_total 5/);
  });

  test('a terminal pod known to the API is not resurrected from a lingering sandbox', async () => {
    api.addPod(makePod('done', { phase: 'Failed' }));
    sandboxes = [{ metadata: { name: 'done', namespace: 'default', uid: 'uid-done' } }];
    await build('api').start();
    assert.deepEqual(source.list(), []);
  });

  test("the kubelet's /pods as primary: polled, diffed, and falls back the same way", async () => {
    api.addPod(makePod('a'));
    const s = build('kubelet');
    await s.start();
    assert.equal(s.mode, 'kubelet');
    assert.equal(s.get('uid-a')!.name, 'a');
    api.addPod(makePod('b'));
    await waitFor('b polled', () => s.get('uid-b') !== undefined);
    api.faults.push({ match: (r) => r.path === '/pods', status: 401, times: 3 });
    sandboxes = [{ metadata: { name: 'c', namespace: 'default', uid: 'uid-c' } }];
    await waitFor('fallback', () => s.mode === 'runtime');
    assert.equal(s.get('uid-a')!.name, 'a', 'stale primary specs still served');
    await waitFor('c from runtime', () => s.get('uid-c') !== undefined);
    await waitFor('kubelet back', () => s.mode === 'kubelet');
  });
});
