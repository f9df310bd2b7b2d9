import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig, configFromFlags, configFromKubeletConfiguration, ConfigError, type Threshold } from '../../src/policy/config';

const summary = (ts: Threshold[]) =>
  ts
    .map((t) => `${t.kind}:${t.signal}<${t.value.text}${t.gracePeriodNs ? `@${t.gracePeriodNs / 1e9}s` : ''}${t.minReclaim ? `+${t.minReclaim.text}` : ''}`)
    .sort();

test('no evictionHard: the kubelet defaults, plus allocatable from the hard memory threshold', () => {
  assert.deepEqual(summary(compileConfig({}).thresholds), [
    'hard:allocatableMemory.available<100Mi',
    'hard:imagefs.available<15%',
    'hard:imagefs.inodesFree<5%',
    'hard:memory.available<100Mi',
    'hard:nodefs.available<10%',
    'hard:nodefs.inodesFree<5%',
  ]);
});

test('setting one hard threshold drops the other defaults ("set one, lose the rest")', () => {
  assert.deepEqual(summary(compileConfig({ evictionHard: { 'nodefs.available': '5%' } }).thresholds), ['hard:nodefs.available<5%']);
});

test('mergeDefaultEvictionSettings keeps the defaults of signals not named', () => {
  const c = compileConfig({ evictionHard: { 'memory.available': '1Gi' }, mergeDefaultEvictionSettings: true });
  assert.deepEqual(summary(c.thresholds), [
    'hard:allocatableMemory.available<1Gi',
    'hard:imagefs.available<15%',
    'hard:imagefs.inodesFree<5%',
    'hard:memory.available<1Gi',
    'hard:nodefs.available<10%',
    'hard:nodefs.inodesFree<5%',
  ]);
});

test('0% and 100% disable a threshold, as in the kubelet', () => {
  assert.deepEqual(summary(compileConfig({ evictionHard: { 'memory.available': '0%', 'nodefs.available': '100%', 'pid.available': '10%' } }).thresholds), [
    'hard:pid.available<10%',
  ]);
});

test('allocatable thresholds follow hard memory thresholds only, and only when pods are enforced', () => {
  const soft = compileConfig({
    evictionHard: { 'memory.available': '1Gi' },
    evictionSoft: { 'memory.available': '2Gi' },
    evictionSoftGracePeriod: { 'memory.available': '1m30s' },
    evictionMinimumReclaim: { 'memory.available': '500Mi' },
  });
  assert.deepEqual(summary(soft.thresholds), [
    'hard:allocatableMemory.available<1Gi+500Mi',
    'hard:memory.available<1Gi+500Mi',
    'soft:memory.available<2Gi@90s+500Mi',
  ]);
  const none = compileConfig({ evictionHard: { 'memory.available': '1Gi' }, enforceNodeAllocatable: ['none'] });
  assert.deepEqual(summary(none.thresholds), ['hard:memory.available<1Gi']);
});

test('percentages are kept as the kubelet keeps them (float32 fraction)', () => {
  const [t] = compileConfig({ evictionHard: { 'nodefs.available': '10%' } }).thresholds;
  assert.equal(t.value.percentage, Math.fround(0.1));
});

test('defaults: transition period 5m, max pod grace period 0, enforce pods', () => {
  const c = compileConfig({});
  assert.equal(c.pressureTransitionPeriodNs, 5 * 60e9);
  assert.equal(c.maxPodGracePeriodSeconds, 0);
  assert.deepEqual(c.enforceNodeAllocatable, ['pods']);
});

test('kubelet flag syntax', () => {
  const cfg = configFromFlags({
    evictionHard: 'memory.available<100Mi, nodefs.available<10%',
    evictionSoft: 'memory.available<300Mi',
    evictionSoftGracePeriod: 'memory.available=1m30s',
    evictionMaxPodGracePeriod: '60',
    evictionMinimumReclaim: 'memory.available=0Mi,nodefs.available=500Mi',
    evictionPressureTransitionPeriod: '30s',
    enforceNodeAllocatable: 'pods',
  });
  assert.deepEqual(cfg.evictionHard, { 'memory.available': '100Mi', 'nodefs.available': '10%' });
  assert.deepEqual(cfg.evictionSoftGracePeriod, { 'memory.available': '1m30s' });
  const c = compileConfig(cfg);
  assert.equal(c.maxPodGracePeriodSeconds, 60);
  assert.equal(c.pressureTransitionPeriodNs, 30e9);
  assert.deepEqual(summary(c.thresholds), [
    'hard:allocatableMemory.available<100Mi+0Mi',
    'hard:memory.available<100Mi+0Mi',
    'hard:nodefs.available<10%+500Mi',
    'soft:memory.available<300Mi@90s+0Mi',
  ]);
});

test('flags override a config file field by field', () => {
  const file = configFromKubeletConfiguration({ kind: 'KubeletConfiguration', evictionHard: { 'memory.available': '1Gi' }, evictionMaxPodGracePeriod: 10 });
  const cfg = configFromFlags({ evictionHard: 'memory.available<2Gi' }, file);
  assert.deepEqual(cfg.evictionHard, { 'memory.available': '2Gi' });
  assert.equal(cfg.evictionMaxPodGracePeriod, 10);
});

// Each invalid input: the error names the field (as the user wrote it) and the value.
const invalid: { name: string; cfg: () => unknown; field: RegExp; value: RegExp }[] = [
  { name: 'unknown signal', cfg: () => ({ evictionHard: { 'memory.free': '1Gi' } }), field: /evictionHard\["memory.free"\]/, value: /memory\.free/ },
  { name: 'negative quantity', cfg: () => ({ evictionHard: { 'memory.available': '-1Gi' } }), field: /evictionHard\["memory.available"\]/, value: /"-1Gi"/ },
  { name: 'zero quantity', cfg: () => ({ evictionHard: { 'memory.available': '0' } }), field: /evictionHard/, value: /"0"/ },
  { name: 'percentage over 100%', cfg: () => ({ evictionHard: { 'nodefs.available': '101%' } }), field: /evictionHard\["nodefs.available"\]/, value: /"101%"/ },
  {
    name: 'negative percentage',
    cfg: () => ({ evictionSoft: { 'nodefs.available': '-5%' }, evictionSoftGracePeriod: { 'nodefs.available': '1m' } }),
    field: /evictionSoft/,
    value: /"-5%"/,
  },
  { name: 'garbage quantity', cfg: () => ({ evictionHard: { 'memory.available': 'lots' } }), field: /evictionHard/, value: /"lots"/ },
  {
    name: 'soft threshold without grace period',
    cfg: () => ({ evictionSoft: { 'memory.available': '2Gi' } }),
    field: /evictionSoft\["memory.available"\]/,
    value: /"2Gi"/,
  },
  {
    name: 'malformed grace period',
    cfg: () => ({ evictionSoft: { 'memory.available': '2Gi' }, evictionSoftGracePeriod: { 'memory.available': '90' } }),
    field: /evictionSoftGracePeriod\["memory.available"\]/,
    value: /"90"/,
  },
  {
    name: 'negative grace period',
    cfg: () => ({ evictionSoft: { 'memory.available': '2Gi' }, evictionSoftGracePeriod: { 'memory.available': '-1s' } }),
    field: /evictionSoftGracePeriod/,
    value: /"-1s"/,
  },
  {
    name: 'negative minimum reclaim',
    cfg: () => ({ evictionMinimumReclaim: { 'memory.available': '-1Mi' } }),
    field: /evictionMinimumReclaim\["memory.available"\]/,
    value: /"-1Mi"/,
  },
  {
    name: 'zero percentage minimum reclaim',
    cfg: () => ({ evictionMinimumReclaim: { 'nodefs.available': '0%' } }),
    field: /evictionMinimumReclaim/,
    value: /"0%"/,
  },
  {
    name: 'malformed transition period',
    cfg: () => ({ evictionPressureTransitionPeriod: '5 minutes' }),
    field: /evictionPressureTransitionPeriod/,
    value: /"5 minutes"/,
  },
  { name: 'negative max pod grace period', cfg: () => ({ evictionMaxPodGracePeriod: -1 }), field: /evictionMaxPodGracePeriod/, value: /-1/ },
  {
    name: 'unknown enforceNodeAllocatable option',
    cfg: () => ({ enforceNodeAllocatable: ['pods', 'everything'] }),
    field: /enforceNodeAllocatable/,
    value: /"everything"/,
  },
];
for (const c of invalid) {
  test(`invalid: ${c.name}`, () => {
    assert.throws(
      () => compileConfig(c.cfg() as never),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
        assert.match(e.message, c.field);
        assert.match(e.message, c.value);
        assert.doesNotMatch(e.message, /\n/);
        return true;
      },
    );
  });
}

test('invalid flags name the flag', () => {
  assert.throws(() => compileConfig(configFromFlags({ evictionHard: 'memory.available<-5Mi' })), /--eviction-hard\["memory.available"\]: "-5Mi"/);
  assert.throws(() => configFromFlags({ evictionHard: 'memory.available=5Mi' }), /--eviction-hard: "memory.available=5Mi": malformed pair/);
  assert.throws(() => configFromFlags({ evictionMaxPodGracePeriod: 'ten' }), /--eviction-max-pod-grace-period: "ten"/);
});

test('a KubeletConfiguration with wrong types names the field', () => {
  assert.throws(() => configFromKubeletConfiguration({ evictionHard: ['memory.available<1Gi'] }, 'config.'), /config\.evictionHard: /);
  assert.throws(() => configFromKubeletConfiguration({ evictionMaxPodGracePeriod: '30' }), /evictionMaxPodGracePeriod: "30"/);
  assert.throws(() => configFromKubeletConfiguration({ kind: 'Pod' }), /kind: "Pod"/);
  assert.throws(() => configFromKubeletConfiguration({ mergeDefaultEvictionSettings: 'yes' }), /mergeDefaultEvictionSettings: "yes"/);
  assert.throws(
    () => configFromKubeletConfiguration({ evictionHrd: { 'memory.available': '1Gi' } }, 'config.'),
    /config\.evictionHrd: .*unknown eviction field/,
  );
  // other KubeletConfiguration fields are not ours to judge
  assert.deepEqual(configFromKubeletConfiguration({ maxPods: 110, cgroupDriver: 'systemd' }).evictionHard, undefined);
});
