/**
 * The two scenarios under examples/, run as a user runs them (`evictd simulate FILE`); each
 * step's outcome is what the kubelet's rules give, worked out by hand in the files' comments.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.join(__dirname, '..', '..', '..');
const simulate = (file: string) => {
  const r = spawnSync(process.execPath, [path.join(root, 'bin', 'evictd.js'), 'simulate', path.join(root, 'examples', file)], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  return r.stdout
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          at: string;
          conditions: string[];
          nodeReclaim: string[];
          thresholdsMet: { signal: string; kind: string; gracePeriodMet: boolean }[];
          evicted: { pod: string; signal: string; gracePeriodSeconds: number; message: string }[];
          admission: { pod: string; admit: boolean }[];
        },
    );
};
const evicted = (s: { evicted: { pod: string; signal: string; gracePeriodSeconds: number }[] }) =>
  s.evicted.map((e) => `${e.pod} ${e.signal} ${e.gracePeriodSeconds}s`);

test('examples/memory-pressure.yaml: soft grace, hard eviction, minimum reclaim, transition period, admission', () => {
  const s = simulate('memory-pressure.yaml');
  assert.deepEqual(
    s.map((x) => x.at),
    ['0s', '10s', '1m10s', '1m20s', '1m30s', '2m0s', '3m31s'],
  );
  assert.deepEqual(
    s.map((x) => x.conditions.join(',')),
    ['', 'MemoryPressure', 'MemoryPressure', 'MemoryPressure', 'MemoryPressure', 'MemoryPressure', ''],
  );
  assert.deepEqual(s[1]!.thresholdsMet, [{ signal: 'memory.available', kind: 'soft', quantity: '1Gi', gracePeriodMet: false }]);
  assert.deepEqual(s.map(evicted), [
    [],
    [],
    ['default/batch memory.available 20s'], // BestEffort, furthest over its request; min(20, default 30)
    ['default/cache memory.available 0s'], // hard: at once
    ['default/web memory.available 20s'], // held by the 200Mi minimum reclaim
    [],
    [],
  ]);
  assert.match(
    s[3]!.evicted[0]!.message,
    /^The node was low on resource: memory\. Threshold quantity: 500Mi, available: 400Mi\. Container redis was using 1Gi, request is 512Mi/,
  );
  assert.deepEqual(
    s.map((x) => x.admission.map((a) => `${a.pod} ${a.admit}`)),
    [['default/job true'], ['default/job false', 'default/tolerant true'], [], [], [], [], ['default/job true']],
  );
});

test('examples/split-disk.yaml: container GC first on containerfs, image GC on imagefs, an emptyDir over its limit', () => {
  const s = simulate('split-disk.yaml');
  assert.deepEqual(
    s.map((x) => x.thresholdsMet.map((t) => t.signal).join(',')),
    ['containerfs.available', 'containerfs.available', 'imagefs.available', ''],
  );
  assert.deepEqual(
    s.map((x) => x.nodeReclaim),
    [['deleteUnusedContainers'], ['deleteUnusedContainers'], ['deleteUnusedImages'], []],
  );
  assert.deepEqual(s.map(evicted), [[], ['default/logger containerfs.available 0s'], [], ['default/scratch emptydirfs.limit 0s']]);
  assert.equal(
    s[1]!.evicted[0]!.message,
    'The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. Container app was using 8Gi, request is 1Gi, has larger consumption of ephemeral-storage. ',
  );
  assert.deepEqual(
    s.map((x) => x.conditions),
    [['DiskPressure'], ['DiskPressure'], ['DiskPressure'], ['DiskPressure']],
  );
});
