// The kubelet's release from evictd's own Node (kube/kubelet-version.ts): what decides
// HugepageAwareEviction's default (agent/hugepage-gate.ts). A refusal or a Node without a version
// rejects, and the gate stays off.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError, type KubeClient } from '../../src/kube/client';
import { readKubeletVersion } from '../../src/kube/kubelet-version';
import { FakeApiServer } from './fake-api-server';
import { client } from './helpers';

let api: FakeApiServer;
let kc: KubeClient;
before(async () => {
  api = new FakeApiServer();
  kc = client(await api.start(), 300);
  api.nodes.set('node-a', { kind: 'Node', metadata: { name: 'node-a' }, status: { nodeInfo: { kubeletVersion: 'v1.37.1' } } });
  api.nodes.set('bare', { kind: 'Node', metadata: { name: 'bare' }, status: {} });
});
after(async () => {
  kc.close();
  await api.stop();
});

test("the Node's status.nodeInfo.kubeletVersion, by a GET of that Node alone", async () => {
  assert.equal(await readKubeletVersion(kc, 'node-a'), 'v1.37.1');
  assert.deepEqual(
    api.requests.map((r) => `${r.method} ${r.path}`),
    ['GET /api/v1/nodes/node-a'],
  );
});

test('no such Node, a refusal, a Node without a version: each rejects, naming why', async () => {
  await assert.rejects(readKubeletVersion(kc, 'node-b'), (e: unknown) => e instanceof ApiError && e.status === 404);
  api.faults.push({ match: (r) => r.path === '/api/v1/nodes/node-a', status: 403 });
  await assert.rejects(readKubeletVersion(kc, 'node-a'), (e: unknown) => e instanceof ApiError && e.status === 403);
  await assert.rejects(readKubeletVersion(kc, 'bare'), /node bare has no status\.nodeInfo\.kubeletVersion/);
});
