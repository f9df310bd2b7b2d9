/**
 * Local-storage limits on every filesystem layout (eviction_manager.go localStorageEviction,
 * emptyDirLimitEviction, podEphemeralStorageLimitEviction, containerEphemeralStorageLimitEviction).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FilesystemLayout } from '../../../src/policy/types';
import { run } from './helpers';

const LAYOUTS: FilesystemLayout[] = ['single', 'dedicated-imagefs', 'split'];
const step = (layout: FilesystemLayout, pods: unknown[]) => run({ config: { evictionHard: {} }, filesystems: layout, steps: [{ at: '0s', pods }] })[0]!;
const evicted = (layout: FilesystemLayout, pods: unknown[]) => step(layout, pods).evicted.map((e) => `${e.pod} ${e.signal}`);

test('emptyDir sizeLimit and the pod-level limit count the same on every layout', () => {
  const emptyDir = { name: 'ed', containers: [{ name: 'c' }], volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Gi' }, usage: '1025Mi' }] };
  const atLimit = { name: 'at', containers: [{ name: 'c' }], volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Gi' }, usage: '1Gi' }] }; // "used.Cmp(size) > 0": equal is fine
  const memoryBacked = { name: 'mem', containers: [{ name: 'c' }], volumes: [{ name: 'shm', emptyDir: { sizeLimit: '1Mi', medium: 'Memory' }, usage: '2Mi' }] };
  // the pod's ephemeral storage: writable layers + logs + disk-backed volumes, wherever they live
  const podLimit = {
    name: 'pod',
    containers: [
      { name: 'a', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '600Mi', logs: '100Mi' } },
      { name: 'b', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '600Mi', logs: '100Mi' } },
    ],
    volumes: [{ name: 'v', emptyDir: {}, usage: '700Mi' }],
  };
  for (const layout of LAYOUTS) {
    assert.deepEqual(
      evicted(layout, [emptyDir, atLimit, memoryBacked, podLimit]),
      [
        'default/ed emptydirfs.limit',
        'default/mem emptydirfs.limit', // the sizeLimit test does not look at the medium
        'default/pod ephemeralpodfs.limit', // 2100Mi > 2Gi
      ],
      layout,
    );
  }
  assert.equal(step('single', [emptyDir]).evicted[0]!.message, 'Usage of EmptyDir volume "scratch" exceeds the limit "1Gi". ');
  assert.equal(step('single', [podLimit]).evicted[0]!.message, 'Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ');
});

// containerEphemeralStorageLimitEviction: logs always count; the writable layer counts only when
// the kubelet has no image filesystem of its own (!dedicatedImageFs), which is false on both
// dedicated-imagefs and split (HasDedicatedImageFs is true for both).
test('container limit: writable layer counts on single only; logs everywhere', () => {
  const overByLayer = { name: 'layer', containers: [{ name: 'c', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '2Gi', logs: '1Mi' } }] };
  const overByLogs = { name: 'logs', containers: [{ name: 'c', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '0', logs: '1025Mi' } }] };
  // With one container the pod limit is that container's 1Gi, and the pod-level test (which
  // counts the writable layer on every layout) comes first: it fires for both pods everywhere.
  const expected: Record<FilesystemLayout, string[]> = {
    single: ['default/layer ephemeralpodfs.limit', 'default/logs ephemeralpodfs.limit'],
    'dedicated-imagefs': ['default/layer ephemeralpodfs.limit', 'default/logs ephemeralpodfs.limit'],
    split: ['default/layer ephemeralpodfs.limit', 'default/logs ephemeralpodfs.limit'],
  };
  for (const layout of LAYOUTS) assert.deepEqual(evicted(layout, [overByLayer, overByLogs]), expected[layout], layout);
  // With a second container the pod limit is 2Gi: only the container test can fire.
  const twoContainers = (name: string, rootfs: string, logs: string) => ({
    name,
    containers: [
      { name: 'c', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs, logs } },
      { name: 'idle', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '0', logs: '0' } },
    ],
  });
  const pods = [twoContainers('layer', '1536Mi', '1Mi'), twoContainers('logs', '0', '1025Mi')];
  const byLayout: Record<FilesystemLayout, string[]> = {
    single: ['default/layer ephemeralcontainerfs.limit', 'default/logs ephemeralcontainerfs.limit'],
    'dedicated-imagefs': ['default/logs ephemeralcontainerfs.limit'],
    split: ['default/logs ephemeralcontainerfs.limit'],
  };
  for (const layout of LAYOUTS) assert.deepEqual(evicted(layout, pods), byLayout[layout], layout);
  assert.equal(step('single', [pods[1]]).evicted[0]!.message, 'Container c exceeded its local ephemeral storage limit "1Gi". ');
});

test('one violation per pod, in the kubelet order; critical pods stay; thresholds wait for the next pass', () => {
  const both = {
    name: 'both',
    containers: [{ name: 'c', limits: { 'ephemeral-storage': '1Mi' }, usage: { rootfs: '10Mi', logs: '0' } }],
    volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Mi' }, usage: '5Mi' }],
  };
  const staticPod = { ...both, name: 'static', annotations: { 'kubernetes.io/config.source': 'file' } };
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        at: '0s',
        node: { memory: { availableBytes: '1Mi', workingSetBytes: '1Gi' } },
        pods: [staticPod, both, { name: 'hog', containers: [{ name: 'c', usage: { memory: '1Gi' } }] }],
      },
    ],
  });
  // emptyDir first, then nothing else for that pod; the static pod is never evicted; the memory
  // threshold is met, but a pass with local-storage evictions evicts nothing else
  assert.deepEqual(
    s!.evicted.map((e) => `${e.pod} ${e.signal}`),
    ['default/both emptydirfs.limit'],
  );
  assert.deepEqual(s!.conditions, ['MemoryPressure']);
  assert.deepEqual(s!.nodeReclaim, []);
});
