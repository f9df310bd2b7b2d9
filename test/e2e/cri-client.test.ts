// The CRI client against an in-process gRPC server on a Unix socket, serving the same
// proto/runtime-v1.proto: failure paths a real runtime cannot be made to produce on demand
// (an RPC that never answers, a runtime without pod stats, a socket that appears later).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { CriClient, CriError, EvictError, evictPod } from '../../src/cri';
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

const sandbox = (id: string, uid: string) => ({
  id,
  metadata: { name: `pod-${id}`, uid, namespace: 'default', attempt: 0 },
  state: 'SANDBOX_READY',
  createdAt: 1,
  labels: {},
  annotations: {},
});
const cstats = (id: string, ws: number) => ({
  attributes: { id, metadata: { name: id, attempt: 0 }, labels: {}, annotations: {} },
  memory: { timestamp: 5, workingSetBytes: { value: ws }, usageBytes: { value: ws + 100 } },
  cpu: { timestamp: 5, usageCoreNanoSeconds: { value: 10 } },
});

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

/**
 * The protobuf wire format read by hand: field number -> values (varints as bigint, length-
 * delimited fields as bytes). The field-number test decodes with this, not with proto/, so a
 * wrong number in proto/ cannot agree with itself.
 */
function wireFields(buf: Buffer): Map<number, (bigint | Buffer)[]> {
  const out = new Map<number, (bigint | Buffer)[]>();
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const [field, wire] = [key >> 3, key & 7];
    let value: bigint | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 2) {
      const n = Number(varint());
      value = buf.subarray(i, i + n);
      i += n;
    } else throw new Error(`wire type ${wire} at field ${field}: not used by these requests`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}
const one = (m: Map<number, (bigint | Buffer)[]>, field: number) => m.get(field)?.[0];
const text = (m: Map<number, (bigint | Buffer)[]>, field: number) => (one(m, field) as Buffer | undefined)?.toString('utf8');
const sub = (m: Map<number, (bigint | Buffer)[]>, field: number) => wireFields((one(m, field) as Buffer | undefined) ?? Buffer.alloc(0));

test('requests reach the runtime with upstream field numbers (timeout, filters, resources), read off the wire without proto/', async () => {
  const sock = path.join(dir, 'wire.sock');
  // The server keeps each request's bytes as they came: its deserializer is the identity.
  const raw: Record<string, Buffer> = {};
  const pkg = runtimeV1();
  const server = new grpc.Server();
  const replies: Record<string, unknown> = { StopContainer: {}, ListContainers: { containers: [] }, CreateContainer: { containerId: 'c1' }, RemoveImage: {} };
  for (const svc of [pkg.RuntimeService, pkg.ImageService] as grpc.ServiceClientConstructor[]) {
    const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [name, method] of Object.entries(svc.service)) {
      definition[name] = { ...(method as grpc.MethodDefinition<unknown, unknown>), requestDeserialize: (b: Buffer) => b };
      impl[name] = ((call: grpc.ServerUnaryCall<Buffer, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        raw[name] = call.request;
        if (name in replies) cb(null, replies[name]);
        else cb({ code: grpc.status.UNIMPLEMENTED, details: 'not here' });
      }) as grpc.UntypedHandleCall;
    }
    server.addService(definition as grpc.ServiceDefinition, impl);
  }
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  const client = CriClient.connect(`unix://${sock}`);
  try {
    // StopContainerRequest: container_id = 1, timeout = 2.
    await client.stopContainer('abc', 7);
    const stopReq = wireFields(raw.StopContainer!);
    assert.equal(text(stopReq, 1), 'abc');
    assert.equal(one(stopReq, 2), 7n);
    // ListContainersRequest: filter = 1; ContainerFilter: state = 2 (ContainerStateValue: state = 1,
    // CONTAINER_EXITED = 2), pod_sandbox_id = 3.
    await client.listContainers({ podSandboxId: 'p', state: 'CONTAINER_EXITED' });
    const filter = sub(wireFields(raw.ListContainers!), 1);
    assert.equal(text(filter, 3), 'p');
    assert.equal(one(sub(filter, 2), 1), 2n);
    // CreateContainerRequest: pod_sandbox_id = 1, config = 2, sandbox_config = 3; ContainerConfig:
    // metadata = 1, image = 2, args = 4, linux = 15; LinuxContainerConfig: resources = 1;
    // LinuxContainerResources: memory_limit_in_bytes = 4.
    const id = await client.createContainer(
      'p',
      {
        metadata: { name: 'm' },
        image: { image: 'img' },
        args: ['1'],
        mounts: [{ containerPath: '/c', hostPath: '/h', readonly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }],
        linux: {
          resources: { memoryLimitInBytes: 64 << 20 },
          securityContext: {
            capabilities: { addCapabilities: ['KILL'], dropCapabilities: ['ALL'] },
            readonlyRootfs: true,
            noNewPrivs: true,
            runAsGroup: { value: 7 },
            seccomp: { profileType: 'Localhost', localhostRef: 'p.json' },
          },
        },
      },
      { metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 } },
    );
    assert.equal(id, 'c1');
    const create = wireFields(raw.CreateContainer!);
    assert.equal(text(create, 1), 'p');
    const config = sub(create, 2);
    assert.equal(text(sub(config, 1), 1), 'm');
    assert.equal(text(sub(config, 2), 1), 'img');
    assert.deepEqual(
      config.get(4)?.map((b) => (b as Buffer).toString()),
      ['1'],
    );
    assert.equal(one(sub(sub(config, 15), 1), 4), BigInt(64 << 20));
    // Mount (ContainerConfig.mounts = 7): container_path = 1, host_path = 2, readonly = 3,
    // propagation = 5 (PROPAGATION_HOST_TO_CONTAINER = 1).
    const mount = sub(config, 7);
    assert.deepEqual([text(mount, 1), text(mount, 2), one(mount, 3), one(mount, 5)], ['/c', '/h', 1n, 1n]);
    // LinuxContainerConfig.security_context = 2: capabilities = 1 (add_capabilities = 1,
    // drop_capabilities = 2), readonly_rootfs = 7, no_new_privs = 11, run_as_group = 12,
    // seccomp = 15 (profile_type = 1, Localhost = 2; localhost_ref = 2).
    const security = sub(sub(config, 15), 2);
    assert.deepEqual([text(sub(security, 1), 1), text(sub(security, 1), 2)], ['KILL', 'ALL']);
    assert.deepEqual([one(security, 7), one(security, 11), one(sub(security, 12), 1)], [1n, 1n, 7n]);
    assert.deepEqual([one(sub(security, 15), 1), text(sub(security, 15), 2)], [2n, 'p.json']);
    // PodSandboxConfig: metadata = 1 (PodSandboxMetadata: name = 1, uid = 2, namespace = 3).
    const sandboxMeta = sub(sub(create, 3), 1);
    assert.deepEqual([text(sandboxMeta, 1), text(sandboxMeta, 2), text(sandboxMeta, 3)], ['p', 'u', 'n']);
    // RemoveImageRequest: image = 1 (ImageSpec: image = 1).
    await client.removeImage('sha256:1');
    assert.equal(text(sub(wireFields(raw.RemoveImage!), 1), 1), 'sha256:1');
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
    await assert.rejects(evictPod(client, 'p1', 0, { stopSlackMs: 300 }), (err: unknown) => {
      assert.ok(err instanceof EvictError, String(err));
      assert.equal(err.step, 'stopContainer');
      assert.equal(err.code, 'DEADLINE_EXCEEDED');
      assert.equal(err.rpc, 'StopContainer');
      assert.deepEqual(err.partial.containerIds, ['c1']);
      return true;
    });
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
  assert.throws(
    () => CriClient.connect('tcp://10.0.0.1:1234'),
    (e: unknown) => e instanceof UsageError && /--container-runtime-endpoint: "tcp:\/\/10\.0\.0\.1:1234"/.test(e.message),
  );
  assert.throws(() => CriClient.connect('unix://relative.sock'), UsageError);
});
