/**
 * A lab destroyed while one of its pods is being created leaves no sandbox behind. The lab
 * bench stopped by SIGTERM mid-trial (bench-interrupt.test.ts) failed once on this: its trial was
 * creating the writer pod's sandbox when the ending listed the lab's sandboxes, and the sandbox
 * landed after the list (a README check, in the lab). destroy() now waits for the creations in
 * flight, and a creation that ends after destroy() began is refused to its caller.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { skipped } from '../support/environment';
import { LAB_LABEL } from '../../src/lab/node-lab';
import { criClient, missingE2e, newLab, releaseHarness, sleeper } from './agent-harness';

after(releaseHarness);

test('destroy() while a pod is being created: the pod is refused to its caller and no sandbox of the lab is left', async (t) => {
  if (skipped(t, missingE2e())) return;
  const { client } = await criClient();
  const lab = await newLab('destroy-in-flight', { memoryLimitBytes: null });
  const creating = lab.runPod({ name: 'late', namespace: 'evictd-lab', qos: 'BestEffort', containers: [sleeper('app')] });
  const destroyed = lab.destroy();
  await assert.rejects(creating, /destroyed while pod late was created/);
  await destroyed;
  const left = await client.listPodSandbox({ labelSelector: { [LAB_LABEL]: lab.labId } });
  assert.deepEqual(
    left.map((s) => s.metadata?.name),
    [],
    'no sandbox of the lab left',
  );
  await assert.rejects(lab.runPod({ name: 'after', qos: 'BestEffort', containers: [sleeper('app')] }), /being destroyed, no new pod/);
});
