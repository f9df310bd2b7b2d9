/**
 * KEP-5986 per-container memory pressure eviction (policy/memory-pressure.ts), through scenarios
 * as `evictd simulate` runs them and through the decision function for what only the agent
 * reports (a relax the runtime refused). The KEP (kubernetes/enhancements PR #6141, unmerged) is
 * the source of every rule; evictd's own choices are named as such.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig, configFromFlags, configFromKubeletConfiguration } from '../../src/policy/config';
import { decideMemoryPressure, initialMemoryPressureState, relaxOutcome, RATE_WINDOW_NS } from '../../src/policy/memory-pressure';
import { readScenario } from '../../src/sim/scenario';
import { simulate } from '../../src/sim/run';
import { checkMemoryPressure, settingsFromFlags } from '../../src/cli/run-settings';

const on = { featureGates: { MemoryHighEviction: true } };
const run = (doc: unknown) => [...simulate(readScenario(doc))];

/** A Burstable pod (a memory request) whose one container carries these signals. */
const pod = (name: string, usage: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name,
  containers: [{ name: 'app', requests: { memory: '100Mi' }, usage: { memory: '50Mi', ...usage } }],
  ...extra,
});
const high = (n: number) => ({ memoryEvents: { high: n, max: 0 } });

/** One BestEffort pod `web` whose container `app` has counted `high` memory.high events (the decision function's input). */
const webSpec = {
  namespace: 'default',
  name: 'web',
  uid: 'web',
  priority: 0,
  annotations: {},
  volumes: [],
  containers: [{ name: 'app', requests: {}, limits: {} }],
};
const webAt = (high: number) => [{ spec: webSpec, usage: { containers: [{ name: 'app', memoryEvents: { high, max: 0 } }], volumes: [] } }];

test('config: the KEP fields in the file and as flags, checked as its validation says; off without the gate', () => {
  const file = {
    ...on,
    memoryHighEvictionThreshold: 50,
    memoryMaxEvictionThreshold: 5,
    memoryPSIEvictionThreshold: 40,
    memoryPressureEvictionGracePeriod: '30s',
  };
  assert.deepEqual(compileConfig(configFromKubeletConfiguration(file)).memoryPressure, {
    highThreshold: 50,
    maxThreshold: 5,
    psiThreshold: 40,
    gracePeriodNs: 30e9,
  });
  const flags = configFromFlags({ featureGates: 'MemoryHighEviction=true', memoryPSIEvictionThreshold: '12.5', memoryPressureEvictionGracePeriod: '1m' });
  assert.deepEqual(compileConfig(flags).memoryPressure, { highThreshold: 0, maxThreshold: 0, psiThreshold: 12.5, gracePeriodNs: 60e9 });
  // the gate is alpha, off by default: the fields are then ignored, with one warning
  const off = compileConfig(configFromKubeletConfiguration({ memoryHighEvictionThreshold: 50 }));
  assert.equal(off.memoryPressure, undefined);
  assert.match(off.warnings.join('\n'), /memoryHighEvictionThreshold: ignored: the MemoryHighEviction feature gate is off/);
  // every threshold 0: off, gate or not
  assert.equal(compileConfig(configFromKubeletConfiguration({ ...on, memoryHighEvictionThreshold: 0 })).memoryPressure, undefined);
  const refused: [unknown, RegExp][] = [
    [{ memoryHighEvictionThreshold: -1 }, /memoryHighEvictionThreshold: -1: must be a number >= 0/],
    [{ memoryPSIEvictionThreshold: 101 }, /memoryPSIEvictionThreshold: 101: must be a percentage from 0 to 100/],
    [{ memoryMaxEvictionThreshold: '5' }, /memoryMaxEvictionThreshold: "5": must be a number/],
    [{ memoryPressureEvictionGracePeriod: '-5s' }, /memoryPressureEvictionGracePeriod: "-5s": must be >= 0/],
    [{ memoryPressureEvictionGracePeriod: 'soon' }, /memoryPressureEvictionGracePeriod: "soon"/],
  ];
  for (const [doc, re] of refused) assert.throws(() => compileConfig(configFromKubeletConfiguration({ ...on, ...(doc as object) })), re);
  assert.throws(() => configFromFlags({ memoryHighEvictionThreshold: 'lots' }), /--memory-high-eviction-threshold: "lots": must be a number/);
});

test('stage 1 at the end of the grace period: memory.high relaxed, the condition set; the pressure gone, nobody evicted', () => {
  const steps = run({
    config: { ...on, memoryHighEvictionThreshold: 50, memoryPressureEvictionGracePeriod: '20s' },
    steps: [
      { at: '0s', pods: [pod('web', high(0))] },
      // 600 events in the first second, counted over the whole 10 s window: 60/s, above 50
      { at: '1s', pods: [pod('web', high(600))] },
      { at: '10s', pods: [pod('web', high(1200))] },
      { at: '21s', pods: [pod('web', high(3000))] },
      { at: '30s', pods: [pod('web', high(3000))] },
      { at: '41s', pods: [pod('web', high(3000))] },
    ],
  });
  assert.deepEqual(
    steps.map((s) => [s.at, s.memoryHighRelaxed, s.containerMemoryPressure, s.evicted.length]),
    [
      ['0s', [], [], 0],
      ['1s', [], [], 0],
      ['10s', [], [], 0],
      ['21s', ['default/web/app'], ['default/web'], 0],
      // no event since the relax (the rate counts from it): the pressure is over, but the condition
      // stays a kubelet cycle (10 s) after the relax, the soonest the KEP's kubelet would clear it
      ['30s', [], ['default/web'], 0],
      ['41s', [], [], 0],
    ],
  );
});

test('stage 2: pressure that outlives the relax by a whole grace period evicts, with the KEP message and annotations', () => {
  const steps = run({
    config: { ...on, memoryHighEvictionThreshold: 50, memoryPressureEvictionGracePeriod: '10s', evictionMaxPodGracePeriod: 5 },
    steps: [0, 5, 10, 15, 20, 25].map((s) => ({ at: `${s}s`, pods: [pod('web', high(s * 1000))] })),
  });
  assert.deepEqual(
    steps.map((s) => [s.at, s.memoryHighRelaxed, s.evicted.map((e) => e.pod)]),
    [
      ['0s', [], []],
      ['5s', [], []],
      ['10s', [], []],
      ['15s', ['default/web/app'], []],
      ['20s', [], []],
      ['25s', [], ['default/web']],
    ],
  );
  const e = steps[5]!.evicted[0]!;
  assert.equal(e.signal, 'memory.high.pressure');
  assert.equal(e.message, 'Container app exceeded memory.high throttle threshold. ');
  assert.deepEqual(e.annotations, { offending_containers: 'app', starved_resource: 'memory' });
  assert.equal(e.gracePeriodSeconds, 5);
});

test('max events or PSI alone go to stage 2 at once: memory.high is not what holds the container', () => {
  const steps = run({
    config: { ...on, memoryMaxEvictionThreshold: 1, memoryPSIEvictionThreshold: 30, memoryPressureEvictionGracePeriod: '5s' },
    steps: [
      { at: '0s', pods: [pod('near-oom', { memoryEvents: { high: 0, max: 0 } }), pod('stalled', { memoryPressure: { someAvg10: 45 } })] },
      { at: '5s', pods: [pod('near-oom', { memoryEvents: { high: 0, max: 40 } }), pod('stalled', { memoryPressure: { someAvg10: 45 } })] },
      { at: '10s', pods: [pod('near-oom', { memoryEvents: { high: 0, max: 80 } }), pod('stalled', { memoryPressure: { someAvg10: 45 } })] },
    ],
  });
  // stalled: PSI above 30 from 0s, due at 5s; near-oom: 40 max events over 10 s = 4/s from 5s, due at 10s
  assert.deepEqual(
    steps.map((s) => [s.at, s.memoryHighRelaxed, s.evicted.map((e) => e.pod)]),
    [
      ['0s', [], []],
      ['5s', [], ['default/stalled']],
      ['10s', [], ['default/near-oom']],
    ],
  );
  assert.equal(steps[1]!.evicted[0]!.message, 'Container app exceeded memory pressure (PSI some avg10) threshold. ');
  assert.equal(steps[2]!.evicted[0]!.message, 'Container app exceeded memory.max event threshold. ');
});

test('stage 2 ranking: BestEffort before Burstable, then lowest priority, then the highest ratio; one pod per pass', () => {
  const psi = (v: number) => ({ memoryPressure: { someAvg10: v } });
  const be = (name: string, v: number, extra: Record<string, unknown> = {}) => ({
    name,
    containers: [{ name: 'app', usage: { memory: '1Mi', ...psi(v) } }],
    ...extra,
  });
  const pods = [pod('burstable-low', psi(90), { priority: -10 }), be('be-mild', 30), be('be-hot', 60), be('be-high-priority', 99, { priority: 1000 })];
  const steps = run({
    config: { ...on, memoryPSIEvictionThreshold: 20, memoryPressureEvictionGracePeriod: '0s' },
    steps: [{ at: '0s', pods }],
  });
  assert.deepEqual(
    steps[0]!.evicted.map((e) => e.pod),
    ['default/be-hot'],
  );
});

test('Guaranteed, static, mirror and system-critical pods are never looked at', () => {
  const hot = { usage: { memory: '1Mi', memoryPressure: { someAvg10: 99 } } };
  const steps = run({
    config: { ...on, memoryPSIEvictionThreshold: 10 },
    steps: [
      {
        pods: [
          { name: 'guaranteed', containers: [{ name: 'app', requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' }, ...hot }] },
          { name: 'static', annotations: { 'kubernetes.io/config.source': 'file' }, containers: [{ name: 'app', ...hot }] },
          { name: 'critical', priority: 2000000000, containers: [{ name: 'app', ...hot }] },
        ],
      },
    ],
  });
  assert.deepEqual(steps[0]!.evicted, []);
});

test('a per-container eviction takes the pass: no node-pressure eviction in the same step (the KEP skips signal eviction that cycle)', () => {
  const steps = run({
    config: { ...on, memoryPSIEvictionThreshold: 10, evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        node: { memory: { availableBytes: '500Mi', workingSetBytes: '4Gi' } },
        pods: [pod('stalled', { memoryPressure: { someAvg10: 50 } }), { name: 'hog', containers: [{ name: 'app', usage: { memory: '3Gi' } }] }],
      },
      {
        node: { memory: { availableBytes: '500Mi', workingSetBytes: '4Gi' } },
        pods: [{ name: 'hog', containers: [{ name: 'app', usage: { memory: '3Gi' } }] }],
      },
    ],
  });
  assert.deepEqual(
    steps.map((s) => s.evicted.map((e) => `${e.pod} ${e.signal}`)),
    [['default/stalled memory.high.pressure'], ['default/hog memory.available']],
  );
});

test('a counter that goes down is a restarted container: its history and its relax start over', () => {
  const cfg = { highThreshold: 50, maxThreshold: 0, psiThreshold: 0, gracePeriodNs: 0 };
  const at = webAt;
  let d = decideMemoryPressure(cfg, 0, initialMemoryPressureState(), 0, at(0));
  d = decideMemoryPressure(cfg, 0, d.state, 1e9, at(1000));
  assert.deepEqual(
    d.relax.map((r) => r.container),
    ['app'],
  );
  // restarted: 20 events since, no rate over a history that is gone, no relax remembered
  d = decideMemoryPressure(cfg, 0, d.state, 2e9, at(20));
  assert.deepEqual([d.relax, d.eviction, d.pressured], [[], null, []]);
  d = decideMemoryPressure(cfg, 0, d.state, 3e9, at(1020));
  assert.deepEqual(
    d.relax.map((r) => r.container),
    ['app'],
    'relaxed again: the new container has its own memory.high',
  );
});

test('a relax the runtime refused (CRI-O before 1.35.3 by the KEP): that container goes to stage 2 at its next due pass', () => {
  const cfg = { highThreshold: 50, maxThreshold: 0, psiThreshold: 0, gracePeriodNs: 0 };
  const at = webAt;
  let d = decideMemoryPressure(cfg, 0, initialMemoryPressureState(), 0, at(0));
  d = decideMemoryPressure(cfg, 0, d.state, 1e9, at(1000));
  assert.equal(d.relax.length, 1);
  const refused = relaxOutcome(d.state, 'web', 'app', false);
  assert.equal(relaxOutcome(d.state, 'web', 'app', true), d.state, 'a relax that worked changes nothing');
  d = decideMemoryPressure(cfg, 0, refused, 1e9 + RATE_WINDOW_NS / 2, at(2000));
  assert.deepEqual([d.relax, d.eviction?.pod.name], [[], 'web']);
  // the condition says a container was relaxed: a refused one is not
  assert.deepEqual(d.conditions, []);
});

test('scenario fields: memoryEvents counters and memoryPressure someAvg10, checked', () => {
  const bad = (usage: Record<string, unknown>) => () => readScenario({ steps: [{ pods: [{ name: 'p', containers: [{ name: 'a', usage }] }] }] });
  assert.throws(bad({ memoryEvents: { high: -1 } }), /usage\.memoryEvents\.high: -1: must not be negative/);
  assert.throws(bad({ memoryEvents: { low: 1 } }), /memoryEvents\.low: 1: unknown field/);
  assert.throws(bad({ memoryPressure: { someAvg10: 101 } }), /memoryPressure\.someAvg10: 101: must be a percentage from 0 to 100/);
  assert.throws(bad({ memoryPressure: { someAvg10: '5' } }), /memoryPressure\.someAvg10: "5"/);
});

test('evictd run takes it from flags; on a cgroup v1 memory controller it refuses it, in one line naming the gate', () => {
  const flags = { 'feature-gates': 'MemoryHighEviction=true', 'memory-psi-eviction-threshold': '20' };
  assert.deepEqual(settingsFromFlags(flags).policy.memoryPressure, { highThreshold: 0, maxThreshold: 0, psiThreshold: 20, gracePeriodNs: 0 });
  const policy = compileConfig(configFromFlags({ featureGates: 'MemoryHighEviction=true', memoryPSIEvictionThreshold: '20' }));
  const v1 = { mode: 'hybrid', memoryMount: '/sys/fs/cgroup/memory', memoryVersion: 1, unifiedMount: '/sys/fs/cgroup/unified', pidsMount: null } as const;
  assert.throws(
    () => checkMemoryPressure(policy, v1),
    /^UsageError: --feature-gates: "MemoryHighEviction=true": per-container memory pressure eviction \(KEP-5986\) needs cgroup v2/,
  );
  assert.doesNotThrow(() =>
    checkMemoryPressure(policy, { ...v1, mode: 'v2', memoryMount: '/sys/fs/cgroup', memoryVersion: 2, unifiedMount: '/sys/fs/cgroup' }),
  );
});

test("a relax done: the container's rates and the pod's grace period count from the counters read once it was", () => {
  const cfg = { highThreshold: 5, maxThreshold: 0, psiThreshold: 0, gracePeriodNs: 1e9 };
  const at = webAt;
  let d = decideMemoryPressure(cfg, 0, initialMemoryPressureState(), 0, at(0));
  d = decideMemoryPressure(cfg, 0, d.state, 1e9, at(1000));
  d = decideMemoryPressure(cfg, 0, d.state, 2e9, at(2000));
  assert.equal(d.relax.length, 1);
  // the runtime took 400 ms, during which the still-throttled container counted 300 more events
  const after = { atNs: 2.4e9, high: 2300, max: 0 };
  const relaxed = relaxOutcome(d.state, 'web', 'app', true, after);
  // a grace period after the relax, no event since: no pressure (the 300 do not count)
  d = decideMemoryPressure(cfg, 0, relaxed, 3.5e9, at(2300));
  assert.deepEqual([d.relax, d.eviction, d.pressured], [[], null, []]);
  // without the read after it, those 300 events would have made 30/s and stage 2
  d = decideMemoryPressure(cfg, 0, decideMemoryPressure(cfg, 0, initialMemoryPressureState(), 0, at(0)).state, 1e9, at(1000));
  d = decideMemoryPressure(cfg, 0, d.state, 2e9, at(2000));
  d = decideMemoryPressure(cfg, 0, d.state, 3.5e9, at(2300));
  assert.equal(d.eviction?.pod.name, 'web');
});
