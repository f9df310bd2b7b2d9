/**
 * The config as the kubelet v1.34/v1.35 decodes and validates it:
 * - pkg/kubelet/kubeletconfig/util/codec DecodeKubeletConfiguration: apimachinery's JSON
 *   serializer (YAML is turned into JSON first) into the v1beta1 types, strict then lenient; only
 *   unknown or duplicate fields fall back to lenient, a type error fails. A null leaves a map, a
 *   list, a *bool, an int32 or a string unset (absent: the default applies); a metav1.Duration's
 *   UnmarshalJSON is called with null too and parses "" (duration.go): refused. A number where a
 *   string or a duration belongs, a string or a fraction where an int32 belongs, an int32 out of
 *   range: refused.
 * - pkg/kubelet/apis/config/validation ValidateKubeletConfiguration, enforceNodeAllocatable: the
 *   reserved enforcements need their cgroup (systemReservedCgroup, kubeReservedCgroup, the
 *   -compressible ones too), and every option but none needs cgroupsPerQOS.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import YAML from 'yaml';
import { compileConfig, configFromFlags, configFromKubeletConfiguration } from '../../../src/policy/config';
import { readScenario } from '../../../src/sim/scenario';
import { compileDoc, describe } from './helpers';

const DEFAULT_HARD = [
  'memory.available<100Mi (hard)',
  'nodefs.available<10% (hard)',
  'nodefs.inodesFree<5% (hard)',
  'imagefs.available<15% (hard)',
  'imagefs.inodesFree<5% (hard)',
  'allocatableMemory.available<100Mi (hard)',
];

test('DecodeKubeletConfiguration: null is absent, except in a metav1.Duration', () => {
  const absent = compileDoc({
    evictionHard: null,
    evictionSoft: null,
    evictionSoftGracePeriod: null,
    evictionMinimumReclaim: null,
    evictionMaxPodGracePeriod: null,
    enforceNodeAllocatable: null,
    mergeDefaultEvictionSettings: null,
    cgroupsPerQOS: null, // *bool: default true, so "pods" may stay
    systemReservedCgroup: null,
    kubeReservedCgroup: null,
    memoryBrake: null,
  });
  assert.deepEqual(describe(absent), DEFAULT_HARD);
  assert.equal(absent.maxPodGracePeriodSeconds, 0);
  assert.deepEqual(absent.enforceNodeAllocatable, ['pods']);
  assert.equal(absent.pressureTransitionPeriodNs, 5 * 60e9);
  for (const key of ['evictionPressureTransitionPeriod', 'memoryBrakeMaxDuration']) {
    assert.throws(() => compileDoc({ [key]: null }), new RegExp(`^ConfigError: ${key}: null: time: invalid duration ""`), key);
  }
  // YAML's null, written out or left empty, is the same null
  for (const text of ['evictionPressureTransitionPeriod: null', 'evictionPressureTransitionPeriod: ~', 'evictionPressureTransitionPeriod:']) {
    assert.throws(() => compileDoc(YAML.parse(text)), /time: invalid duration ""/, text);
  }
  // a null string field is "": the reserved enforcement that needs it is refused
  assert.throws(
    () => compileDoc({ enforceNodeAllocatable: ['system-reserved'], systemReservedCgroup: null }),
    /systemReservedCgroup \(--system-reserved-cgroup\) must be specified/,
  );
});

test('DecodeKubeletConfiguration: wrong types and int32 out of range are decoding errors', () => {
  const refused: [Record<string, unknown>, RegExp][] = [
    [{ evictionMaxPodGracePeriod: '30' }, /^ConfigError: evictionMaxPodGracePeriod: "30": must be a whole number/],
    [{ evictionMaxPodGracePeriod: 2.5 }, /^ConfigError: evictionMaxPodGracePeriod: 2.5: must be a whole number/],
    [{ evictionMaxPodGracePeriod: true }, /^ConfigError: evictionMaxPodGracePeriod: true: must be a whole number/],
    [{ evictionMaxPodGracePeriod: 2147483648 }, /^ConfigError: evictionMaxPodGracePeriod: 2147483648: out of the int32 range/],
    [{ evictionMaxPodGracePeriod: -2147483649 }, /^ConfigError: evictionMaxPodGracePeriod: -2147483649: out of the int32 range/],
    [{ evictionMaxPodGracePeriod: 1e20 }, /^ConfigError: evictionMaxPodGracePeriod: 100000000000000000000: out of the int32 range/],
    [{ evictionPressureTransitionPeriod: 300 }, /^ConfigError: evictionPressureTransitionPeriod: 300: must be a duration string/],
    [{ evictionPressureTransitionPeriod: { seconds: 300 } }, /must be a duration string/],
    [{ memoryBrakeMaxDuration: 120 }, /^ConfigError: memoryBrakeMaxDuration: 120: must be a duration string/],
    [{ evictionSoftGracePeriod: { 'memory.available': null } }, /evictionSoftGracePeriod\["memory.available"\]: null: must be a string/],
    [{ systemReservedCgroup: 5 }, /^ConfigError: systemReservedCgroup: 5: must be a string/],
    [{ kubeReservedCgroup: ['/kube'] }, /^ConfigError: kubeReservedCgroup: \["\/kube"\]: must be a string/],
    [{ cgroupsPerQOS: 'false' }, /^ConfigError: cgroupsPerQOS: "false": must be true or false/],
    [{ mergeDefaultEvictionSettings: 1 }, /^ConfigError: mergeDefaultEvictionSettings: 1: must be true or false/],
  ];
  for (const [doc, problem] of refused) assert.throws(() => compileDoc(doc), problem, JSON.stringify(doc));
  assert.equal(compileDoc({ evictionMaxPodGracePeriod: 2147483647 }).maxPodGracePeriodSeconds, 2147483647);
});

test('ValidateKubeletConfiguration: reserved enforcements need their cgroup, every enforcement cgroupsPerQOS', () => {
  const cases: [Record<string, unknown>, RegExp | null][] = [
    [
      { enforceNodeAllocatable: ['pods', 'system-reserved'] },
      /^ConfigError: enforceNodeAllocatable: "system-reserved": systemReservedCgroup \(--system-reserved-cgroup\) must be specified/,
    ],
    [{ enforceNodeAllocatable: ['system-reserved-compressible'] }, /enforceNodeAllocatable: "system-reserved-compressible": systemReservedCgroup/],
    [
      { enforceNodeAllocatable: ['kube-reserved'], systemReservedCgroup: '/system.slice' },
      /enforceNodeAllocatable: "kube-reserved": kubeReservedCgroup \(--kube-reserved-cgroup\)/,
    ],
    [{ enforceNodeAllocatable: ['kube-reserved-compressible'] }, /kubeReservedCgroup/],
    [{ enforceNodeAllocatable: ['system-reserved'], systemReservedCgroup: '' }, /systemReservedCgroup/],
    [
      { enforceNodeAllocatable: ['system-reserved', 'kube-reserved-compressible'], systemReservedCgroup: '/system.slice', kubeReservedCgroup: '/kube.slice' },
      null,
    ],
    [{ enforceNodeAllocatable: ['system-reserved-compressible'], systemReservedCgroup: '/system.slice' }, null],
    [{ cgroupsPerQOS: false }, /^ConfigError: cgroupsPerQOS: false: must be true when "pods" is in enforceNodeAllocatable/], // the default ["pods"]
    [
      { cgroupsPerQOS: false, enforceNodeAllocatable: ['kube-reserved'], kubeReservedCgroup: '/kube.slice' },
      /cgroupsPerQOS: false: must be true when "kube-reserved"/,
    ],
    [{ cgroupsPerQOS: false, enforceNodeAllocatable: ['none'] }, null],
    [{ cgroupsPerQOS: false, enforceNodeAllocatable: [] }, null],
    [{ cgroupsPerQOS: true }, null],
  ];
  for (const [doc, problem] of cases) {
    if (problem) assert.throws(() => compileDoc(doc), problem, JSON.stringify(doc));
    else assert.doesNotThrow(() => compileDoc(doc), JSON.stringify(doc));
  }
});

test('the same rules on the command line (evictd run), flags over the file', () => {
  assert.throws(
    () => compileConfig(configFromFlags({ enforceNodeAllocatable: 'pods,system-reserved' })),
    /^ConfigError: --enforce-node-allocatable: "system-reserved": systemReservedCgroup \(--system-reserved-cgroup\)/,
  );
  assert.doesNotThrow(() => compileConfig(configFromFlags({ enforceNodeAllocatable: 'pods,system-reserved', systemReservedCgroup: '/system.slice' })));
  // the file names the cgroup, the flag the enforcement
  const file = configFromKubeletConfiguration({ kubeReservedCgroup: '/kube.slice' }, 'kubelet.yaml: ');
  assert.deepEqual(compileConfig(configFromFlags({ enforceNodeAllocatable: 'kube-reserved' }, file)).enforceNodeAllocatable, ['kube-reserved']);
  assert.throws(() => compileConfig(configFromFlags({ cgroupsPerQOS: false })), /^ConfigError: --cgroups-per-qos: false: must be true when "pods"/);
  assert.throws(
    () => compileConfig(configFromFlags({}, configFromKubeletConfiguration({ cgroupsPerQOS: false }, 'kubelet.yaml: '))),
    /^ConfigError: kubelet.yaml: cgroupsPerQOS: false/,
  );
});

test('evictd simulate: one line naming the field and value, exit 2', () => {
  assert.throws(
    () => readScenario({ config: { enforceNodeAllocatable: ['pods', 'kube-reserved'] } }),
    /config\.enforceNodeAllocatable: "kube-reserved": kubeReservedCgroup/,
  );
  const bin = path.join(__dirname, '..', '..', '..', '..', 'bin', 'evictd.js');
  for (const [input, line] of [
    ['config:\n  evictionPressureTransitionPeriod:\n', 'evictd: config.evictionPressureTransitionPeriod: null: time: invalid duration ""'],
    [
      '{"config": {"enforceNodeAllocatable": ["system-reserved"]}}',
      'evictd: config.enforceNodeAllocatable: "system-reserved": systemReservedCgroup (--system-reserved-cgroup) must be specified',
    ],
    ['config: {evictionMaxPodGracePeriod: 4294967296}', 'evictd: config.evictionMaxPodGracePeriod: 4294967296: out of the int32 range'],
  ]) {
    const r = spawnSync(process.execPath, [bin, 'simulate', '-'], { encoding: 'utf8', input });
    assert.equal(r.status, 2, input);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
    assert.ok(r.stderr.startsWith(line), r.stderr);
  }
});
