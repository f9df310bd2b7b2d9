import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import pino from 'pino';
import { joinPods, specFromSandbox } from '../../src/agent/active-pods';
import { Arming } from '../../src/agent/arming';
import { bindsAllInterfaces, parseListenAddress, startMetricsServer } from '../../src/agent/http-server';
import { AgentMetrics } from '../../src/agent/metrics';
import type { NotificationPort, RuntimePod } from '../../src/agent/ports';
import type { MemoryReading } from '../../src/node/memory';
import type { ObservedPodCgroup } from '../../src/node/observer';
import { compileConfig, configFromFlags } from '../../src/policy/config';
import { isCritical, qosClass } from '../../src/policy/pods';
import { FakeNotifications } from '../support/fake-notifications';

const MiB = 1024 * 1024;

const sandbox = (uid: string, extra: Partial<RuntimePod> = {}): RuntimePod => ({
  sandboxId: `sb-${uid}`,
  uid,
  name: `pod-${uid}`,
  namespace: 'default',
  labels: {},
  annotations: {},
  ready: true,
  ...extra,
});
const cgroup = (uid: string, qos: ObservedPodCgroup['qos'], ws: number, limit?: number): ObservedPodCgroup => ({
  uid,
  qos,
  path: `/kubepods/pod${uid}`,
  usage: { memoryWorkingSetBytes: ws, memoryUsageBytes: ws, ...(limit ? { memoryLimitBytes: limit } : {}), processes: 2 },
});

test('runtime-only specs keep the QoS class of the cgroup path', () => {
  assert.equal(qosClass(specFromSandbox(sandbox('g'), cgroup('g', 'Guaranteed', 10 * MiB, 64 * MiB))), 'Guaranteed');
  assert.equal(qosClass(specFromSandbox(sandbox('b'), cgroup('b', 'Burstable', 10 * MiB, 64 * MiB))), 'Burstable');
  assert.equal(qosClass(specFromSandbox(sandbox('b2'), cgroup('b2', 'Burstable', 10 * MiB))), 'Burstable');
  assert.equal(qosClass(specFromSandbox(sandbox('e'), cgroup('e', 'BestEffort', 10 * MiB))), 'BestEffort');
});

test('trusted (the lab), annotations give priority and requests; kube-system without a priority is critical', () => {
  const s = specFromSandbox(
    sandbox('a', { annotations: { 'evictd.io/priority': '1000', 'evictd.io/requests': 'memory=128Mi,cpu=250m' } }),
    cgroup('a', 'Burstable', 1),
    true,
  );
  assert.equal(s.priority, 1000);
  assert.equal(s.containers[0]!.requests.memory!.value(), 128 * MiB);
  assert.equal(isCritical(specFromSandbox(sandbox('k', { namespace: 'kube-system' }), cgroup('k', 'Burstable', 1), true)), true);
  assert.equal(
    isCritical(specFromSandbox(sandbox('k2', { namespace: 'kube-system', annotations: { 'evictd.io/priority': '0' } }), cgroup('k2', 'Burstable', 1), true)),
    false,
  );
  // A malformed annotation is ignored, not fatal.
  const bad = specFromSandbox(sandbox('x', { annotations: { 'evictd.io/requests': 'memory' } }), cgroup('x', 'BestEffort', 1), true);
  assert.equal(qosClass(bad), 'BestEffort');
});

test("by default a pod's own evictd.io annotations are not believed: a declared priority cannot exempt it", () => {
  const forged = { 'evictd.io/priority': '2000000000', 'evictd.io/requests': 'memory=4Gi' };
  const s = specFromSandbox(sandbox('a', { annotations: forged, labels: { 'evictd.io/priority': '2000000000' } }), cgroup('a', 'BestEffort', 1));
  assert.equal(s.priority, 0);
  assert.equal(isCritical(s), false);
  assert.equal(qosClass(s), 'BestEffort', 'requests from the cgroup path, not the annotation');
  const [joined] = joinPods([sandbox('a', { annotations: forged })], new Map([['a', cgroup('a', 'BestEffort', 1)]]));
  assert.equal(joined!.active.spec.priority, 0);
  assert.equal(
    joinPods([sandbox('a', { annotations: forged })], new Map([['a', cgroup('a', 'BestEffort', 1)]]), undefined, { trustAnnotations: true })[0]!.active.spec
      .priority,
    2_000_000_000,
  );
  // kube-system stays protected on a guess (a tenant cannot create pods there).
  assert.equal(
    isCritical(specFromSandbox(sandbox('k', { namespace: 'kube-system', annotations: { 'evictd.io/priority': '0' } }), cgroup('k', 'Burstable', 1))),
    true,
  );
});

test('joinPods: static comes from the kubelet through the runtime; an API pod claiming to mirror a running API pod is not believed', () => {
  const cgroups = new Map([
    ['victim', cgroup('victim', 'Burstable', 50 * MiB)],
    ['static', cgroup('static', 'Burstable', 50 * MiB)],
  ]);
  // The specs as kube/pod-spec.ts converts them: the author's config.source is gone, a mirror
  // claim stays for the join to judge.
  const spec = (uid: string, annotations: Record<string, string>) => ({ ...specFromSandbox(sandbox(uid), cgroups.get(uid)), priority: 5, annotations });
  const forged = spec('victim', { 'kubernetes.io/config.mirror': 'victim' });
  const mirror = spec('static', { 'kubernetes.io/config.mirror': 'static' });
  const specs = new Map([
    ['victim', forged],
    ['static', mirror],
  ]);
  const joined = joinPods(
    [
      sandbox('victim', { annotations: { 'kubernetes.io/config.source': 'api' } }),
      sandbox('static', { annotations: { 'kubernetes.io/config.source': 'file' } }),
    ],
    cgroups,
    { get: (uid) => specs.get(uid) },
  );
  const [victim, staticPod] = joined;
  // The claim on a pod the kubelet runs from the API: the spec is the sandbox's, not the forger's.
  assert.equal(victim!.specSource, 'runtime');
  assert.match(victim!.distrusted ?? '', /claims to mirror it/);
  assert.equal(victim!.active.spec.priority, 0);
  assert.equal(isCritical(victim!.active.spec), false);
  // A real mirror: the kubelet runs the sandbox from a file, so the pod is static and protected.
  assert.equal(staticPod!.specSource, 'pod-source');
  assert.equal(staticPod!.distrusted, undefined);
  assert.equal(staticPod!.active.spec.priority, 5);
  assert.equal(staticPod!.active.spec.annotations['kubernetes.io/config.source'], 'file');
  assert.equal(isCritical(staticPod!.active.spec), true);
  // Runtime-only: a sandbox carrying a mirror annotation (a pod author's) is not made critical.
  const own = specFromSandbox(
    sandbox('x', { annotations: { 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.mirror': 'x' } }),
    cgroup('x', 'BestEffort', 1),
  );
  assert.equal(isCritical(own), false);
});

test('joinPods: only ready pods with a cgroup under this node, usage from the cgroup, the pod source first', () => {
  const cgroups = new Map([
    ['a', cgroup('a', 'Burstable', 50 * MiB)],
    ['b', cgroup('b', 'BestEffort', 70 * MiB)],
  ]);
  const fromApi = specFromSandbox(sandbox('a', { annotations: { 'evictd.io/priority': '7' } }), cgroups.get('a'), true);
  const joined = joinPods([sandbox('a'), sandbox('b'), sandbox('c'), sandbox('d', { ready: false })], cgroups, {
    get: (uid) => (uid === 'a' ? fromApi : undefined),
  });
  assert.deepEqual(
    joined.map((j) => [j.runtime.uid, j.specSource]),
    [
      ['a', 'pod-source'],
      ['b', 'runtime'],
    ],
  );
  assert.equal(joined[0]!.active.spec.priority, 7);
  // A container-less spec (a runtime-only fallback's) gives way to the cgroup-derived one.
  const bare = { ...fromApi, containers: [] };
  const j2 = joinPods([sandbox('a')], cgroups, { get: () => bare });
  assert.equal(j2[0]!.specSource, 'runtime');
  assert.equal(joined[1]!.active.usage!.containers[0]!.memoryBytes, 70 * MiB);
  assert.equal(joined[1]!.active.usage!.processes, 2);
});

test('metrics address parsing', () => {
  assert.deepEqual(parseListenAddress('127.0.0.1:9741'), { host: '127.0.0.1', port: 9741 });
  assert.deepEqual(parseListenAddress(':9741'), { host: '0.0.0.0', port: 9741 });
  assert.deepEqual(parseListenAddress('[::1]:80'), { host: '::1', port: 80 });
  assert.equal(parseListenAddress('9741'), null);
  assert.equal(parseListenAddress('a:99999'), null);
  // ':PORT' is every interface: `evictd run` warns about it (the default is loopback)
  assert.equal(bindsAllInterfaces(parseListenAddress(':9741')!.host), true);
  assert.equal(bindsAllInterfaces(parseListenAddress('[::]:9741')!.host), true);
  assert.equal(bindsAllInterfaces(parseListenAddress('127.0.0.1:9741')!.host), false);
  assert.equal(bindsAllInterfaces(parseListenAddress('[::1]:9741')!.host), false);
});

test('/metrics, /livez, /readyz and /healthz on a real socket: live and ready are two questions', async () => {
  const m = new AgentMetrics();
  m.evictions.inc({ signal: 'memory.available' });
  let healthy = false;
  let live = false;
  const server = await startMetricsServer({ host: '127.0.0.1', port: 0 }, m.registry, {
    live: () => ({ ok: live, reason: 'no pass for 35000 ms' }),
    ready: () => ({ ok: healthy, reason: 'no pass yet' }),
  });
  const get = (p: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      http
        .get(`http://${server.address}${p}`, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        })
        .on('error', reject);
    });
  try {
    const metrics = await get('/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /evictd_evictions_total\{signal="memory.available"\} 1/);
    assert.match(metrics.body, /evictd_node_condition\{condition="MemoryPressure"\} 0/);
    assert.deepEqual(await get('/healthz'), { status: 503, body: 'unhealthy: no pass yet\n' });
    assert.deepEqual(await get('/readyz'), { status: 503, body: 'unhealthy: no pass yet\n' });
    assert.deepEqual(await get('/livez'), { status: 503, body: 'unhealthy: no pass for 35000 ms\n' });
    // A runtime outage: passes go on (live), the view is not whole (not ready).
    live = true;
    assert.equal((await get('/livez')).status, 200);
    assert.equal((await get('/readyz')).status, 503);
    healthy = true;
    assert.equal((await get('/healthz')).status, 200);
    assert.equal((await get('/readyz')).status, 200);
    assert.equal((await get('/nope')).status, 404);
  } finally {
    await server.close();
  }
});

const reading = (capacity: number, usage: number, inactive: number): MemoryReading => ({
  capacityBytes: capacity,
  usageBytes: usage,
  inactiveFileBytes: inactive,
  workingSetBytes: usage - inactive,
  availableBytes: capacity - (usage - inactive),
  limited: true,
});
// A line as armed: the first value at which the kubelet's signal is met, one byte past
// capacity - threshold (+ inactive_file in usage terms), in MiB.
const line = (mib: number): number => mib * MiB + 1;

test("arming: the kubelet's line (capacity - threshold + inactive_file), moved only past the tolerance", () => {
  const policy = compileConfig(
    configFromFlags({ evictionHard: 'memory.available<100Mi', evictionSoft: 'memory.available<200Mi', evictionSoftGracePeriod: 'memory.available=1m' }),
  );
  const port = new FakeNotifications();
  const { created, rearms } = port;
  const a = new Arming({
    port,
    policy,
    logger: pino({ level: 'silent' }),
    wake: () => {},
    nodeMemoryDir: '/n',
    podRootMemoryDir: '/n/kubepods',
    podRootUnifiedDir: null,
    memoryVersion: 1,
    nodeIsRoot: false,
  });
  a.update(reading(1024 * MiB, 300 * MiB, 40 * MiB), null);
  assert.deepEqual(
    created.map((c) => c.bytes).sort((x, y) => x - y),
    [line(1024 - 200 + 40), line(1024 - 100 + 40)],
  );
  // inactive_file moved by 512 KiB: under the tolerance (max(1 MiB, capacity/512 = 2 MiB)), nothing moves.
  a.update(reading(1024 * MiB, 300 * MiB, 40.5 * MiB), null);
  assert.equal(rearms.length, 0);
  // by 30 MiB: both lines follow.
  a.update(reading(1024 * MiB, 300 * MiB, 70 * MiB), null);
  assert.deepEqual(
    rearms.sort((x, y) => x - y),
    [line(1024 - 200 + 70), line(1024 - 100 + 70)],
  );
  // usage passed the hard line (964 MiB) but inactive_file grew by 1.5 MiB, under the
  // tolerance: the signal is not met, and the line must move above usage or the crossing is missed.
  rearms.length = 0;
  a.update(reading(1024 * MiB, 995 * MiB, 71.5 * MiB), null);
  assert.ok(rearms.includes(line(1024 - 100 + 71.5)), `rearms ${rearms.map((b) => b / MiB)}`);
  // the pod cgroup root gets its allocatable lines.
  a.update(reading(1024 * MiB, 995 * MiB, 71.5 * MiB), reading(512 * MiB, 100 * MiB, 10 * MiB));
  assert.ok(created.some((c) => c.dir === '/n/kubepods' && c.bytes === line(512 - 100 + 10)));
});

test('arming: a tripwire line follows inactive_file to the page (moving it is free)', () => {
  const policy = compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi' }));
  const port = new FakeNotifications();
  port.lineMechanism = 'bpf-tripwire';
  const a = new Arming({
    port,
    policy,
    logger: pino({ level: 'silent' }),
    wake: () => {},
    nodeMemoryDir: '/n',
    podRootMemoryDir: '/n/kubepods',
    podRootUnifiedDir: null,
    memoryVersion: 2,
    nodeIsRoot: false,
  });
  a.update(reading(1024 * MiB, 300 * MiB, 40 * MiB), null);
  // 512 KiB of drift: a v1 eventfd line would stay (the test above); this one moves.
  a.update(reading(1024 * MiB, 300 * MiB, 40.5 * MiB), null);
  assert.deepEqual(port.rearms, [line(1024 - 100 + 40.5)]);
  // Less than a page: the tripwire could not tell the difference, so nothing moves.
  a.update(reading(1024 * MiB, 300 * MiB, 40.5 * MiB + 1024), null);
  assert.equal(port.rearms.length, 1);
  assert.equal(a.rearms, 1);
});

test("arming: where the mechanism computes the kubelet's working set, the line sits at capacity - threshold and ignores inactive_file", () => {
  const policy = compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi' }));
  const created: Array<{ dir: string; bytes: number; measure: string }> = [];
  const rearms: number[] = [];
  const handle = (dir: string, bytes: number, measure: 'usage' | 'working-set') => {
    created.push({ dir, bytes, measure });
    let line = bytes;
    return {
      get lineBytes() {
        return line;
      },
      measure,
      mechanism: 'bpf-tripwire',
      rearm: (b: number) => {
        rearms.push(b);
        line = b;
      },
      close: async () => {},
    };
  };
  const port: NotificationPort = {
    mechanism: 'native',
    // The pod cgroup root here has only a usage mechanism (as a v1 eventfd would).
    watchWorkingSet: (dir, bytes) => (dir === '/n/kubepods' ? null : handle(dir, bytes, 'working-set')),
    watchMemoryUsage: (dir, bytes) => handle(dir, bytes, 'usage'),
    watchPsi: () => ({ windowUs: 2_000_000, close: async () => {} }),
    watchFile: () => ({ close: async () => {} }),
  };
  const a = new Arming({
    port,
    policy,
    logger: pino({ level: 'silent' }),
    wake: () => {},
    nodeMemoryDir: '/n',
    podRootMemoryDir: '/n/kubepods',
    podRootUnifiedDir: null,
    memoryVersion: 2,
    nodeIsRoot: false,
  });
  a.update(reading(1024 * MiB, 300 * MiB, 40 * MiB), reading(512 * MiB, 100 * MiB, 10 * MiB));
  assert.deepEqual(created, [
    { dir: '/n', bytes: line(1024 - 100), measure: 'working-set' },
    { dir: '/n/kubepods', bytes: line(512 - 100 + 10), measure: 'usage' },
  ]);
  assert.deepEqual(a.measures(), { 'node:line0': 'working-set', 'pods:line0': 'usage' });
  // Page cache turning into anonymous memory: the working-set line stays where it is (re-armed in
  // place from a fresh reading, the signal being unmet), the usage line follows inactive_file.
  a.update(reading(1024 * MiB, 300 * MiB, 10 * MiB), reading(512 * MiB, 100 * MiB, 40 * MiB));
  assert.deepEqual(rearms, [line(1024 - 100), line(512 - 100 + 40)]);
  assert.deepEqual(a.armed(), { 'node:line0': line(1024 - 100), 'pods:line0': line(512 - 100 + 40) });
  // The headroom is the same in either measure: 924 - (300 - 10) MiB.
  assert.equal(a.headroomBytes(), Math.min(line(1024 - 100) - 290 * MiB, line(512 - 100 + 40) - 100 * MiB));
  // Met (working set 930 MiB past 924): left alone, the mechanism already saw it crossed.
  rearms.length = 0;
  a.update(reading(1024 * MiB, 940 * MiB, 10 * MiB), reading(512 * MiB, 100 * MiB, 40 * MiB));
  assert.deepEqual(rearms, []);
  // Capacity moved (a cgroup limit changed): the working-set line moves with it.
  a.update(reading(2048 * MiB, 300 * MiB, 10 * MiB), reading(512 * MiB, 100 * MiB, 40 * MiB));
  assert.deepEqual(rearms, [line(2048 - 100)]);
});

test('arming: inactive_file shrinking brings the line down to flat usage: the drift tick wakes a pass, once', () => {
  const policy = compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi' }));
  const port = new FakeNotifications();
  port.lineMechanism = 'bpf-tripwire';
  const wakes: string[] = [];
  const a = new Arming({
    port,
    policy,
    logger: pino({ level: 'silent' }),
    wake: (w) => wakes.push(w.source),
    nodeMemoryDir: '/n',
    podRootMemoryDir: '/n/kubepods',
    podRootUnifiedDir: null,
    memoryVersion: 2,
    nodeIsRoot: false,
  });
  // usage 950 MiB, inactive_file 60 MiB: available 134 MiB, the line at 984 MiB (34 MiB above usage).
  a.update(reading(1024 * MiB, 950 * MiB, 60 * MiB), null, { wakeOnMet: true });
  assert.equal(a.headroomBytes(), 34 * MiB + 1);
  assert.deepEqual(wakes, []);
  // Same usage, page cache reclaimed for anonymous pages: inactive_file 20 MiB, available
  // 94 MiB < 100Mi. The line (944 MiB) is now below usage; no counter crossed it.
  a.update(reading(1024 * MiB, 950 * MiB, 20 * MiB), null, { wakeOnMet: true });
  assert.deepEqual(wakes, ['line-drift']);
  assert.equal(a.headroomBytes(), -6 * MiB + 1);
  // Still met at the next tick: no second wake (the pass that woke already decided).
  a.update(reading(1024 * MiB, 950 * MiB, 19 * MiB), null, { wakeOnMet: true });
  assert.deepEqual(wakes, ['line-drift']);
  // A pass's own numbers never wake: it decided on them.
  a.update(reading(1024 * MiB, 900 * MiB, 60 * MiB), null);
  a.update(reading(1024 * MiB, 950 * MiB, 20 * MiB), null);
  assert.deepEqual(wakes, ['line-drift']);
});

test('arming: the node line is armed on the cgroup v2 root too, and each line reports its mechanism', () => {
  const policy = compileConfig(configFromFlags({ evictionHard: 'memory.available<100Mi' }));
  const created: Array<{ dir: string; bytes: number }> = [];
  const seen: Array<[string, string | null]> = [];
  const port: NotificationPort = {
    mechanism: 'native',
    watchMemoryUsage(dir, bytes) {
      created.push({ dir, bytes });
      return { lineBytes: bytes, mechanism: dir === '/sys/fs/cgroup' ? 'bpf-tripwire' : 'adaptive-poll', rearm: () => {}, close: async () => {} };
    },
    watchPsi: () => ({ windowUs: 2_000_000, close: async () => {} }),
    watchFile: () => ({ close: async () => {} }),
  };
  const a = new Arming({
    port,
    policy,
    logger: pino({ level: 'silent' }),
    wake: () => {},
    nodeMemoryDir: '/sys/fs/cgroup',
    podRootMemoryDir: '/sys/fs/cgroup/kubepods',
    podRootUnifiedDir: '/sys/fs/cgroup/kubepods',
    memoryVersion: 2,
    nodeIsRoot: true,
    onLineMechanism: (line, mechanism) => seen.push([line, mechanism]),
  });
  a.update(reading(1024 * MiB, 300 * MiB, 40 * MiB), reading(512 * MiB, 100 * MiB, 10 * MiB));
  assert.ok(
    created.some((c) => c.dir === '/sys/fs/cgroup' && c.bytes === line(1024 - 100 + 40)),
    JSON.stringify(created),
  );
  assert.deepEqual(a.mechanisms(), { 'node:line0': 'bpf-tripwire', 'pods:line0': 'adaptive-poll' });
  assert.deepEqual(seen, [
    ['node:line0', 'bpf-tripwire'],
    ['pods:line0', 'adaptive-poll'],
  ]);
});
