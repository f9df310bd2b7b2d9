/** `evictd simulate` as a black box: the spec's contract on exit codes, streams and output. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/temp-dir';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');
const simulate = (arg: string, input?: string) => spawnSync(process.execPath, [bin, 'simulate', arg], { encoding: 'utf8', input });
const dir = tempDir('sim');
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
};

// The spec's own example scenario and its expected fourth-minute line.
const SPEC_SCENARIO = `
config:
  evictionHard: {memory.available: "1Gi", nodefs.available: "10%"}
  evictionSoft: {memory.available: "2Gi"}
  evictionSoftGracePeriod: {memory.available: "1m30s"}
  evictionMaxPodGracePeriod: 5
  evictionMinimumReclaim: {memory.available: "500Mi"}
steps:
  - at: "0s"
    node: &n
      memory: {availableBytes: "1500Mi", workingSetBytes: "1500Mi"}
    pods: &p
      - name: web
        terminationGracePeriodSeconds: 30
        containers:
          - name: app
            requests: {cpu: "100m", memory: "100Mi"}
            limits: {cpu: "200m", memory: "200Mi"}
            usage: {memory: "150Mi", rootfs: "10Mi", logs: "1Mi", inodes: 100}
    admit:
      - {name: new, containers: [{name: c}]}
  - {at: "4m", node: *n, pods: *p}
`;

test('the spec example: YAML file, one JSON line per step, exit 0', () => {
  const r = simulate(file('spec.yaml', SPEC_SCENARIO));
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines.length, 2);
  assert.deepEqual(lines[0].admission, [{ pod: 'default/new', admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' }]);
  assert.deepEqual(lines[1], {
    at: '4m0s',
    thresholdsMet: [{ signal: 'memory.available', kind: 'soft', quantity: '2Gi', gracePeriodMet: true }],
    conditions: ['MemoryPressure'],
    nodeReclaim: [],
    evicted: [
      {
        pod: 'default/web',
        signal: 'memory.available',
        gracePeriodSeconds: 5,
        message:
          'The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. Container app was using 150Mi, request is 100Mi, has larger consumption of memory. ',
        annotations: { offending_containers: 'app', offending_containers_usage: '150Mi', starved_resource: 'memory' },
      },
    ],
    admission: [],
  });
});

test('JSON on standard input', () => {
  const r = simulate('-', JSON.stringify({ steps: [{ at: '1m30s', node: { memory: { availableBytes: 50 * 2 ** 20, workingSetBytes: '1Gi' } } }] }));
  assert.equal(r.status, 0, r.stderr);
  const [line] = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(line.at, '1m30s');
  // the kubelet's default hard threshold, memory.available<100Mi, applies
  assert.deepEqual(line.thresholdsMet, [{ signal: 'memory.available', kind: 'hard', quantity: '100Mi', gracePeriodMet: true }]);
});

const bad: [string, string, RegExp][] = [
  ['unknown signal', 'config: {evictionHard: {memory.free: "1Gi"}}\nsteps: []', /config\.evictionHard\["memory\.free"\]/],
  ['percentage over 100', 'config: {evictionHard: {nodefs.available: "120%"}}\nsteps: []', /config\.evictionHard\["nodefs\.available"\]: "120%"/],
  [
    'soft without grace',
    'config: {evictionSoft: {memory.available: "1Gi"}}\nsteps: []',
    /config\.evictionSoft\["memory\.available"\]: "1Gi": grace period must be specified/,
  ],
  ['bad duration', 'steps: [{at: "5 minutes"}]', /steps\[0\]\.at: "5 minutes"/],
  ['time going back', 'steps: [{at: "1m"}, {at: "30s"}]', /steps\[1\]\.at: "30s"/],
  ['bad quantity', 'steps: [{at: "0s", node: {memory: {availableBytes: "lots", workingSetBytes: "1Gi"}}}]', /steps\[0\]\.node\.memory\.availableBytes: "lots"/],
  ['bad layout', 'filesystems: raid\nsteps: []', /filesystems: "raid"/],
  ['pod without name', 'steps: [{at: "0s", pods: [{containers: []}]}]', /steps\[0\]\.pods\[0\]\.name/],
  ['not YAML', '{{{', /neither JSON nor YAML/],
];
for (const [name, text, message] of bad) {
  test(`invalid scenario (${name}): exit 2, one line naming field and value, no stack`, () => {
    const r = simulate(file(`${name.replace(/\W/g, '-')}.yaml`, text));
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\s+at .+:\d+:\d+/);
  });
}

test('a missing file is a usage error', () => {
  const r = simulate(path.join(dir, 'nope.yaml'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /nope\.yaml.*: no such file \(ENOENT\)$/m);
});
