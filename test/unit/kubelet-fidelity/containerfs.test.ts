/**
 * The container filesystem (writable layers) on every filesystem layout: derived thresholds,
 * node-level reclaim and ranking, as pkg/kubelet/eviction/helpers.go builds them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig } from '../../../src/policy/config';
import { nodeReclaimFunctions } from '../../../src/policy/reclaim';
import { rankFor } from '../../../src/policy/ranking';
import { thresholdsForLayout } from '../../../src/policy/thresholds';
import type { ActivePod, FilesystemLayout, Signal } from '../../../src/policy/types';
import { diskPod, names, run } from './helpers';

const LAYOUTS: FilesystemLayout[] = ['single', 'dedicated-imagefs', 'split'];

// UpdateContainerFsThresholds: single (no imagefs, no split) and split (imagefs, split) copy the
// nodefs thresholds; a dedicated imagefs (imagefs, not split) copies the imagefs ones. Value,
// minimum reclaim and (for soft ones) grace period are copied.
test('UpdateContainerFsThresholds: containerfs copies nodefs (single, split) or imagefs (dedicated-imagefs)', () => {
  const config = compileConfig({
    evictionHard: { 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%', 'imagefs.inodesFree': '7%' },
    evictionSoft: { 'nodefs.available': '20%', 'imagefs.available': '25%' },
    evictionSoftGracePeriod: { 'nodefs.available': '1m', 'imagefs.available': '2m' },
    evictionMinimumReclaim: { 'nodefs.available': '1Gi', 'imagefs.available': '2Gi' },
  });
  const expected: Record<FilesystemLayout, string[]> = {
    single: ['containerfs.available<10% hard 0s mr=1Gi', 'containerfs.inodesFree<5% hard 0s mr=-', 'containerfs.available<20% soft 60s mr=1Gi'],
    split: ['containerfs.available<10% hard 0s mr=1Gi', 'containerfs.inodesFree<5% hard 0s mr=-', 'containerfs.available<20% soft 60s mr=1Gi'],
    'dedicated-imagefs': ['containerfs.available<15% hard 0s mr=2Gi', 'containerfs.inodesFree<7% hard 0s mr=-', 'containerfs.available<25% soft 120s mr=2Gi'],
  };
  for (const layout of LAYOUTS) {
    const derived = thresholdsForLayout(config.thresholds, layout)
      .filter((t) => t.signal.startsWith('containerfs.'))
      .map((t) => `${t.signal}<${t.value.text} ${t.kind} ${t.gracePeriodNs / 1e9}s mr=${t.minReclaim?.text ?? '-'}`);
    assert.deepEqual(derived, expected[layout], layout);
  }
});

// UpdateContainerFsThresholds again: a configured containerfs threshold is overridden ("found
// containerfs.available for hard eviction. ignoring"). evictd drops it too, with one warning each.
test('a configured containerfs threshold or minimum reclaim is ignored, with one warning naming it', () => {
  const config = compileConfig({
    evictionHard: { 'nodefs.available': '10%', 'containerfs.available': '50%' },
    evictionSoft: { 'containerfs.inodesFree': '40%' },
    evictionSoftGracePeriod: { 'containerfs.inodesFree': '1m' },
    evictionMinimumReclaim: { 'containerfs.available': '5Gi' },
  });
  assert.ok(config.thresholds.every((t) => !t.signal.startsWith('containerfs.')));
  assert.equal(config.warnings.length, 3);
  assert.match(config.warnings[0]!, /^evictionHard\["containerfs\.available"\]: "50%": ignored: containerfs thresholds are derived from nodefs/);
  assert.match(config.warnings[1]!, /^evictionSoft\["containerfs\.inodesFree"\]: "40%": ignored/);
  assert.match(config.warnings[2]!, /^evictionMinimumReclaim\["containerfs\.available"\]: "5Gi": ignored/);
  // still validated first, as ParseThresholdConfig runs before UpdateContainerFsThresholds
  assert.throws(() => compileConfig({ evictionHard: { 'containerfs.available': '150%' } }), /must be <= 100%/);
  assert.throws(() => compileConfig({ evictionSoft: { 'containerfs.available': '1Gi' } }), /grace period must be specified/);
});

// buildSignalToNodeReclaimFuncs (pkg/kubelet/eviction/helpers.go, since KubeletSeparateDiskGC in
// v1.29/v1.30 and unchanged in the v1.34+ source read for issue 36), the whole table: containerfs
// shares the entry of the filesystem holding the writable layers (nodefs on single and split,
// imagefs on dedicated-imagefs). So on a split image filesystem containerfs.* pressure collects
// unused containers (not images), as nodefs.* does; imagefs.* collects images alone.
test('buildSignalToNodeReclaimFuncs: every filesystem signal on every layout', () => {
  const both = ['deleteUnusedContainers', 'deleteUnusedImages'];
  const table: Record<FilesystemLayout, Partial<Record<Signal, string[]>>> = {
    single: {
      'nodefs.available': both,
      'nodefs.inodesFree': both,
      'imagefs.available': both,
      'imagefs.inodesFree': both,
      'containerfs.available': both,
      'containerfs.inodesFree': both,
    },
    'dedicated-imagefs': {
      'nodefs.available': [],
      'nodefs.inodesFree': [],
      'imagefs.available': both,
      'imagefs.inodesFree': both,
      'containerfs.available': both,
      'containerfs.inodesFree': both,
    },
    split: {
      'nodefs.available': ['deleteUnusedContainers'],
      'nodefs.inodesFree': ['deleteUnusedContainers'],
      'imagefs.available': ['deleteUnusedImages'],
      'imagefs.inodesFree': ['deleteUnusedImages'],
      'containerfs.available': ['deleteUnusedContainers'],
      'containerfs.inodesFree': ['deleteUnusedContainers'],
    },
  };
  for (const layout of LAYOUTS) {
    for (const [signal, fns] of Object.entries(table[layout])) assert.deepEqual(nodeReclaimFunctions(signal as Signal, layout), fns, `${layout} ${signal}`);
    for (const s of ['memory.available', 'allocatableMemory.available', 'pid.available'] as Signal[])
      assert.deepEqual(nodeReclaimFunctions(s, layout), [], `${layout} ${s}`);
  }
});

// synchronize + reclaimNodeLevelResources on a split filesystem: container filesystem pressure
// runs container GC before any pod goes, and when GC frees enough, nobody is evicted.
test('split: containerfs pressure runs deleteUnusedContainers first; enough freed, nobody evicted', () => {
  const base = {
    config: { evictionHard: { 'nodefs.available': '10%' } },
    filesystems: 'split',
  };
  const node = {
    nodefs: { availableBytes: '15Gi', capacityBytes: '100Gi' },
    containerfs: { availableBytes: '5Gi', capacityBytes: '100Gi' },
  };
  const pods = [diskPod('writer', { rootfs: '8Gi', logs: '1Mi' })];
  const [freed] = run({ ...base, steps: [{ at: '0s', node, pods, afterReclaim: { containerfs: { availableBytes: '30Gi', capacityBytes: '100Gi' } } }] });
  assert.deepEqual(freed.thresholdsMet, [{ signal: 'containerfs.available', kind: 'hard', quantity: '10%', gracePeriodMet: true }]);
  assert.deepEqual(freed.nodeReclaim, ['deleteUnusedContainers']);
  assert.deepEqual(freed.evicted, []);
  assert.deepEqual(freed.conditions, ['DiskPressure']);
  // reclaim that frees nothing: the pod with the largest writable layer goes, for containerfs
  const [notFreed] = run({ ...base, steps: [{ at: '0s', node, pods }] });
  assert.deepEqual(notFreed.nodeReclaim, ['deleteUnusedContainers']);
  assert.deepEqual(names(notFreed), ['default/writer']);
  assert.equal(notFreed.evicted[0]!.signal, 'containerfs.available');
  assert.equal(notFreed.evicted[0]!.annotations.starved_resource, 'ephemeral-storage');
});

test('containerfs pressure on single and dedicated-imagefs runs both collectors, then evicts', () => {
  const cases: { layout: FilesystemLayout; config: Record<string, unknown>; quantity: string }[] = [
    { layout: 'single', config: { evictionHard: { 'nodefs.available': '10%' } }, quantity: '10%' },
    { layout: 'dedicated-imagefs', config: { evictionHard: { 'imagefs.available': '20%' } }, quantity: '20%' },
  ];
  for (const c of cases) {
    const [s] = run({
      config: c.config,
      filesystems: c.layout,
      steps: [{ at: '0s', node: { containerfs: { availableBytes: '1Gi', capacityBytes: '100Gi' } }, pods: [diskPod('p', { rootfs: '1Gi', logs: '0' })] }],
    });
    assert.deepEqual(s.thresholdsMet, [{ signal: 'containerfs.available', kind: 'hard', quantity: c.quantity, gracePeriodMet: true }], c.layout);
    assert.deepEqual(s.nodeReclaim, ['deleteUnusedContainers', 'deleteUnusedImages'], c.layout);
    assert.deepEqual(names(s), ['default/p'], c.layout);
  }
});

// buildSignalToRankFunc: which of a pod's usage counts for containerfs. Single and split: writable
// layer, logs and local volumes (the nodefs function); dedicated-imagefs: writable layer only
// (the imagefs function).
test('buildSignalToRankFunc: containerfs ranks by what lives on the container filesystem', () => {
  const pod = (name: string, rootfs: number, logs: number, volume: number): ActivePod => ({
    spec: {
      namespace: 'default',
      name,
      uid: name,
      priority: 0,
      annotations: {},
      containers: [{ name: 'c', requests: {}, limits: {} }],
      volumes: [{ name: 'v', emptyDir: {} }],
    },
    usage: { containers: [{ name: 'c', rootfsBytes: rootfs, logsBytes: logs }], volumes: [{ name: 'v', usedBytes: volume }] },
  });
  // big-layer wins when only writable layers count; big-volume wins when volumes count
  const pods = [pod('big-volume', 1, 1, 100), pod('big-layer', 50, 1, 0)];
  const first = (layout: FilesystemLayout) => rankFor('containerfs.available', layout, pods)[0]!.pod.spec.name;
  assert.equal(first('single'), 'big-volume');
  assert.equal(first('split'), 'big-volume');
  assert.equal(first('dedicated-imagefs'), 'big-layer');
});
