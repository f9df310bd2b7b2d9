import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { skipped } from '../support/environment';
import type { NodeLab } from '../../src/lab/node-lab';
import { MiB, logTail, missingE2e, newLab, releaseHarness, stopAgents, sleeper, startAgent, type TestAgent } from './agent-harness';
import { waitFor } from '../support/wait';

// nodefs is a 64 MiB tmpfs holding the pods' logs (as /var/lib/kubelet holds them on a node).
const mountPoint = `/run/evictd-agent-nodefs-${process.pid}`;
let mounted = false;
const labs: NodeLab[] = [];
const agents: TestAgent[] = [];
after(async () => {
  // each agent's recording replayed as it stops; a difference fails the file once all is torn down
  const replayed = await stopAgents(agents).then(
    () => null,
    (e: Error) => e,
  );
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
  if (mounted) execFileSync('umount', [mountPoint]);
  fs.rmSync(mountPoint, { recursive: true, force: true });

  if (replayed) throw replayed;
});

test('nodefs.available on a small tmpfs: the pod that fills it with logs is evicted first', async (t) => {
  if (skipped(t, missingE2e())) return;
  fs.mkdirSync(mountPoint, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mountPoint]);
  mounted = true;
  const lab = await newLab('disk', { memoryLimitBytes: 512 * MiB, logRoot: path.join(mountPoint, 'pods') });
  labs.push(lab);
  const quiet = await lab.runPod({ name: 'quiet', qos: 'Burstable', containers: [sleeper('app', 64 * MiB)] });
  const a = await startAgent(lab, { flags: { evictionHard: 'nodefs.available<50%' }, nodefsPath: mountPoint, housekeepingIntervalMs: 200 });
  agents.push(a);
  await waitFor('the first pass', () => a.agent.controller.stats.passes > 0);
  assert.equal(a.evictions.length, 0);
  const chatty = await lab.runPod({
    name: 'chatty',
    qos: 'Burstable',
    containers: [
      {
        name: 'log',
        image: 'localhost/evictd/busybox:1',
        command: ['/bin/sh', '-c', "head -c 40000000 /dev/zero | tr '\\0' x | fold -w 1000; while true; do sleep 1; done"],
        memoryLimitBytes: 64 * MiB,
      },
    ],
  });
  const rec = await waitFor('an eviction', () => a.evictions.find((e) => e.ok), 30_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(rec.pod.uid, chatty.uid, `evicted ${rec.pod.name}: ${rec.reasons.join('; ')}`);
  assert.equal(rec.signal, 'nodefs.available');
  assert.equal(rec.action, 'stop');
  assert.ok(
    rec.reasons.some((r) => /disk|log|usage/i.test(r)),
    rec.reasons.join('; '),
  );
  assert.notEqual(a.evictions[0]!.pod.uid, quiet.uid);
});
