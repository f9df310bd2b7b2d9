// Local-storage limits on a node without disk pressure, as the kubelet's localStorageEviction
// checks them every pass: a pod over its ephemeral-storage limit (its container log, measured
// through the runtime) and a pod whose emptyDir is over its sizeLimit (measured under the
// kubelet's root dir) are evicted; a pod within its limits is not. Real containerd, real files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped } from '../support/environment';
import { waitFor } from '../support/wait';
import { emptyDirPath } from '../../src/node/volumes';
import { Quantity } from '../../src/policy/quantity';
import type { PodSpec } from '../../src/policy/types';
import { MiB, logTail, missingE2e, newLab, sleeper, startAgent, suiteCleanup } from './agent-harness';

const { labs, agents } = suiteCleanup();
// No disk threshold: only the limits can evict here. The memory line is far below the node's use.
const flags = { evictionHard: 'memory.available<1Mi' };

test('ephemeral-storage limit: the pod whose log outgrows it is evicted (ephemeralpodfs.limit), its neighbour is not', async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('storage-limit', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const limits = { 'evictd.io/requests': 'memory=16Mi', 'evictd.io/limits': 'memory=64Mi,ephemeral-storage=8Mi' };
  const calm = await lab.runPod({ name: 'calm', qos: 'Burstable', containers: [sleeper('app', 64 * MiB)], annotations: limits });
  const a = await startAgent(lab, { flags, housekeepingIntervalMs: 200 });
  agents.push(a);
  await waitFor('a housekeeping pass', () => a.agent.controller.stats.passes > 2);
  const chatty = await lab.runPod({
    name: 'chatty',
    qos: 'Burstable',
    // 20 MB of log lines, then quiet: well past the 8Mi limit.
    containers: [
      {
        name: 'log',
        image: 'localhost/evictd/busybox:1',
        command: ['/bin/sh', '-c', "head -c 20000000 /dev/zero | tr '\\0' x | fold -w 1000; while true; do sleep 1; done"],
        memoryLimitBytes: 64 * MiB,
      },
    ],
    annotations: limits,
  });
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 30_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(rec.pod.uid, chatty.uid, `evicted ${rec.pod.name}: ${rec.message}`);
  assert.equal(rec.signal, 'ephemeralpodfs.limit');
  assert.match(rec.message, /ephemeral local storage usage exceeds the total limit of containers 8Mi/i);
  assert.ok(
    a.evictions.every((e) => e.pod.uid !== calm.uid),
    'the pod within its limit stays',
  );
  assert.equal(await lab.sandboxReady(calm), true);
});

test('emptyDir sizeLimit: the pod whose emptyDir outgrows it is evicted (emptydirfs.limit), measured under the root dir', async (t) => {
  if (skipped(t, missingE2e())) return;
  const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-kubelet-root-'));
  t.after(() => fs.rmSync(rootDir, { recursive: true, force: true }));
  const lab = await newLab('emptydir', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const pod = await lab.runPod({ name: 'cache', qos: 'Burstable', containers: [sleeper('app', 64 * MiB)] });
  // The spec the API server would give (the runtime knows nothing of volumes).
  const spec: PodSpec = {
    namespace: pod.namespace,
    name: pod.name,
    uid: pod.uid,
    priority: 0,
    annotations: {},
    containers: [{ name: 'app', requests: { memory: Quantity.parse('16Mi') }, limits: { memory: Quantity.parse('64Mi') } }],
    volumes: [{ name: 'scratch', emptyDir: { sizeLimit: Quantity.parse('4Mi') } }],
  };
  // Where the kubelet creates the volume; the test writes what the container would.
  const volume = emptyDirPath(rootDir, pod.uid, 'scratch');
  fs.mkdirSync(volume, { recursive: true });
  fs.writeFileSync(path.join(volume, 'small'), Buffer.alloc(MiB, 1));
  const a = await startAgent(lab, {
    flags,
    housekeepingIntervalMs: 200,
    nodefsPath: rootDir,
    volumeStatsAggPeriodMs: 200,
    pods: { get: (uid) => (uid === pod.uid ? spec : undefined) },
  });
  agents.push(a);
  // Under its limit for a few measurements: nothing happens.
  await waitFor('passes with the volume measured', () => a.agent.controller.stats.passes > 5);
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(a.evictions.length, 0, JSON.stringify(a.evictions.map((e) => e.message)));
  fs.writeFileSync(path.join(volume, 'big'), Buffer.alloc(8 * MiB, 1));
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 30_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(rec.pod.uid, pod.uid);
  assert.equal(rec.signal, 'emptydirfs.limit');
  assert.match(rec.message, /Usage of EmptyDir volume "scratch" exceeds the limit "4Mi"/);
});
