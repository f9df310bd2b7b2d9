/**
 * The eviction message's container lines (helpers.go evictionMessage) and disk ranking per
 * filesystem layout (buildSignalToRankFunc, rankDiskPressureFunc).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evictionMessage } from '../../../src/policy/messages';
import { Quantity } from '../../../src/policy/quantity';
import { rankFor } from '../../../src/policy/ranking';
import type { ActivePod, FilesystemLayout, PodSpec, Signal } from '../../../src/policy/types';

test('evictionMessage names init containers over their request too, in the order stats list them', () => {
  const pod: PodSpec = {
    namespace: 'default',
    name: 'p',
    uid: 'p',
    priority: 0,
    annotations: {},
    volumes: [],
    containers: [{ name: 'app', requests: { memory: Quantity.parse('100Mi') }, limits: {} }],
    initContainers: [{ name: 'sidecar', requests: { memory: Quantity.parse('10Mi') }, limits: {} }],
  };
  const { message, annotations } = evictionMessage(
    'memory',
    pod,
    {
      containers: [
        { name: 'sidecar', memoryBytes: 64 * 2 ** 20 },
        { name: 'app', memoryBytes: 50 * 2 ** 20 },
        { name: 'ghost', memoryBytes: 2 ** 30 },
      ],
      volumes: [],
    },
    [],
    {},
  );
  assert.equal(message, 'The node was low on resource: memory. Container sidecar was using 64Mi, request is 10Mi, has larger consumption of memory. ');
  assert.deepEqual(annotations, { offending_containers: 'sidecar', offending_containers_usage: '64Mi', starved_resource: 'memory' });
});

test('evictionMessage for disk names a container only when both its rootfs and logs were measured', () => {
  const pod: PodSpec = {
    namespace: 'default',
    name: 'p',
    uid: 'p',
    priority: 0,
    annotations: {},
    volumes: [],
    containers: ['both', 'rootfs-only', 'logs-only'].map((name) => ({ name, requests: {}, limits: {} })),
  };
  const usage = {
    containers: [
      { name: 'both', rootfsBytes: 2 ** 30, logsBytes: 2 ** 20 },
      { name: 'rootfs-only', rootfsBytes: 2 ** 30 },
      { name: 'logs-only', logsBytes: 2 ** 30 },
    ],
    volumes: [],
  };
  const { message, annotations } = evictionMessage('ephemeral-storage', pod, usage, [], {});
  assert.equal(
    message,
    'The node was low on resource: ephemeral-storage. Container both was using 1025Mi, request is 0, has larger consumption of ephemeral-storage. ',
  );
  assert.equal(annotations.offending_containers, 'both');
});

// Which usage counts for each filesystem signal: images are never per pod; "layers" are the
// writable layers (rootfs), "logs" the container logs, "volumes" the pod's disk-backed volumes.
test('buildSignalToRankFunc: what each filesystem signal counts, per layout', () => {
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
    usage: {
      containers: [{ name: 'c', rootfsBytes: rootfs, logsBytes: logs, rootfsInodes: rootfs, logsInodes: logs }],
      volumes: [{ name: 'v', usedBytes: volume, inodesUsed: volume }],
    },
  });
  // Each pod is big in one place only; the first ranked shows what the signal counts.
  const pods = [pod('layers', 100, 0, 0), pod('logs', 0, 90, 0), pod('volumes', 0, 0, 80)];
  const first = (signal: Signal, layout: FilesystemLayout) => rankFor(signal, layout, pods)[0]!.pod.spec.name;
  const table: [Signal, FilesystemLayout, string][] = [
    ['nodefs.available', 'single', 'layers'],
    ['imagefs.available', 'single', 'layers'],
    ['nodefs.available', 'dedicated-imagefs', 'logs'], // logs + volumes only
    ['nodefs.inodesFree', 'dedicated-imagefs', 'logs'],
    ['imagefs.available', 'dedicated-imagefs', 'layers'], // writable layers only
    ['imagefs.inodesFree', 'dedicated-imagefs', 'layers'],
    ['nodefs.available', 'split', 'layers'], // layers + logs + volumes
    ['imagefs.available', 'split', 'layers'], // nothing per pod: all tie, listed order
  ];
  for (const [signal, layout, expected] of table) assert.equal(first(signal, layout), expected, `${signal} on ${layout}`);
  // split imagefs counts nothing: every pod ties at 0 and keeps the listed order
  assert.deepEqual(
    rankFor('imagefs.available', 'split', [pods[2]!, pods[0]!]).map((r) => r.pod.spec.name),
    ['volumes', 'layers'],
  );
  // dedicated-imagefs nodefs ignores layers entirely: the layers pod ranks last
  assert.equal(rankFor('nodefs.available', 'dedicated-imagefs', pods).at(-1)!.pod.spec.name, 'layers');
});
