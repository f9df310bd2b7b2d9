// relaxMemoryHigh (src/cri/relax.ts) and CriClient.updateContainerResources against an
// in-process gRPC server on a Unix socket serving proto/runtime-v1.proto: the request the
// runtime receives, as decoded from the wire, and the three outcomes. The real runtime's answer
// is test/e2e/relax-memory-high.test.ts.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { CriClient, relaxMemoryHigh } from '../../src/cri';
import { runtimeV1 } from '../../src/cri/client';
import type { LinuxContainerResources } from '../../src/cri';
import { tempDir } from '../support/temp-dir';

type Req = Record<string, unknown>;
type Handler = (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => void;

const MiB = 1024 * 1024;
const dir = tempDir('cri-relax');
const servers: grpc.Server[] = [];
const clients: CriClient[] = [];
after(() => {
  for (const c of clients) c.close();
  for (const s of servers) s.forceShutdown();
});

/** A runtime.v1 RuntimeService on a fresh socket; unlisted methods answer UNIMPLEMENTED. */
async function runtime(handlers: Record<string, Handler>): Promise<CriClient> {
  const sock = path.join(dir, `rt${servers.length}.sock`);
  const svc = runtimeV1().RuntimeService as grpc.ServiceClientConstructor;
  const impl: grpc.UntypedServiceImplementation = {};
  for (const name of Object.keys(svc.service))
    impl[name] = handlers[name] ?? ((_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED }));
  const server = new grpc.Server();
  server.addService(svc.service, impl);
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())));
  servers.push(server);
  const client = CriClient.connect(`unix://${sock}`, { timeoutMs: 5000 });
  clients.push(client);
  return client;
}

/** What a runtime with MemoryQoS-style resources reports for the container (every field set). */
const CURRENT: Required<LinuxContainerResources> = {
  cpuPeriod: 100_000,
  cpuQuota: 50_000,
  cpuShares: 512,
  memoryLimitInBytes: 64 * MiB,
  oomScoreAdj: 999,
  cpusetCpus: '0-1',
  cpusetMems: '0',
  hugepageLimits: [{ pageSize: '2MB', limit: 4 * MiB }],
  unified: { 'memory.high': String(48 * MiB), 'memory.swap.max': '0' },
  memorySwapLimitInBytes: 64 * MiB,
};

/** A runtime that reports `linux` (null: no resources) and answers updates with `update`. */
function fakeRuntime(linux: LinuxContainerResources | null, update: Handler = (_c, cb) => cb(null, {})) {
  const statusRequests: Req[] = [];
  const updates: Req[] = [];
  const handlers: Record<string, Handler> = {
    ContainerStatus: (call, cb) => {
      statusRequests.push(call.request);
      cb(null, { status: { id: call.request.containerId, state: 'CONTAINER_RUNNING', resources: linux ? { linux } : null } });
    },
    UpdateContainerResources: (call, cb) => {
      updates.push(call.request);
      update(call, cb);
    },
  };
  return { handlers, statusRequests, updates };
}

function reader(value: string | Error) {
  const calls: string[] = [];
  const read = async (id: string) => {
    calls.push(id);
    if (value instanceof Error) throw value;
    return value;
  };
  return { read, calls };
}

test('applied: the current resources go back with only unified["memory.high"] set to max, the other unified keys kept', async () => {
  const rt = fakeRuntime(CURRENT);
  const client = await runtime(rt.handlers);
  const cgroup = reader('max\n');
  const r = await relaxMemoryHigh(client, 'c1', cgroup.read);
  assert.equal(r.outcome, 'applied', r.detail);
  assert.equal(r.memoryHigh, 'max');
  assert.ok(r.runtimeMs >= 0 && r.runtimeMs < 5000);
  assert.equal(r.code, undefined);
  // The status is read plain: verbose would have the runtime build its whole info map.
  assert.deepEqual(rt.statusRequests, [{ containerId: 'c1', verbose: false }]);
  assert.equal(rt.updates.length, 1);
  assert.deepEqual(rt.updates[0], {
    containerId: 'c1',
    linux: { ...CURRENT, unified: { 'memory.high': 'max', 'memory.swap.max': '0' } },
    annotations: {},
  });
  assert.deepEqual(cgroup.calls, ['c1'], 'memory.high read back once, after the OK');
});

test('a runtime that reports no resources: memory.high=max alone, every other field unset (0)', async () => {
  const rt = fakeRuntime(null);
  const client = await runtime(rt.handlers);
  const r = await relaxMemoryHigh(client, 'c2', reader('max').read);
  assert.equal(r.outcome, 'applied', r.detail);
  assert.match(r.detail, /no current resources/);
  const linux = rt.updates[0]?.linux as Required<LinuxContainerResources>;
  assert.deepEqual(linux.unified, { 'memory.high': 'max' });
  assert.equal(linux.memoryLimitInBytes, 0);
  assert.equal(linux.cpuQuota, 0);
  assert.deepEqual(linux.hugepageLimits, []);
});

test('not-applied: the runtime answers OK but memory.high still reads the old value (CRI-O before 1.35.3)', async () => {
  const rt = fakeRuntime(CURRENT);
  const client = await runtime(rt.handlers);
  const r = await relaxMemoryHigh(client, 'c3', reader(`${48 * MiB}\n`).read);
  assert.equal(r.outcome, 'not-applied');
  assert.equal(r.memoryHigh, String(48 * MiB));
  assert.equal(r.code, undefined);
  assert.match(r.detail, /answered OK.*still reads "50331648"/);
  assert.equal(rt.updates.length, 1);
});

test('not-applied: memory.high cannot be read back, so the OK alone is not taken for applied', async () => {
  const rt = fakeRuntime(CURRENT);
  const client = await runtime(rt.handlers);
  const r = await relaxMemoryHigh(client, 'c4', reader(new Error('ENOENT: memory.high')).read);
  assert.equal(r.outcome, 'not-applied');
  assert.equal(r.memoryHigh, undefined);
  assert.match(r.detail, /could not be read back: ENOENT: memory.high/);
});

test('refused: UpdateContainerResources fails with the runtime code and message; nothing is read', async () => {
  const rt = fakeRuntime(CURRENT, (_c, cb) => cb({ code: grpc.status.INVALID_ARGUMENT, details: 'unified resources not supported' }));
  const client = await runtime(rt.handlers);
  const cgroup = reader('max');
  const r = await relaxMemoryHigh(client, 'c5', cgroup.read);
  assert.equal(r.outcome, 'refused');
  assert.equal(r.code, 'INVALID_ARGUMENT');
  assert.match(r.detail, /UpdateContainerResources .*failed: INVALID_ARGUMENT: unified resources not supported/);
  assert.equal(rt.updates.length, 1, 'not retried: only UNAVAILABLE is');
  assert.deepEqual(cgroup.calls, []);
});

test('refused: a failed ContainerStatus sends no update (a partial one could reset what goes as 0)', async () => {
  const updates: Req[] = [];
  const client = await runtime({
    ContainerStatus: (_c, cb) => cb({ code: grpc.status.NOT_FOUND, details: 'container "c6" not found' }),
    UpdateContainerResources: (call, cb) => {
      updates.push(call.request);
      cb(null, {});
    },
  });
  const r = await relaxMemoryHigh(client, 'c6', reader('max').read);
  assert.equal(r.outcome, 'refused');
  assert.equal(r.code, 'NOT_FOUND');
  assert.equal(r.runtimeMs, 0);
  assert.match(r.detail, /ContainerStatus failed, no update sent: NOT_FOUND/);
  assert.deepEqual(updates, []);
});

test('updateContainerResources is retried while the runtime is UNAVAILABLE (idempotent) and carries annotations', async () => {
  let calls = 0;
  const seen: Req[] = [];
  const client = await runtime({
    UpdateContainerResources: (call, cb) => {
      seen.push(call.request);
      if (++calls < 3) cb({ code: grpc.status.UNAVAILABLE, details: 'restarting' });
      else cb(null, {});
    },
  });
  await client.updateContainerResources('c7', { unified: { 'memory.high': 'max' } }, { annotations: { why: 'kep-5986' } });
  assert.equal(calls, 3);
  assert.deepEqual(seen[2]?.annotations, { why: 'kep-5986' });
  assert.deepEqual((seen[2]?.linux as LinuxContainerResources).unified, { 'memory.high': 'max' });
});
