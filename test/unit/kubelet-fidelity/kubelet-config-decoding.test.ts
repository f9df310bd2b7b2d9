/**
 * The config as the kubelet v1.34/v1.35 decodes and validates it:
 * - pkg/kubelet/kubeletconfig/util/codec DecodeKubeletConfiguration: apimachinery's JSON
 *   serializer (YAML is turned into JSON first) into the v1beta1 types, strict then lenient; only
 *   unknown or duplicate fields fall back to lenient, a type error fails. A null leaves a map, a
 *   list, a *bool, an int32 or a string unset (absent: the default applies); a metav1.Duration's
 *   UnmarshalJSON is called with null too and parses "" (duration.go): refused. A number where a
 *   string or a duration belongs, a string or a fraction where an int32 belongs, an int32 out of
 *   range: refused.
 * - the file's text, before the types: apimachinery's recognizer (v0.35) reads a file whose first
 *   non-space character is `{` as JSON, any other through sigs.k8s.io/yaml v1.6.0 YAMLToJSON:
 *   go.yaml.in/yaml/v2 v2.4.3 (resolve.go: YAML 1.1's booleans, `0777` octal, `0x1F`, `1_000`,
 *   no sexagesimal; decode.go: merge keys, aliases) into interface{}, keys made strings
 *   (convertToJSONableObject, no target type: no value is made a string), then encoding/json.
 * - pkg/kubelet/apis/config/validation ValidateKubeletConfiguration, enforceNodeAllocatable: the
 *   reserved enforcements need their cgroup (systemReservedCgroup, kubeReservedCgroup, the
 *   -compressible ones too), and every option but none needs cgroupsPerQOS.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { parseFlags, settingsFromFlags } from '../../../src/cli/run';
import { readKubeletConfigText } from '../../../src/kube/kube-yaml';
import { compileConfig, configFromFlags, configFromKubeletConfiguration } from '../../../src/policy/config';
import { readScenario } from '../../../src/sim/scenario';
import { tempDir } from '../../support/temp-dir';
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

// ---- The file's text as the kubelet reads it: YAML 1.1 through sigs.k8s.io/yaml ----

const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
/** The eviction fields of a file's text, read as `evictd run --config` reads it. */
const fromText = (text: string) => configFromKubeletConfiguration(readKubeletConfigText(text));
const bin = path.join(__dirname, '..', '..', '..', '..', 'bin', 'evictd.js');
const dir = tempDir('kubelet-yaml');
let files = 0;
const file = (text: string) => {
  const p = path.join(dir, `c${files++}.yaml`);
  fs.writeFileSync(p, text);
  return p;
};
/** `evictd run --config FILE` refused: exit 2, one stderr line matching `line`. */
function runRefuses(text: string, line: RegExp): void {
  const r = spawnSync(process.execPath, [bin, 'run', '--config', file(text)], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 2, `${text}\nstatus ${r.status}: ${r.stderr}`);
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, line);
  assert.equal(r.stdout, '');
}

test('sigs.k8s.io/yaml v1.6.0 YAMLToJSON, go.yaml.in/yaml/v2 v2.4.3 resolve.go (kubernetes v1.35): every YAML 1.1 bool spelling in the bool fields', () => {
  const TRUE = ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'];
  const FALSE = ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'];
  for (const key of ['mergeDefaultEvictionSettings', 'memoryBrake', 'cgroupsPerQOS'] as const) {
    for (const word of TRUE) assert.equal(fromText(`${key}: ${word}`)[key], true, `${key}: ${word}`);
    for (const word of FALSE) assert.equal(fromText(`${key}: ${word}`)[key], false, `${key}: ${word}`);
    assert.equal(fromText(`{${JSON.stringify(key)}: true}`)[key], true); // JSON's own
  }
  // what the kubelet then does with it: merged defaults
  const merged = compileDoc(readKubeletConfigText('evictionHard: {memory.available: 1Gi}\nmergeDefaultEvictionSettings: yes\n'));
  assert.deepEqual(describe(merged), [
    'memory.available<1Gi (hard)',
    'nodefs.available<10% (hard)',
    'nodefs.inodesFree<5% (hard)',
    'imagefs.available<15% (hard)',
    'imagefs.inodesFree<5% (hard)',
    'allocatableMemory.available<1Gi (hard)',
  ]);
});

test('sigs.k8s.io/yaml v1.6.0 YAMLToJSON, go.yaml.in/yaml/v2 v2.4.3 resolve.go (kubernetes v1.35): other spellings stay strings, and a string is no bool', () => {
  for (const [text, value] of [
    ['yEs', '"yEs"'],
    ['tRUE', '"tRUE"'],
    ['oN', '"oN"'],
    ['"yes"', '"yes"'],
    ["'on'", '"on"'],
    ['!!str yes', '"yes"'],
    ['enabled', '"enabled"'],
    ['1', '1'],
    ['0x1', '1'],
    ['~', null],
  ] as const) {
    const doc = `mergeDefaultEvictionSettings: ${text}`;
    if (value === null)
      assert.equal(fromText(doc).mergeDefaultEvictionSettings, undefined, doc); // null: unset
    else assert.throws(() => fromText(doc), new RegExp(`^ConfigError: mergeDefaultEvictionSettings: ${value}: must be true or false`), doc);
  }
  // an explicit !!bool tag resolves the text as YAML 1.1 does; a tag the text does not fit fails the decode
  assert.equal(fromText('memoryBrake: !!bool "on"').memoryBrake, true);
  assert.throws(() => readKubeletConfigText('memoryBrake: !!bool maybe'), /^KubeYamlError: yaml: cannot decode !!str `maybe` as a !!bool at line 1/);
});

test('sigs.k8s.io/yaml v1.6.0 YAMLToJSON, go.yaml.in/yaml/v2 v2.4.3 resolve.go (kubernetes v1.35): evictionMaxPodGracePeriod (int32) in octal, hex, binary, with underscores, as a float', () => {
  const read: [string, number][] = [
    ['30', 30],
    ['0777', 511], // YAML 1.1 octal (YAML 1.2 would read 777)
    ['0o36', 30], // Go's ParseInt(s, 0, 64) takes 0o too
    ['0x1E', 30],
    ['0X1e', 30],
    ['0b11110', 30],
    ['-0b1', -1],
    ['3_0', 30],
    ['1_000', 1000],
    ['0x_1E', 30], // go-yaml drops every underscore before parsing
    ['+30', 30],
    ['30.0', 30], // a float, which encoding/json writes as 30
    ['3e1', 30],
    ['08', 8], // not octal: the float 8
    ['2147483647', 2147483647],
  ];
  for (const [text, n] of read) assert.equal(fromText(`evictionMaxPodGracePeriod: ${text}`).evictionMaxPodGracePeriod, n, text);
  const refused: [string, RegExp][] = [
    ['1:30', /evictionMaxPodGracePeriod: "1:30": must be a whole number/], // no sexagesimal in go-yaml v2: a string
    ['0x', /evictionMaxPodGracePeriod: "0x": must be a whole number/],
    ['1e999', /evictionMaxPodGracePeriod: "1e999": must be a whole number/], // past float64: a string
    ['2.5', /evictionMaxPodGracePeriod: 2.5: must be a whole number/],
    ['yes', /evictionMaxPodGracePeriod: true: must be a whole number/],
    ['0x80000000', /evictionMaxPodGracePeriod: 2147483648: out of the int32 range/],
    ['9223372036854775808', /evictionMaxPodGracePeriod: 9223372036854776000: out of the int32 range/], // a uint64 (the message rounds it)
  ];
  for (const [text, problem] of refused) assert.throws(() => fromText(`evictionMaxPodGracePeriod: ${text}`), problem, text);
  // .inf and .nan cannot be written as JSON: the kubelet's decode fails wherever they are, even in a field evictd does not read
  assert.throws(() => readKubeletConfigText('evictionMaxPodGracePeriod: .inf'), /^KubeYamlError: evictionMaxPodGracePeriod: json: unsupported value: \+Inf/);
  assert.throws(() => readKubeletConfigText('imageGCHighThresholdPercent: .NaN'), /imageGCHighThresholdPercent: json: unsupported value: NaN/);
  assert.throws(() => readKubeletConfigText('tlsCipherSuites: [a, -.inf]'), /tlsCipherSuites\[1\]: json: unsupported value: -Inf/);
});

test('sigs.k8s.io/yaml v1.6.0 YAMLToJSON (no target type, kubernetes v1.35): a bool or number in a map of strings is refused, not made a string', () => {
  const cases: [string, RegExp][] = [
    ['evictionHard: {memory.available: yes}', /^ConfigError: evictionHard\["memory.available"\]: true: must be a string/],
    ['evictionHard: {memory.available: off}', /evictionHard\["memory.available"\]: false: must be a string/],
    ['evictionHard: {memory.available: 0x10}', /evictionHard\["memory.available"\]: 16: must be a string/],
    ['evictionSoft: {nodefs.available: 1e3}', /evictionSoft\["nodefs.available"\]: 1000: must be a string/],
    ['evictionSoftGracePeriod: {memory.available: on}', /evictionSoftGracePeriod\["memory.available"\]: true: must be a string/],
    ['evictionMinimumReclaim: {memory.available: n}', /evictionMinimumReclaim\["memory.available"\]: false: must be a string/],
    ['evictionMinimumReclaim: {memory.available: 0777}', /evictionMinimumReclaim\["memory.available"\]: 511: must be a string/],
    ['systemReservedCgroup: no', /^ConfigError: systemReservedCgroup: false: must be a string/],
    ['enforceNodeAllocatable: [pods, on]', /^ConfigError: enforceNodeAllocatable: \["pods",true\]: must be a list of strings/],
  ];
  for (const [text, problem] of cases) assert.throws(() => compileDoc(readKubeletConfigText(text)), problem, text);
  // quoted, or a word YAML 1.1 does not take, it is a string, and a quantity's rules decide
  assert.deepEqual(fromText('evictionHard: {memory.available: "1Gi", nodefs.available: 1:30}').evictionHard, {
    'memory.available': '1Gi',
    'nodefs.available': '1:30',
  });
  assert.throws(() => compileDoc(readKubeletConfigText('evictionHard: {memory.available: "yes"}')), /evictionHard\["memory.available"\]: "yes": /);
});

test('sigs.k8s.io/yaml v1.6.0 YAMLToJSON, go.yaml.in/yaml/v2 v2.4.3 (kubernetes v1.35): a duration field given a bool, a number or a sexagesimal is refused', () => {
  const cases: [string, RegExp][] = [
    ['evictionPressureTransitionPeriod: on', /^ConfigError: evictionPressureTransitionPeriod: true: must be a duration string/],
    ['evictionPressureTransitionPeriod: 0x12C', /^ConfigError: evictionPressureTransitionPeriod: 300: must be a duration string/],
    ['evictionPressureTransitionPeriod: 1:30', /evictionPressureTransitionPeriod: "1:30"/], // a string no Go duration parses
    ['memoryBrakeMaxDuration: off', /^ConfigError: memoryBrakeMaxDuration: false: must be a duration string/],
    ['evictionPressureTransitionPeriod: NULL', /^ConfigError: evictionPressureTransitionPeriod: null: time: invalid duration ""/],
  ];
  for (const [text, problem] of cases) assert.throws(() => compileDoc(readKubeletConfigText(text)), problem, text);
  // a timestamp is no type of its own in interface{}: its text, which no duration parses
  assert.throws(() => compileDoc(readKubeletConfigText('evictionPressureTransitionPeriod: 2001-01-01')), /evictionPressureTransitionPeriod: "2001-01-01"/);
});

test('sigs.k8s.io/yaml v1.6.0 convertToJSONableObject, go.yaml.in/yaml/v2 v2.4.3 decode.go (kubernetes v1.35): keys made strings, merge keys, anchors', () => {
  // keys: an int in decimal, a bool as true/false, a float as %g of its float32
  assert.deepEqual(readKubeletConfigText('evictionHard: {1: a, 0x10: b, yes: c, n: d, 1.5: e, 1e6: f, 3.14159265358979: g}'), {
    evictionHard: { '1': 'a', '16': 'b', true: 'c', false: 'd', '1.5': 'e', '1e+06': 'f', '3.1415927': 'g' },
  });
  // so a key `yes:` is the field "true", which the kubelet does not know (ignored, as any unknown field)
  assert.deepEqual(describe(compileDoc(readKubeletConfigText('yes: {memory.available: 1Gi}'))), DEFAULT_HARD);
  assert.throws(() => compileDoc(readKubeletConfigText('evictionHard: {1: "1Gi"}')), /evictionHard\["1"\]/);
  // a null key, or one past int64, fails the conversion
  assert.throws(() => readKubeletConfigText('evictionHard: {~: "1Gi"}'), /^KubeYamlError: yaml: unsupported map key of type: <nil>/);
  assert.throws(() => readKubeletConfigText('18446744073709551615: x'), /unsupported map key of type: uint64/);
  // merge keys, go-yaml v2's way: merged maps overwrite the keys before them, keys after them win,
  // and in a list the first map wins
  const merged = readKubeletConfigText(
    [
      'x-hard: &hard {memory.available: 500Mi, nodefs.available: 10%}',
      'x-soft: &soft {memory.available: 1Gi}',
      'evictionHard: {memory.available: 1Gi, <<: *hard}',
      'evictionSoft: {<<: [*soft, *hard], nodefs.available: 20%}',
      'evictionSoftGracePeriod: {<<: {memory.available: 1m, nodefs.available: 1m}}',
    ].join('\n'),
  );
  assert.deepEqual(configFromKubeletConfiguration(merged).evictionHard, { 'memory.available': '500Mi', 'nodefs.available': '10%' });
  assert.deepEqual(configFromKubeletConfiguration(merged).evictionSoft, { 'memory.available': '1Gi', 'nodefs.available': '20%' });
  assert.throws(() => readKubeletConfigText('evictionHard: {<<: 1Gi}'), /map merge requires map or sequence of maps as the value/);
  // an alias repeats its anchor's value, read the same way
  assert.deepEqual(fromText('evictionSoftGracePeriod: {memory.available: &g 1m30s, nodefs.available: *g}').evictionSoftGracePeriod, {
    'memory.available': '1m30s',
    'nodefs.available': '1m30s',
  });
  // a key given twice, also as two spellings of one bool, is refused naming it (the kubelet's strict pass)
  assert.throws(() => readKubeletConfigText('evictionHard: {yes: a, true: b}'), /^KubeYamlError: key "true" given twice/);
});

test('apimachinery v0.35 recognizer (utilyaml.IsJSONBuffer): a file that starts with { is JSON, not YAML', () => {
  assert.equal(fromText('  \n{"mergeDefaultEvictionSettings": true}').mergeDefaultEvictionSettings, true);
  assert.throws(() => fromText('{"mergeDefaultEvictionSettings": "yes"}'), /mergeDefaultEvictionSettings: "yes": must be true or false/);
  // YAML's flow style is no JSON: the kubelet's JSON decoder refuses it
  assert.throws(
    () => readKubeletConfigText('{mergeDefaultEvictionSettings: yes}'),
    /^SyntaxError: read as JSON, as the kubelet reads a file that starts with "\{"/,
  );
  // only the first YAML document counts
  assert.equal(fromText('mergeDefaultEvictionSettings: on\n---\nmergeDefaultEvictionSettings: off\n').mergeDefaultEvictionSettings, true);
});

test('evictd run --config: the file read as the kubelet reads it, refusals in one line with exit 2', () => {
  const s = settingsFromFlags(
    parseFlags([
      '--config',
      file(`${HEAD}evictionHard:\n  memory.available: 1Gi\nmergeDefaultEvictionSettings: Yes\nevictionMaxPodGracePeriod: 0x3C\ncgroupsPerQOS: on\n`),
    ]),
  );
  assert.equal(s.eviction.mergeDefaultEvictionSettings, true);
  assert.equal(s.policy.maxPodGracePeriodSeconds, 60);
  assert.ok(
    s.policy.thresholds.some((t) => t.signal === 'nodefs.available'),
    'the defaults merged',
  );
  runRefuses(`${HEAD}evictionHard:\n  memory.available: yes\n`, /^evictd: .*c\d+\.yaml: evictionHard\["memory.available"\]: true: must be a string/);
  runRefuses(`${HEAD}evictionPressureTransitionPeriod: on\n`, /^evictd: .*: evictionPressureTransitionPeriod: true: must be a duration string/);
  runRefuses(`${HEAD}evictionMaxPodGracePeriod: 1:30\n`, /^evictd: .*: evictionMaxPodGracePeriod: "1:30": must be a whole number/);
  runRefuses(`${HEAD}mergeDefaultEvictionSettings: yEs\n`, /^evictd: .*: mergeDefaultEvictionSettings: "yEs": must be true or false/);
  runRefuses(
    `${HEAD}imageGCLowThresholdPercent: .nan\n`,
    /^evictd: --config: ".*": not YAML or JSON: imageGCLowThresholdPercent: json: unsupported value: NaN/,
  );
  runRefuses(`${HEAD}evictionHard: {Yes: 1Gi, yes: 2Gi}\n`, /^evictd: --config: ".*": not YAML or JSON: key "yes" given twice \(line 3\)$/);
});

test("evictd simulate: a scenario's config read as the kubelet reads its file, the rest as YAML 1.2", () => {
  const sim = (input: string) => spawnSync(process.execPath, [bin, 'simulate', '-'], { encoding: 'utf8', input, timeout: 20_000 });
  const ok = sim('config: {evictionHard: {memory.available: 1Gi}, mergeDefaultEvictionSettings: on}\nsteps: []\n');
  assert.equal(ok.status, 0, ok.stderr);
  for (const [input, line] of [
    ['config: {evictionHard: {memory.available: on}}', 'evictd: config.evictionHard["memory.available"]: true: must be a string'],
    ['config: {evictionMaxPodGracePeriod: 0x80000000}', 'evictd: config.evictionMaxPodGracePeriod: 2147483648: out of the int32 range'],
    ['config: {evictionPressureTransitionPeriod: .inf}', 'evictd: config.evictionPressureTransitionPeriod: json: unsupported value: +Inf'],
  ]) {
    const r = sim(input);
    assert.equal(r.status, 2, input);
    assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
    assert.ok(r.stderr.startsWith(line), r.stderr);
  }
});
