// The CRI client against an in-process gRPC server on a Unix socket, serving the same
// proto/runtime-v1.proto: failure paths a real runtime cannot be made to produce on demand
// (an RPC that never answers, a runtime without pod stats, a socket that appears later).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { CriClient, CriError, evictPod } from '../../src/cri';
import { runtimeV1 } from '../../src/cri/client';
import { UsageError } from '../../src/errors';
import { slow } from '../support/environment';

type Handler = (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<unknown>) => void;

const unimplemented: Handler = (_c, cb) => cb({ code: grpc.status.UNIMPLEMENTED, details: 'not here' });
const never: Handler = () => undefined;

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-cri-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A runtime.v1 server on `sock`; unlisted methods answer UNIMPLEMENTED (as grpc does). */
async function serve(sock: string, handlers: Record<string, Handler>): Promise<grpc.Server> {
  const pkg = runtimeV1();
  const server = new grpc.Server();
  const impl = (svc: grpc.ServiceClientConstructor) => {
    const out: grpc.UntypedServiceImplementation = {};
    for (const name of Object.keys(svc.service)) out[name] = handlers[name] ?? unimplemented;
    return out;
  };
  server.addService((pkg.RuntimeService as grpc.ServiceClientConstructor).service, impl(pkg.RuntimeService as grpc.ServiceClientConstructor));
  server.addService((pkg.ImageService as grpc.ServiceClientConstructor).service, impl(pkg.ImageService as grpc.ServiceClientConstructor));
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return server;
}

function stop(server: grpc.Server): void {
  server.forceShutdown();
}

const sandbox = (id: string, uid: string) => ({ id, metadata: { name: `pod-${id}`, uid, namespace: 'default', attempt: 0 }, state: 'SANDBOX_READY', createdAt: 1, labels: {}, annotations: {} });
const cstats = (id: string, ws: number) => ({ attributes: { id, metadata: { name: id, attempt: 0 }, labels: {}, annotations: {} }, memory: { timestamp: 5, workingSetBytes: { value: ws }, usageBytes: { value: ws + 100 } }, cpu: { timestamp: 5, usageCoreNanoSeconds: { value: 10 } } });

test('ListPodSandboxStats falls back to container stats when the runtime answers UNIMPLEMENTED', async () => {
  const sock = path.join(dir, 'fallback.sock');
  let podStatsCalls = 0;
  const server = await serve(sock, {
    ListPodSandboxStats: (_c, cb) => {
      podStatsCalls++;
      cb({ code: grpc.status.UNIMPLEMENTED, details: 'unknown method ListPodSandboxStats' });
    },
    ListPodSandbox: (_c, cb) => cb(null, { items: [sandbox('a', 'ua'), sandbox('b', 'ub')] }),
    ListContainers: (_c, cb) =>
      cb(null, {
        containers: [
          { id: 'a1', podSandboxId: 'a', state: 'CONTAINER_RUNNING' },
          { id: 'a2', podSandboxId: 'a', state: 'CONTAINER_RUNNING' },
          { id: 'b1', podSandboxId: 'b', state: 'CONTAINER_RUNNING' },
        ],
      }),
    ListContainerStats: (_c, cb) => cb(null, { stats: [cstats('a1', 1000), cstats('a2', 2000), cstats('b1', 7)] }),
  });
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: slow(2000) });
  try {
    const stats = await client.listPodSandboxStats();
    assert.equal(client.podStatsRpc, false);
    const byId = Object.fromEntries(stats.map((s) => [s.attributes?.id, s]));
    assert.equal(byId.a?.linux?.memory?.workingSetBytes?.value, 3000);
    assert.equal(byId.a?.linux?.memory?.usageBytes?.value, 3200);
    assert.equal(byId.a?.linux?.containers.length, 2);
    assert.equal(byId.b?.linux?.memory?.workingSetBytes?.value, 7);
    assert.equal(byId.a?.attributes?.metadata?.uid, 'ua');
    await client.listPodSandboxStats();
    assert.equal(podStatsCalls, 1, 'after UNIMPLEMENTED the RPC is not tried again');
  } finally {
    client.close();
    stop(server);
  }
});

test('a runtime that does answer ListPodSandboxStats is used as is', async () => {
  const sock = path.join(dir, 'podstats.sock');
  const server = await serve(sock, {
    ListPodSandboxStats: (call, cb) => {
      const filter = call.request.filter as { id: string };
      cb(null, { stats: [{ attributes: { id: filter.id || 'all' }, linux: { memory: { workingSetBytes: { value: 42 } } } }] });
    },
  });
  const client = CriClient.connect(`unix://${sock}`);
  try {
    const stats = await client.listPodSandboxStats({ id: 'x' });
    assert.equal(client.podStatsRpc, true);
    assert.equal(stats[0]?.attributes?.id, 'x');
    assert.equal(stats[0]?.linux?.memory?.workingSetBytes?.value, 42);
    assert.equal(stats[0]?.linux?.memory?.usageBytes, null, 'unset wrapper fields are null, not 0');
  } finally {
    client.close();
    stop(server);
  }
});

test('nothing listening at the endpoint: retried until the deadline, then UNAVAILABLE naming the socket', async () => {
  const sock = path.join(dir, 'nobody.sock');
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: 600 });
  try {
    const err = await client.version().then(
      () => assert.fail('version() answered with nobody listening'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CriError);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.equal(err.rpc, 'Version');
    assert.ok(err.attempts > 1, `retried (attempts ${err.attempts})`);
    assert.match(err.message, new RegExp(sock.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  } finally {
    client.close();
  }
});

test('a runtime that starts listening during the call is reached by a retry', async () => {
  const sock = path.join(dir, 'late.sock');
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: 5000 });
  let server: grpc.Server | undefined;
  const late = new Promise<void>((resolve) =>
    setTimeout(async () => {
      server = await serve(sock, { Version: (_c, cb) => cb(null, { version: '0.1.0', runtimeName: 'late', runtimeVersion: '1', runtimeApiVersion: 'v1' }) });
      resolve();
    }, 300),
  );
  try {
    const v = await client.version();
    assert.equal(v.runtimeName, 'late');
    await late;
  } finally {
    client.close();
    if (server) stop(server);
  }
});

test('the channel reconnects after the runtime restarts on the same socket', async () => {
  const sock = path.join(dir, 'restart.sock');
  let server = await serve(sock, { Version: (_c, cb) => cb(null, { runtimeName: 'first' }) });
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: 5000 });
  try {
    assert.equal((await client.version()).runtimeName, 'first');
    stop(server);
    fs.rmSync(sock, { force: true });
    server = await serve(sock, { Version: (_c, cb) => cb(null, { runtimeName: 'second' }) });
    assert.equal((await client.version()).runtimeName, 'second');
  } finally {
    client.close();
    stop(server);
  }
});

test('a call past its deadline fails with DEADLINE_EXCEEDED and is not retried', async () => {
  const sock = path.join(dir, 'slow.sock');
  let calls = 0;
  const server = await serve(sock, {
    ListPodSandbox: () => {
      calls++;
    },
  });
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: 300 });
  try {
    const err = await client.listPodSandbox().then(
      () => assert.fail('answered'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CriError);
    assert.equal(err.code, 'DEADLINE_EXCEEDED');
    assert.equal(err.rpc, 'ListPodSandbox');
    assert.equal(calls, 1);
  } finally {
    client.close();
    stop(server);
  }
});

test('creating a sandbox is not retried when the runtime is unavailable (a lost answer may mean it ran)', async () => {
  const client = CriClient.connect(`unix://${path.join(dir, 'none.sock')}`, { timeoutMs: 500 });
  try {
    const err = await client.runPodSandbox({ metadata: { name: 'x', uid: 'u', namespace: 'd', attempt: 0 } }).then(
      () => assert.fail('answered'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CriError);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.equal(err.attempts, 1);
  } finally {
    client.close();
  }
});

test('requests reach the runtime with upstream field numbers (timeout, filters, resources)', async () => {
  const sock = path.join(dir, 'wire.sock');
  const seen: Record<string, Record<string, unknown>> = {};
  const record =
    (name: string, reply: unknown = {}): Handler =>
    (call, cb) => {
      seen[name] = call.request;
      cb(null, reply);
    };
  const server = await serve(sock, {
    StopContainer: record('StopContainer'),
    ListContainers: record('ListContainers', { containers: [] }),
    CreateContainer: record('CreateContainer', { containerId: 'c1' }),
    RemoveImage: record('RemoveImage'),
  });
  const client = CriClient.connect(`unix://${sock}`);
  try {
    await client.stopContainer('abc', 7);
    assert.equal(seen.StopContainer?.containerId, 'abc');
    assert.equal(seen.StopContainer?.timeout, 7);
    await client.listContainers({ podSandboxId: 'p', state: 'CONTAINER_EXITED' });
    assert.deepEqual(seen.ListContainers?.filter, { id: '', podSandboxId: 'p', state: { state: 'CONTAINER_EXITED' }, labelSelector: {} });
    const id = await client.createContainer(
      'p',
      { metadata: { name: 'm' }, image: { image: 'img' }, args: ['1'], linux: { resources: { memoryLimitInBytes: 64 << 20 } } },
      { metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 } },
    );
    assert.equal(id, 'c1');
    const cfg = seen.CreateContainer?.config as { linux: { resources: { memoryLimitInBytes: number } }; args: string[] };
    assert.equal(cfg.linux.resources.memoryLimitInBytes, 64 << 20);
    assert.deepEqual(cfg.args, ['1']);
    await client.removeImage('sha256:1');
    assert.deepEqual((seen.RemoveImage?.image as { image: string }).image, 'sha256:1');
  } finally {
    client.close();
    stop(server);
  }
});

test('evictPod returns ok=false with the failed step when a container stop times out, and goes no further', async () => {
  const sock = path.join(dir, 'hung.sock');
  let sandboxStops = 0;
  const server = await serve(sock, {
    ListContainers: (_c, cb) => cb(null, { containers: [{ id: 'c1', podSandboxId: 'p1', state: 'CONTAINER_RUNNING' }] }),
    StopContainer: never,
    StopPodSandbox: (_c, cb) => {
      sandboxStops++;
      cb(null, {});
    },
  });
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: slow(2000) });
  try {
    const r = await evictPod(client, 'p1', 0, { stopSlackMs: 300 });
    assert.equal(r.ok, false);
    assert.equal(r.failedStep, 'stopContainer');
    assert.equal(r.error?.code, 'DEADLINE_EXCEEDED');
    assert.equal(r.error?.rpc, 'StopContainer');
    assert.deepEqual(r.containerIds, ['c1']);
    assert.equal(sandboxStops, 0);
  } finally {
    client.close();
    stop(server);
  }
});

test('evictPod stops containers, then the sandbox, then removes it, in that order', async () => {
  const sock = path.join(dir, 'order.sock');
  const order: string[] = [];
  const step =
    (name: string): Handler =>
    (call, cb) => {
      order.push(`${name}:${String(call.request.containerId ?? call.request.podSandboxId)}:${String(call.request.timeout ?? '')}`);
      cb(null, {});
    };
  const server = await serve(sock, {
    ListContainers: (_c, cb) =>
      cb(null, {
        containers: [
          { id: 'c1', podSandboxId: 'p1', state: 'CONTAINER_RUNNING' },
          { id: 'c0', podSandboxId: 'p1', state: 'CONTAINER_EXITED' },
        ],
      }),
    StopContainer: step('StopContainer'),
    StopPodSandbox: step('StopPodSandbox'),
    RemovePodSandbox: step('RemovePodSandbox'),
  });
  const client = CriClient.connect(`unix://${sock}`);
  try {
    const r = await evictPod(client, 'p1', 3);
    assert.equal(r.ok, true, r.error?.message);
    assert.deepEqual(order, ['StopContainer:c1:3', 'StopPodSandbox:p1:', 'RemovePodSandbox:p1:']);
    assert.ok(r.timings.totalMs >= r.timings.stopContainersMs);
  } finally {
    client.close();
    stop(server);
  }
});

test('endpoints are taken as the kubelet takes them; anything else is a one-line usage error', () => {
  for (const [endpoint, socketPath] of [
    ['unix:///run/containerd/containerd.sock', '/run/containerd/containerd.sock'],
    ['/run/crio/crio.sock', '/run/crio/crio.sock'],
  ]) {
    const client = CriClient.connect(endpoint as string);
    assert.equal(client.socketPath, socketPath);
    client.close();
  }
  assert.throws(() => CriClient.connect('tcp://10.0.0.1:1234'), (e: unknown) => e instanceof UsageError && /--container-runtime-endpoint: "tcp:\/\/10\.0\.0\.1:1234"/.test(e.message));
  assert.throws(() => CriClient.connect('unix://relative.sock'), UsageError);
});
