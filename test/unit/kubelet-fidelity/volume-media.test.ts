/**
 * Which volumes are local ephemeral storage (kubelet v1.34/v1.35):
 * - pkg/volume/util IsLocalEphemeralVolume: gitRepo, configMap, and an emptyDir whose medium is
 *   the default "" (Memory is tmpfs, HugePages and HugePages-<size> are hugetlbfs: not disk).
 *   Kubelets before v1.11 tested `medium != Memory` and counted HugePages emptyDirs; the current
 *   rule is the one here.
 * - pkg/kubelet/eviction/helpers.go localVolumeNames (hostPath || IsLocalEphemeralVolume) is what
 *   podDiskUsage counts for disk ranking; the stats summary's calcEphemeralStorage (the total that
 *   podEphemeralStorageLimitEviction compares) counts IsLocalEphemeralVolume only.
 * - emptyDirLimitEviction tests every emptyDir's sizeLimit, whatever its medium.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromV1Pod } from '../../../src/kube/pod-spec';
import { isLocalEphemeralVolume, isLocalVolume, podFacts } from '../../../src/policy/pods';
import type { VolumeSpec } from '../../../src/policy/types';
import { readScenario } from '../../../src/sim/scenario';
import { names, run } from './helpers';

const idle = { name: 'c', usage: { rootfs: '0', logs: '0', inodes: 0 } };
const volumePod = (name: string, emptyDir: Record<string, unknown>, usage: string, inodes = 0, extra: Record<string, unknown> = {}) => ({
  name,
  containers: [idle],
  volumes: [{ name: 'v', emptyDir, usage, inodes }],
  ...extra,
});

test('IsLocalEphemeralVolume and localVolumeNames: the default medium only, configMap and gitRepo; hostPath for ranking', () => {
  const table: [VolumeSpec, boolean, boolean][] = [
    [{ name: 'disk', emptyDir: {} }, true, true],
    [{ name: 'disk-explicit', emptyDir: { medium: '' } }, true, true],
    [{ name: 'no-source' }, true, true], // the API server's SetDefaults_Volume: an emptyDir
    [{ name: 'tmpfs', emptyDir: { medium: 'Memory' } }, false, false],
    [{ name: 'huge', emptyDir: { medium: 'HugePages' } }, false, false],
    [{ name: 'huge-2m', emptyDir: { medium: 'HugePages-2Mi' } }, false, false],
    [{ name: 'cm', source: 'configMap' }, true, true],
    [{ name: 'git', source: 'gitRepo' }, true, true],
    [{ name: 'host', source: 'hostPath' }, false, true],
    [{ name: 'pvc', source: 'other' }, false, false],
  ];
  for (const [v, ephemeral, local] of table) {
    assert.equal(isLocalEphemeralVolume(v), ephemeral, `${v.name}: ephemeral`);
    assert.equal(isLocalVolume(v), local, `${v.name}: local`);
  }
});

test('evictd run: a v1.Pod volume keeps the source local storage tells apart', () => {
  const k = fromV1Pod({
    metadata: { name: 'p', uid: 'u' },
    spec: {
      containers: [{ name: 'c' }],
      volumes: [
        { name: 'disk', emptyDir: {} },
        { name: 'huge', emptyDir: { medium: 'HugePages-1Gi' } },
        { name: 'cm', configMap: { name: 'x' } },
        { name: 'host', hostPath: { path: '/data' } },
        { name: 'pvc', persistentVolumeClaim: { claimName: 'c' } },
        { name: 'secret', secret: { secretName: 's' } },
      ],
    },
  })!;
  const f = podFacts(k.spec);
  assert.deepEqual([...f.ephemeralVolumes], ['disk', 'cm']);
  assert.deepEqual([...f.localVolumes], ['disk', 'cm', 'host']);
});

test('disk ranking (podDiskUsage over localVolumeNames): Memory and HugePages emptyDirs count for nothing', () => {
  const scenario = (inodes: boolean) => ({
    config: { evictionHard: inodes ? { 'nodefs.inodesFree': '10%' } : { 'nodefs.available': '10%' } },
    steps: [
      {
        node: { nodefs: { availableBytes: inodes ? '50Gi' : '1Gi', capacityBytes: '100Gi', inodesFree: inodes ? 10 : 90000, inodes: 100000 } },
        pods: [
          volumePod('tmpfs', { medium: 'Memory' }, '5Gi', 5000),
          volumePod('huge', { medium: 'HugePages' }, '4Gi', 4000),
          volumePod('huge-2m', { medium: 'HugePages-2Mi' }, '3Gi', 3000),
          volumePod('disk', {}, '1Gi', 100),
        ],
      },
    ],
  });
  for (const layout of ['single', 'dedicated-imagefs', 'split']) {
    for (const inodes of [false, true]) {
      const [s] = run({ ...scenario(inodes), filesystems: layout });
      assert.deepEqual(names(s!), ['default/disk'], `${layout} ${inodes ? 'inodes' : 'bytes'}`);
    }
  }
});

test('podEphemeralStorageLimitEviction: the pod total counts disk-backed volumes only; sizeLimit counts every medium', () => {
  const limited = { name: 'c', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '0', logs: '0' } };
  const pod = (name: string, medium: string, sizeLimit?: string) => ({
    name,
    containers: [limited],
    volumes: [{ name: 'v', emptyDir: { medium, ...(sizeLimit ? { sizeLimit } : {}) }, usage: '2Gi' }],
  });
  const [s] = run({
    config: { evictionHard: {} },
    steps: [
      { pods: [pod('tmpfs', 'Memory'), pod('huge', 'HugePages'), pod('huge-1g', 'HugePages-1Gi'), pod('disk', ''), pod('huge-capped', 'HugePages', '1Gi')] },
    ],
  });
  assert.deepEqual(
    s!.evicted.map((e) => `${e.pod} ${e.signal}`),
    ['default/disk ephemeralpodfs.limit', 'default/huge-capped emptydirfs.limit'],
  );
  assert.equal(s!.evicted[1]!.message, 'Usage of EmptyDir volume "v" exceeds the limit "1Gi". ');
});

test('the scenario takes the media a running pod can have and refuses the others', () => {
  const read = (medium: unknown) =>
    readScenario({ steps: [{ pods: [{ name: 'p', containers: [{ name: 'c' }], volumes: [{ name: 'v', emptyDir: { medium } }] }] }] });
  for (const ok of ['', 'Memory', 'HugePages', 'HugePages-2Mi', 'HugePages-1Gi']) read(ok);
  for (const bad of ['Disk', 'memory', 'HugePages-', 'HugePages-x', 'HugePages-0', 7]) {
    assert.throws(
      () => read(bad),
      /^UsageError: steps\[0\]\.pods\[0\]\.volumes\[0\]\.emptyDir\.medium: .*must be "", Memory, HugePages or HugePages-<page size>/,
      String(bad),
    );
  }
});
