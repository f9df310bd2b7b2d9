/**
 * The recorder's line as text (src/sim/recording-text.ts) is the line passLine makes, to the
 * byte: for pods of every shape the format has, for a spec kept across passes while its stats
 * move, for a spec replaced, for one made afresh each pass, and for a whole pass with
 * confirmations, brakes and a wake-up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideActions } from '../../src/policy/actions';
import { compileConfig } from '../../src/policy/config';
import { assess, initialState, planEvictions } from '../../src/policy/evaluate';
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../../src/policy/pods';
import { Quantity } from '../../src/policy/quantity';
import { decideOrders } from '../../src/policy/standing-order';
import type { ActivePod, ContainerSpec, NodeStats, PodSpec } from '../../src/policy/types';
import { recordedPod } from '../../src/sim/recorded-pod';
import { passLine, type PassInput } from '../../src/sim/recording';
import { passLineText, podText, SpecTexts } from '../../src/sim/recording-text';

const MiB = 2 ** 20;
const q = (s: string) => Quantity.parse(s);

const base = (name: string, over: Partial<PodSpec> = {}): PodSpec => ({
  namespace: 'ns',
  name,
  uid: `uid-${name}`,
  priority: 0,
  annotations: {},
  containers: [{ name: 'app', requests: { memory: q('64Mi'), cpu: q('100m') }, limits: { memory: Quantity.fromNumber(300 * MiB, 'BinarySI') } }],
  volumes: [],
  ...over,
});

/** One of each shape a recorded pod takes. */
function variedPods(): ActivePod[] {
  const sidecars: PodSpec = base('sidecars', {
    priority: 2_000_000_000,
    terminationGracePeriodSeconds: 0,
    containers: [
      { name: 'a', requests: {}, limits: {} },
      { name: 'b', requests: { 'ephemeral-storage': q('1Gi') }, limits: { 'ephemeral-storage': q('2Gi') } },
    ],
    initContainers: [
      { name: 'proxy', requests: { memory: q('16Mi') }, limits: {}, restartPolicy: 'Always' },
      { name: 'setup', requests: {}, limits: { cpu: q('1') } },
    ],
  });
  const volumes: PodSpec = base('volumes', {
    priority: -5,
    terminationGracePeriodSeconds: 45,
    volumes: [
      { name: 'scratch', emptyDir: { sizeLimit: q('1Gi') } },
      { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: q('64Mi') } },
      { name: 'plain', emptyDir: {} },
      { name: 'cfg', source: 'configMap' },
      { name: 'data', source: 'other' },
    ],
  });
  const annotated = base('static', { annotations: { [CONFIG_SOURCE_ANNOTATION]: 'file', [CONFIG_MIRROR_ANNOTATION]: 'abc', 'other/secret': 'not recorded' } });
  const oddNames = base('odd "quoted" \\ name \u00e9\u2028', { namespace: 'n\ts', containers: [{ name: 'c"1', requests: {}, limits: {} }] });
  return [
    { spec: base('no-usage') },
    { spec: base('empty-usage'), usage: { containers: [], volumes: [] } },
    { spec: base('only-processes'), usage: { containers: [], volumes: [], processes: 7 } },
    {
      spec: sidecars,
      usage: {
        containers: [
          { name: 'a', memoryBytes: 10 * MiB, rootfsBytes: 0 },
          { name: 'proxy', logsBytes: 3, logsInodes: 2, rootfsInodes: 9 },
        ],
        volumes: [],
        processes: 0,
      },
    },
    // stats on init containers alone: the first app container says `usage: {}`
    { spec: sidecars, usage: { containers: [{ name: 'setup', memoryBytes: 1 }], volumes: [] } },
    {
      spec: sidecars,
      usage: { containers: [{ name: 'a' }, { name: 'b', memoryBytes: 5 }, { name: 'proxy', memoryBytes: 6 }, { name: 'setup', rootfsBytes: 8 }], volumes: [] },
    },
    // memory and disk read apart (a container twice), and a name the spec lacks: containerUsage
    {
      spec: sidecars,
      usage: {
        containers: [
          { name: 'a', memoryBytes: 5 * MiB },
          { name: 'a', rootfsBytes: MiB, logsBytes: 9 * MiB, rootfsInodes: 3, logsInodes: 1 },
        ],
        volumes: [],
      },
    },
    {
      spec: base('sandbox-only'),
      usage: {
        containers: [
          { name: 'app', memoryBytes: 5 },
          { name: 'log', logsBytes: 20 * MiB },
        ],
        volumes: [],
      },
    },
    // out of the spec's order: containerUsage too
    {
      spec: sidecars,
      usage: {
        containers: [
          { name: 'b', memoryBytes: 1 },
          { name: 'a', memoryBytes: 2 },
        ],
        volumes: [],
      },
    },
    {
      spec: volumes,
      usage: {
        containers: [{ name: 'app', memoryBytes: 123456789 }],
        volumes: [
          { name: 'scratch', usedBytes: 5 * MiB, inodesUsed: 40 },
          { name: 'shm', usedBytes: 0 },
        ],
        processes: 12,
      },
    },
    { spec: volumes, usage: { containers: [], volumes: [{ name: 'plain', usedBytes: 1 }] } },
    { spec: volumes },
    { spec: annotated, usage: { containers: [{ name: 'app', memoryBytes: Number.MAX_SAFE_INTEGER }], volumes: [] } },
    { spec: oddNames, usage: { containers: [{ name: 'c"1', memoryBytes: 1.5 }], volumes: [] } },
    { spec: base('not-a-number'), usage: { containers: [{ name: 'app', memoryBytes: NaN, rootfsBytes: Infinity }], volumes: [], processes: 3 } },
    { spec: base('no-containers', { containers: [] }), usage: { containers: [], volumes: [] } },
    // pod-level resources and overhead (KEP-2837), and KEP-5986's per-container signals beside the pod's memory
    {
      spec: base('pod-level', {
        resources: { requests: { memory: Quantity.parse('1Gi') }, limits: { memory: Quantity.parse('2Gi'), cpu: Quantity.parse('1') } },
        overhead: { memory: Quantity.parse('64Mi') },
      }),
      usage: {
        containers: [
          { name: 'app', memoryBytes: 5 },
          { name: 'app', memoryEvents: { high: 12, max: 0 }, memoryPressureSomeAvg10: 3.25 },
        ],
        volumes: [],
      },
    },
    { spec: base('signals-only'), usage: { containers: [{ name: 'app', memoryEvents: { high: 0, max: 7 } }], volumes: [] } },
  ];
}

/** A new spec object alike, down to its lists (the quantities, immutable, shared). */
const afresh = (s: PodSpec): PodSpec => {
  const container = (c: ContainerSpec): ContainerSpec => ({ ...c, requests: { ...c.requests }, limits: { ...c.limits } });
  return {
    ...s,
    annotations: { ...s.annotations },
    containers: s.containers.map(container),
    ...(s.initContainers ? { initContainers: s.initContainers.map(container) } : {}),
    volumes: s.volumes.map((v) => ({ ...v, ...(v.emptyDir ? { emptyDir: { ...v.emptyDir } } : {}) })),
  };
};

/** The text, the line passLine would give as text, and both read back as JSON. */
function assertSameLine(p: ActivePod, why: string, specs: SpecTexts): void {
  const text = podText(p, specs);
  assert.equal(text, JSON.stringify(recordedPod(p)), why);
  assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(recordedPod(p))), why);
}

test('each pod shape: the text is the line passLine makes, to the byte, its spec kept or made afresh', () => {
  const specs = new SpecTexts();
  for (const p of variedPods()) assertSameLine(p, p.spec.name, specs);
  specs.endPass();
  // The next pass, every spec a new object alike (as specs made from a sandbox are), then the same again.
  for (const p of variedPods()) assertSameLine({ ...p, spec: afresh(p.spec) }, `${p.spec.name}, made afresh`, specs);
  specs.endPass();
  for (const p of variedPods()) assertSameLine(p, `${p.spec.name}, again`, specs);
});

test('a spec kept from pass to pass: its stats are each pass its own; a spec replaced: the new one is written', () => {
  const specs = new SpecTexts();
  const spec = base('kept', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: q('1Gi') } }] });
  for (let pass = 1; pass <= 3; pass++) {
    const p: ActivePod = {
      spec,
      usage: {
        containers: [{ name: 'app', memoryBytes: pass * MiB }],
        volumes: [{ name: 'scratch', usedBytes: pass }],
        ...(pass === 2 ? { processes: 4 } : {}),
      },
    };
    assertSameLine(p, `pass ${pass}`, specs);
    assert.equal((JSON.parse(podText(p, specs)) as { containers: { usage: { memory: number } }[] }).containers[0]!.usage.memory, pass * MiB);
    specs.endPass();
  }
  // A pod source's update is a new spec object (the same uid): its priority and limits, not the old ones'.
  const updated: PodSpec = { ...spec, priority: 1000, containers: [{ name: 'app', requests: {}, limits: { memory: q('1Gi') } }] };
  const p: ActivePod = { spec: updated, usage: { containers: [{ name: 'app', memoryBytes: 9 }], volumes: [] } };
  assertSameLine(p, 'replaced spec', specs);
  const read = JSON.parse(podText(p, specs)) as { priority: number; containers: { limits: { memory: string } }[] };
  assert.equal(read.priority, 1000);
  assert.equal(read.containers[0]!.limits.memory, '1Gi');
  // One field at a time, each in a spec made afresh under the same uid.
  const changes: Partial<PodSpec>[] = [
    { name: 'renamed' },
    { namespace: 'other' },
    { priority: 0 },
    { terminationGracePeriodSeconds: 3 },
    { annotations: { [CONFIG_SOURCE_ANNOTATION]: 'http' } },
    { containers: [{ name: 'app', requests: {}, limits: { memory: q('2Gi') } }] },
    { containers: [{ name: 'app', requests: {}, limits: { memory: q('2048Mi') } }] },
    { initContainers: [{ name: 'init', requests: {}, limits: {}, restartPolicy: 'Always' }] },
    { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: q('2Gi') } }] },
    { volumes: [{ name: 'scratch', emptyDir: { medium: 'Memory' } }] },
    { volumes: [{ name: 'scratch', source: 'hostPath' }] },
  ];
  for (const change of changes) assertSameLine({ spec: { ...updated, ...change }, usage: p.usage! }, JSON.stringify(change), specs);
  assertSameLine({ spec, usage: { containers: [], volumes: [] } }, 'the old spec still', specs);
});

test('a whole pass (confirmations, brakes, crossings, a wake-up, the other layout): the text is the line, to the byte', () => {
  const eviction = { evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10%' }, evictionMinimumReclaim: { 'memory.available': '500Mi' } };
  const policy = compileConfig(eviction);
  // above the memory line (an order is placed), under the nodefs one (an eviction is planned)
  const node: NodeStats = {
    memory: { availableBytes: 1500 * MiB, workingSetBytes: 6 * 2 ** 30 },
    nodefs: { availableBytes: 5 * 2 ** 30, capacityBytes: 100 * 2 ** 30, inodesFree: 5e6, inodes: 6e6 },
  };
  const pods = variedPods();
  const now = 5e9;
  const assessed = assess(policy, initialState(), { now, node, layout: 'single', crossed: [] });
  const ev = planEvictions(policy, assessed, pods, 'single');
  const actions = decideActions(policy, assessed, ev, undefined, []);
  const orders = decideOrders(
    policy,
    assessed.obs,
    pods.map((pod) => ({ pod, cgroupDir: `/kubepods/pod${pod.spec.uid}` })),
    'single',
  );
  const order = orders.find((d) => d.order)?.order;
  assert.ok(order, 'the pass placed an order');
  const input: PassInput = {
    atNs: now - 1e9,
    startNs: 1e9,
    wake: { 'memcg-threshold': 2, housekeeping: 1 },
    node,
    layout: 'split',
    headerLayout: 'single',
    pods,
    otherUids: ['gone-1', 'gone-2'],
    noCgroup: [pods[0]!.spec.uid],
    crossed: [order.threshold],
    confirmations: [
      { order, availableBytes: 100 * MiB, crossedNs: 3_000_000_000n, killedNs: 3_000_500_000n },
      { order, availableBytes: 1, crossedNs: 0n, killedNs: 0n, reported: true },
    ],
    brakes: [
      { uid: 'uid-volumes', since: 2e9, signal: 'memory.available' },
      { uid: 'uid-static', since: 0 },
    ],
    policy,
    met: ev.thresholdsMet,
    conditions: ev.conditions,
    actions,
    orders,
    wakeMs: 0.12345,
    decideMs: 1.0006,
  };
  const text = passLineText(input);
  assert.equal(text, JSON.stringify(passLine(input)));
  // as read back (a NaN stat is written null either way)
  assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(passLine(input))));
  // and with nothing but the pods and the decisions
  const bare: PassInput = {
    ...input,
    layout: 'single',
    otherUids: [],
    noCgroup: [],
    crossed: [],
    confirmations: [],
    brakes: null,
    pods: [],
    wakeMs: undefined,
  };
  delete bare.wakeMs;
  assert.equal(passLineText(bare), JSON.stringify(passLine(bare)));
});
