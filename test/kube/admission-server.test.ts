import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { type AdmissionServer, startAdmissionServer } from '../../src/kube/admission-server';
import { admit } from '../../src/policy/admission';
import type { NodeCondition, PodSpec } from '../../src/policy/types';
import { makePod } from './fake-api-server';

function post(port: number, path: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('admission endpoint', () => {
  let server: AdmissionServer;
  let conditions: NodeCondition[] = [];
  let stale: string | null = null;
  const seen: PodSpec[] = [];

  before(async () => {
    server = await startAdmissionServer({
      decide: (pod, c) => {
        seen.push(pod);
        return admit(pod, c);
      },
      conditions: () => conditions,
      stale: () => stale,
    });
  });
  after(() => server.close());

  test('no pressure: every pod is admitted', async () => {
    conditions = [];
    const r = await post(server.port, '/admit', JSON.stringify(makePod('be')));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { admit: true, conditions: [] });
  });

  test('MemoryPressure refuses a BestEffort v1.Pod with the kubelet reason and message, admits a Burstable one', async () => {
    conditions = ['MemoryPressure'];
    const be = await post(server.port, '/admit', JSON.stringify(makePod('be')));
    assert.deepEqual(be.json, { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ', conditions: ['MemoryPressure'] });
    const bu = await post(server.port, '/admit', JSON.stringify(makePod('bu', { memRequest: '64Mi' })));
    assert.equal(bu.json.admit, true);
    assert.equal(seen.at(-1)!.containers[0].requests.memory!.toString(), '64Mi', 'quantities reach the policy parsed');
  });

  test('a PodSpec body (policy model, quantities as strings) is accepted', async () => {
    conditions = ['MemoryPressure'];
    const spec = { namespace: 'n', name: 'p', uid: 'u', priority: 0, annotations: {}, containers: [{ name: 'c', requests: {}, limits: {} }], volumes: [] };
    assert.equal((await post(server.port, '/admit', JSON.stringify(spec))).json.admit, false);
    spec.containers[0].requests = { memory: '1Gi' } as never;
    assert.equal((await post(server.port, '/admit', JSON.stringify(spec))).json.admit, true);
  });

  test('an AdmissionReview is answered as one (webhook shape)', async () => {
    conditions = ['DiskPressure'];
    const pod = makePod('new');
    delete (pod.metadata as { uid?: string }).uid; // not assigned yet at admission
    const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'rev-1', object: pod } };
    const r = await post(server.port, '/admit', JSON.stringify(review));
    assert.deepEqual(r.json, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'rev-1', allowed: false, status: { code: 403, reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' } },
    });
  });

  test('bad bodies get 400 naming the field', async () => {
    assert.deepEqual(await post(server.port, '/admit', '{nope'), { status: 400, json: { error: 'body: not JSON' } });
    assert.deepEqual(await post(server.port, '/admit', '{"kind":"AdmissionReview","request":{"object":{}}}'), {
      status: 400,
      json: { error: 'request.uid: missing' },
    });
    assert.deepEqual(await post(server.port, '/admit', '{"spec":{}}'), { status: 400, json: { error: 'metadata.name: missing' } });
    assert.equal((await post(server.port, '/admit', '[1]')).status, 400);
  });

  test('conditions too old to vouch for (a wedged loop): 503 with the reason, never an admission on old news', async () => {
    conditions = [];
    stale = 'no successful pass for 40000 ms (pass failed: boom)';
    try {
      assert.deepEqual(await post(server.port, '/admit', JSON.stringify(makePod('be'))), { status: 503, json: { error: `node conditions unknown: ${stale}` } });
      const review = { kind: 'AdmissionReview', request: { uid: 'r1', object: makePod('be') } };
      assert.equal((await post(server.port, '/admit', JSON.stringify(review))).status, 503);
      const status = await new Promise<number>((resolve) =>
        http.get({ host: '127.0.0.1', port: server.port, path: '/conditions' }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }),
      );
      assert.equal(status, 503);
    } finally {
      stale = null;
    }
    assert.equal((await post(server.port, '/admit', JSON.stringify(makePod('be')))).status, 200);
  });

  test('GET /conditions reports the live set', async () => {
    conditions = ['PIDPressure'];
    const body = await new Promise<string>((resolve) => {
      http.get({ host: '127.0.0.1', port: server.port, path: '/conditions' }, (res) => {
        let t = '';
        res.on('data', (c) => (t += c));
        res.on('end', () => resolve(t));
      });
    });
    assert.deepEqual(JSON.parse(body), { conditions: ['PIDPressure'] });
  });
});

describe('admission endpoint: the decision hook (--record)', () => {
  let server: AdmissionServer;
  let fail = false;
  const told: { pod: PodSpec; conditions: NodeCondition[]; admit: boolean; reason?: string }[] = [];

  before(async () => {
    server = await startAdmissionServer({
      decide: admit,
      conditions: () => ['MemoryPressure'],
      onDecision: (pod, conditions, d) => {
        if (fail) throw new Error('recording broken');
        told.push({ pod, conditions, admit: d.admit, ...(d.reason ? { reason: d.reason } : {}) });
      },
    });
  });
  after(() => server.close());

  test('is told each decision: the pod as decided on, the conditions used, the answer given', async () => {
    const be = await post(server.port, '/admit', JSON.stringify(makePod('be')));
    const bu = await post(server.port, '/admit', JSON.stringify(makePod('bu', { memRequest: '64Mi' })));
    assert.equal(told.length, 2);
    assert.deepEqual({ ...told[0], pod: told[0]!.pod.name }, { pod: 'be', conditions: ['MemoryPressure'], admit: false, reason: 'Evicted' });
    assert.equal(be.json.admit, false);
    assert.equal(told[1]!.admit, true);
    assert.equal(bu.json.admit, true);
    assert.equal(told[1]!.pod.containers[0]!.requests.memory!.toString(), '64Mi', 'the parsed pod, as admit() read it');
  });

  test('is not told of a request refused before a decision (a bad body)', async () => {
    const before = told.length;
    assert.equal((await post(server.port, '/admit', '{"x":1}')).status, 400);
    assert.equal(told.length, before);
  });

  test('a hook that throws changes no answer', async () => {
    fail = true;
    const r = await post(server.port, '/admit', JSON.stringify(makePod('be')));
    fail = false;
    assert.equal(r.status, 200);
    assert.equal(r.json.admit, false);
  });
});
