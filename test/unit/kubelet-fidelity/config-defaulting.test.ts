/**
 * Eviction settings, defaulted and validated as the kubelet does (v1.34/v1.35), one table per
 * kubelet function. Expected values come from reading the kubelet's source, not from evictd.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig, configFromFlags, configFromKubeletConfiguration, ConfigError, type EvictionFlags } from '../../../src/policy/config';
import { compileDoc, describe } from './helpers';

const MIN = 60e9;
const DEFAULT_HARD = [
  'memory.available<100Mi (hard)',
  'nodefs.available<10% (hard)',
  'nodefs.inodesFree<5% (hard)',
  'imagefs.available<15% (hard)',
  'imagefs.inodesFree<5% (hard)',
  'allocatableMemory.available<100Mi (hard)',
];

// pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration: a field left at
// its zero value takes the default; a present but empty map or list is not zero.
test('SetDefaults_KubeletConfiguration: zero-valued eviction fields take the defaults', () => {
  const cases: { name: string; doc: unknown; transitionNs: number; maxPod: number; enforce: string[]; thresholds: string[] }[] = [
    { name: 'empty document', doc: {}, transitionNs: 5 * MIN, maxPod: 0, enforce: ['pods'], thresholds: DEFAULT_HARD },
    {
      name: 'transition "0s" is zero: 5m',
      doc: { evictionPressureTransitionPeriod: '0s' },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD,
    },
    {
      name: 'transition "0" is zero: 5m',
      doc: { evictionPressureTransitionPeriod: '0' },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD,
    },
    {
      name: 'transition "0m0s" is zero: 5m',
      doc: { evictionPressureTransitionPeriod: '0m0s' },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD,
    },
    {
      name: 'transition 30s kept',
      doc: { evictionPressureTransitionPeriod: '30s' },
      transitionNs: 30e9,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD,
    },
    {
      name: 'max pod grace 0: not specified',
      doc: { evictionMaxPodGracePeriod: 0 },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD,
    },
    { name: 'max pod grace 45 kept', doc: { evictionMaxPodGracePeriod: 45 }, transitionNs: 5 * MIN, maxPod: 45, enforce: ['pods'], thresholds: DEFAULT_HARD },
    {
      name: 'enforceNodeAllocatable null: ["pods"]',
      doc: { enforceNodeAllocatable: null },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD,
    },
    {
      name: 'enforceNodeAllocatable [] is not nil: nothing enforced, no allocatable threshold',
      doc: { enforceNodeAllocatable: [] },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: [],
      thresholds: DEFAULT_HARD.slice(0, 5),
    },
    { name: 'evictionHard null: defaults', doc: { evictionHard: null }, transitionNs: 5 * MIN, maxPod: 0, enforce: ['pods'], thresholds: DEFAULT_HARD },
    { name: 'evictionHard {} is not nil: no hard thresholds', doc: { evictionHard: {} }, transitionNs: 5 * MIN, maxPod: 0, enforce: ['pods'], thresholds: [] },
    {
      name: 'mergeDefaultEvictionSettings null: false, one signal drops the rest',
      doc: { evictionHard: { 'memory.available': '1Gi' }, mergeDefaultEvictionSettings: null },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: ['memory.available<1Gi (hard)', 'allocatableMemory.available<1Gi (hard)'],
    },
    {
      name: 'mergeDefaultEvictionSettings true: the named signal overrides, the rest default',
      doc: { evictionHard: { 'nodefs.available': '0%' }, mergeDefaultEvictionSettings: true },
      transitionNs: 5 * MIN,
      maxPod: 0,
      enforce: ['pods'],
      thresholds: DEFAULT_HARD.filter((t) => !t.startsWith('nodefs.available')),
    },
  ];
  for (const c of cases) {
    const p = compileDoc(c.doc);
    assert.equal(p.pressureTransitionPeriodNs, c.transitionNs, c.name);
    assert.equal(p.maxPodGracePeriodSeconds, c.maxPod, c.name);
    assert.deepEqual(p.enforceNodeAllocatable, c.enforce, c.name);
    assert.deepEqual(describe(p), c.thresholds, c.name);
    assert.deepEqual(p.warnings, [], c.name);
  }
  // A null transition period is not absent: encoding/json hands null to metav1.Duration's
  // UnmarshalJSON, which parses "" (apimachinery pkg/apis/meta/v1/duration.go), so the kubelet's
  // decoder fails. See kubelet-config-decoding.test.ts.
  assert.throws(() => compileDoc({ evictionPressureTransitionPeriod: null }), /evictionPressureTransitionPeriod: null: time: invalid duration ""/);
});

// cmd/kubelet/app/server.go: the file is loaded and defaulted, then kubeletConfigFlagPrecedence
// parses the command line again over it. A flag is taken as given (its zero stays zero), and a
// map flag replaces the file's whole map (cliflag map values clear their target on first Set).
test('kubeletConfigFlagPrecedence: flags go over the defaulted file, literally', () => {
  const cases: { name: string; file: unknown; flags: EvictionFlags; check: (p: ReturnType<typeof compileConfig>) => void }[] = [
    {
      name: 'file 0s defaults to 5m',
      file: { evictionPressureTransitionPeriod: '0s' },
      flags: {},
      check: (p) => assert.equal(p.pressureTransitionPeriodNs, 5 * MIN),
    },
    {
      name: 'flag 0s stays 0',
      file: { evictionPressureTransitionPeriod: '1m' },
      flags: { evictionPressureTransitionPeriod: '0s' },
      check: (p) => assert.equal(p.pressureTransitionPeriodNs, 0),
    },
    {
      name: 'flag max pod grace 0 over file 10',
      file: { evictionMaxPodGracePeriod: 10 },
      flags: { evictionMaxPodGracePeriod: '0' },
      check: (p) => assert.equal(p.maxPodGracePeriodSeconds, 0),
    },
    {
      name: 'flag map replaces the file map',
      file: { evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '5%' } },
      flags: { evictionHard: 'memory.available<2Gi' },
      check: (p) => assert.deepEqual(describe(p), ['memory.available<2Gi (hard)', 'allocatableMemory.available<2Gi (hard)']),
    },
    {
      name: 'file fields the flags do not name are kept',
      file: { evictionSoft: { 'memory.available': '3Gi' }, evictionSoftGracePeriod: { 'memory.available': '1m' } },
      flags: { evictionHard: 'memory.available<2Gi' },
      check: (p) => assert.deepEqual(describe(p), ['memory.available<2Gi (hard)', 'memory.available<3Gi (soft 60s)', 'allocatableMemory.available<2Gi (hard)']),
    },
    {
      name: 'flag map pairs are trimmed and empty pairs skipped (cliflag)',
      file: {},
      flags: { evictionHard: ' memory.available < 1Gi ,, nodefs.available<10%,' },
      check: (p) => assert.deepEqual(describe(p), ['memory.available<1Gi (hard)', 'nodefs.available<10% (hard)', 'allocatableMemory.available<1Gi (hard)']),
    },
  ];
  for (const c of cases) c.check(compileConfig(configFromFlags(c.flags, configFromKubeletConfiguration(c.file))));
  // an empty --eviction-hard still replaces the map: no hard thresholds (cliflag Set(""))
  assert.deepEqual(compileConfig(configFromFlags({ evictionHard: '' })).thresholds, []);
});

// A key no plain object can hold must not vanish: the kubelet refuses it as an unknown signal.
test('"__proto__" as a signal is refused, not silently dropped', () => {
  assert.throws(
    () => compileConfig(configFromFlags({ evictionHard: '__proto__<1Gi' })),
    /--eviction-hard\["__proto__"\]: "1Gi": unsupported eviction signal __proto__/,
  );
  assert.throws(
    () => compileDoc(JSON.parse('{"evictionSoft": {"__proto__": "1Gi"}}')),
    /evictionSoft\["__proto__"\]: "1Gi": unsupported eviction signal __proto__/,
  );
});

// cliflag LangleSeparatedMapStringString / MapStringString: a key given twice in one flag keeps
// the last value. evictd does the same, and says so in one warning naming the signal and value.
test('a signal twice in one map flag: the last value is kept, with one warning', () => {
  const cases: { flags: EvictionFlags; kept: string[]; warning: RegExp }[] = [
    {
      flags: { evictionHard: 'memory.available<1Gi,memory.available<2Gi' },
      kept: ['memory.available<2Gi (hard)', 'allocatableMemory.available<2Gi (hard)'],
      warning: /^--eviction-hard: memory\.available is given more than once \("1Gi", then "2Gi"\): kept the last, "2Gi"/,
    },
    {
      flags: {
        evictionSoft: 'memory.available<3Gi,memory.available<4Gi',
        evictionSoftGracePeriod: 'memory.available=1m,memory.available=2m',
        evictionHard: 'nodefs.available<1%',
      },
      kept: ['nodefs.available<1% (hard)', 'memory.available<4Gi (soft 120s)'],
      warning: /^--eviction-soft: memory\.available is given more than once/,
    },
  ];
  for (const c of cases) {
    const p = compileConfig(configFromFlags(c.flags));
    assert.deepEqual(describe(p), c.kept);
    assert.match(p.warnings[0]!, c.warning);
    for (const w of p.warnings) assert.doesNotMatch(w, /\n/);
  }
  // the same value twice is no conflict: nothing to warn about
  assert.deepEqual(compileConfig(configFromFlags({ evictionHard: 'memory.available<1Gi,memory.available<1Gi' })).warnings, []);
});

// pkg/kubelet/eviction/helpers.go parseThresholdStatement and parsePercentage.
test('parseThresholdStatement: percentages, 0%/100%, positive quantities, known signals', () => {
  const ok: { value: string; percentage?: number; quantity?: string }[] = [
    { value: '10%', percentage: Math.fround(Math.fround(10) / 100) },
    { value: '33.3%', percentage: Math.fround(Math.fround(33.3) / 100) }, // float32, as the kubelet stores it
    { value: '10%%', percentage: Math.fround(0.1) }, // strings.TrimRight drops every trailing %
    { value: '1e1%', percentage: Math.fround(0.1) }, // ParseFloat takes exponents
    { value: '99.99%', percentage: Math.fround(Math.fround(99.99) / 100) },
    { value: '1Gi', quantity: '1Gi' },
    { value: '1', quantity: '1' },
  ];
  for (const c of ok) {
    const [t] = compileConfig({ evictionHard: { 'nodefs.available': c.value } }).thresholds;
    assert.equal(t!.value.text, c.value);
    if (c.percentage !== undefined) assert.equal(t!.value.percentage, c.percentage, c.value);
    if (c.quantity !== undefined) assert.equal(t!.value.quantity!.toString(), c.quantity, c.value);
  }
  // "ignore 0% and 100%": the threshold is dropped, with no error
  for (const v of ['0%', '100%']) assert.deepEqual(compileConfig({ evictionHard: { 'nodefs.available': v } }).thresholds, [], v);
  const refused: { value: string; problem: RegExp; signal?: string }[] = [
    { value: '-5%', problem: /must be >= 0%/ },
    { value: '101%', problem: /must be <= 100%/ },
    { value: '%', problem: /invalid percentage/ },
    { value: 'abc%', problem: /invalid percentage/ },
    // Go's ParseFloat takes "NaN" and "Inf"; NaN would slip past both range checks into a
    // threshold that never fires, so evictd refuses both (documented in docs/scenarios.md)
    { value: 'NaN%', problem: /invalid percentage/ },
    { value: '0', problem: /must be positive/ },
    { value: '-1Mi', problem: /must be positive/ },
    { value: '1Mm', problem: /suffix/ },
    { value: '1Gi', problem: /unsupported eviction signal memory\.free/, signal: 'memory.free' },
  ];
  for (const c of refused) {
    const signal = c.signal ?? 'nodefs.available';
    assert.throws(
      () => compileConfig({ evictionHard: { [signal]: c.value } }),
      (e: unknown) => e instanceof ConfigError && e.message.startsWith(`evictionHard["${signal}"]: `) && c.problem.test(e.message),
      c.value,
    );
  }
});

// helpers.go ParseThresholdConfig + parseGracePeriods: every soft threshold needs a grace period;
// a grace period must parse and not be negative; a grace period with no soft threshold is unused.
test('parseGracePeriods: missing, zero, negative and unused soft grace periods', () => {
  assert.throws(
    () => compileConfig({ evictionSoft: { 'memory.available': '1Gi' } }),
    /evictionSoft\["memory.available"\]: "1Gi": grace period must be specified/,
  );
  assert.throws(
    () => compileConfig({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '-1s' } }),
    /must be a positive value/,
  );
  assert.throws(
    () => compileConfig({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '1 minute' } }),
    /evictionSoftGracePeriod\["memory.available"\]: "1 minute": time: /,
  );
  assert.throws(() => compileConfig({ evictionSoftGracePeriod: { 'memory.gone': '1m' } }), /unsupported eviction signal memory\.gone/);
  // a zero grace period is accepted: the threshold is then "hard" by the kubelet's own test
  const zero = compileConfig({ evictionHard: {}, evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '0s' } });
  assert.deepEqual(describe(zero), ['memory.available<1Gi (soft)', 'allocatableMemory.available<1Gi (soft)']); // addAllocatableThresholds copies it: isHardEvictionThreshold
  // a soft 0% needs no grace period (the statement is dropped before the check)
  assert.deepEqual(compileConfig({ evictionHard: {}, evictionSoft: { 'memory.available': '0%' } }).thresholds, []);
  // a grace period for a signal with no soft threshold: ignored by the kubelet, warned about here
  const unused = compileConfig({ evictionHard: {}, evictionSoftGracePeriod: { 'nodefs.available': '1m' } });
  assert.deepEqual(unused.thresholds, []);
  assert.deepEqual(unused.warnings, [
    'evictionSoftGracePeriod["nodefs.available"]: no soft threshold for nodefs.available: the grace period is ignored, as the kubelet does',
  ]);
});

// helpers.go parseMinimumReclaims: a percentage must be > 0, a quantity >= 0; it attaches to every
// threshold on its signal (hard and soft), and addAllocatableThresholds copies memory's.
test('parseMinimumReclaims: values, attachment, and a signal with no threshold', () => {
  const p = compileConfig({
    evictionHard: { 'memory.available': '1Gi' },
    evictionSoft: { 'memory.available': '2Gi' },
    evictionSoftGracePeriod: { 'memory.available': '1m' },
    evictionMinimumReclaim: { 'memory.available': '500Mi' },
  });
  assert.deepEqual(
    p.thresholds.map((t) => `${t.signal} ${t.kind} ${t.minReclaim?.text}`),
    ['memory.available hard 500Mi', 'memory.available soft 500Mi', 'allocatableMemory.available hard 500Mi'],
  );
  assert.equal(
    compileConfig({ evictionHard: { 'memory.available': '1Gi' }, evictionMinimumReclaim: { 'memory.available': '0' } }).thresholds[0]!.minReclaim!.text,
    '0',
  );
  for (const [v, problem] of [
    ['0%', /eviction percentage minimum reclaim memory\.available must be positive/],
    ['-1%', /must be positive/],
    ['-1Mi', /negative eviction minimum reclaim specified for memory\.available/],
    ['x', /quantities must match/],
  ] as const) {
    assert.throws(() => compileConfig({ evictionMinimumReclaim: { 'memory.available': v } }), problem, v);
  }
  // no threshold on the signal: the kubelet keeps the value and never uses it; evictd warns
  const idle = compileConfig({ evictionHard: { 'memory.available': '1Gi' }, evictionMinimumReclaim: { 'pid.available': '100' } });
  assert.deepEqual(idle.warnings, ['evictionMinimumReclaim["pid.available"]: "100": no threshold on pid.available: ignored, as the kubelet does']);
  assert.ok(idle.thresholds.every((t) => t.minReclaim === undefined));
});

// pkg/kubelet/apis/config/validation ValidateKubeletConfiguration, enforceNodeAllocatable rules.
test('ValidateKubeletConfiguration: enforceNodeAllocatable options', () => {
  const ok = [['pods'], ['none'], ['pods', 'system-reserved'], ['pods', 'kube-reserved-compressible', 'system-reserved'], []];
  // the reserved enforcements need their cgroups (kubelet-config-decoding.test.ts)
  const cgroups = { systemReservedCgroup: '/system.slice', kubeReservedCgroup: '/kube.slice' };
  for (const e of ok) assert.deepEqual(compileConfig({ enforceNodeAllocatable: e, ...cgroups }).enforceNodeAllocatable, e);
  const refused: [string[], RegExp][] = [
    [['pods', 'pods'], /duplicated enforcement "pods"/],
    [['none', 'pods'], /"none" cannot be combined/],
    [['system-reserved', 'system-reserved-compressible'], /"system-reserved" and "system-reserved-compressible" cannot be specified together/],
    [['kube-reserved', 'kube-reserved-compressible'], /"kube-reserved" and "kube-reserved-compressible" cannot be specified together/],
    [['Pods'], /invalid option/],
  ];
  for (const [e, problem] of refused) assert.throws(() => compileConfig({ enforceNodeAllocatable: e }), problem, e.join(','));
});

// The kubelet decodes its file into typed fields: a number where a string belongs (evictionHard
// is map[string]string), a string where an int32 belongs, are decoding errors, not warnings.
test('KubeletConfiguration types: a bare number where a quantity string belongs is refused', () => {
  const cases: [unknown, RegExp][] = [
    [{ evictionHard: { 'memory.available': 100 } }, /: evictionHard\["memory.available"\]: 100: must be a string/],
    [{ evictionSoft: { 'memory.available': 1e9 } }, /: evictionSoft\["memory.available"\]: 1000000000: must be a string/],
    [{ evictionMinimumReclaim: { 'memory.available': 0 } }, /: evictionMinimumReclaim\["memory.available"\]: 0: must be a string/],
    [{ evictionSoftGracePeriod: { 'memory.available': 90 } }, /: evictionSoftGracePeriod\["memory.available"\]: 90: must be a string/],
    [{ evictionMaxPodGracePeriod: '30' }, /: evictionMaxPodGracePeriod: "30": must be a whole number/],
    [{ evictionMaxPodGracePeriod: 1.5 }, /: evictionMaxPodGracePeriod: 1.5: must be a whole number/],
    [{ evictionPressureTransitionPeriod: 300 }, /: evictionPressureTransitionPeriod: 300: must be a duration string/],
    [{ enforceNodeAllocatable: 'pods' }, /: enforceNodeAllocatable: "pods": must be a list/],
    [{ mergeDefaultEvictionSettings: 'yes' }, /: mergeDefaultEvictionSettings: "yes": must be true or false/],
    [{ evictionHard: ['memory.available<1Gi'] }, /: evictionHard: \["memory.available<1Gi"\]: must be a map/],
    [{ kind: 'KubeProxyConfiguration' }, /: kind: "KubeProxyConfiguration": expected KubeletConfiguration/],
    [{ evictonHard: { 'memory.available': '1Gi' } }, /: evictonHard: .*unknown eviction field/], // a typo would silently fall back to defaults
    [{ enforceNodeAlocatable: ['pods'] }, /: enforceNodeAlocatable: .*unknown eviction field/],
  ];
  for (const [doc, problem] of cases) assert.throws(() => compileDoc(doc), problem, JSON.stringify(doc));
  // negative max pod grace and transition period: the kubelet does not validate them; evictd
  // refuses both (a negative grace or a condition that never shows is never what was meant)
  assert.throws(() => compileDoc({ evictionMaxPodGracePeriod: -1 }), /must be a whole number of seconds from 0/);
  assert.throws(() => compileDoc({ evictionPressureTransitionPeriod: '-1m' }), /must be >= 0/);
});
