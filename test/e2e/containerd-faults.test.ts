// Faults on a real containerd: nothing at the endpoint, methods containerd 1.6 lacks, a call
// past its deadline, and the runtime killed in the middle of a call and started again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { CriClient, CriError, EvictError, evictPod } from '../../src/cri';
import { skipped, slow } from '../support/environment';
import { createPod, stubborn, usePrivateHarness } from './pods';
import { waitFor } from '../support/wait';

const FAULTS_DIR = '/run/evictd-harness-faults';
const e2e = usePrivateHarness(FAULTS_DIR);

async function rejection(p: Promise<unknown>): Promise<CriError> {
  const e = await p.then(
    () => assert.fail('the call succeeded'),
    (err: unknown) => err,
  );
  assert.ok(e instanceof CriError, `a CriError, not ${String(e)}`);
  return e;
}

test('nothing listening at the endpoint: a clear UNAVAILABLE after retries', async (t) => {
  if (skipped(t, e2e.setupError)) return;
  const sock = path.join(FAULTS_DIR, 'nobody-here.sock');
  // The deadline leaves room for the client's retries on emulated CPUs (slow()): they, not the
  // deadline, must end the call.
  const c = CriClient.connect(`unix://${sock}`, { timeoutMs: slow(500) });
  try {
    const e = await rejection(c.listPodSandbox());
    assert.equal(e.code, 'UNAVAILABLE');
    assert.equal(e.rpc, 'ListPodSandbox');
    assert.ok(e.attempts > 1);
    assert.ok(e.message.includes(sock), e.message);
  } finally {
    c.close();
  }
});

test('methods containerd 1.6 lacks answer UNIMPLEMENTED as a typed error', async (t) => {
  if (skipped(t, e2e.setupError)) return;
  const e = await rejection(e2e.client.runtimeConfig());
  assert.equal(e.code, 'UNIMPLEMENTED');
  assert.equal(e.rpc, 'RuntimeConfig');
  assert.equal(e.attempts, 1);
});

test('a call past its deadline fails with DEADLINE_EXCEEDED; an eviction of that pod reports the failed step', async (t) => {
  if (skipped(t, e2e.setupError)) return;
  const pod = await createPod(e2e.client, 'deadline', [stubborn('stubborn')], FAULTS_DIR);
  const id = pod.containers.stubborn as string;
  // 30 s of grace for a process that ignores SIGTERM, but only 500 ms of patience.
  const e = await rejection(e2e.client.stopContainer(id, 30, { deadlineMs: 500 }));
  assert.equal(e.code, 'DEADLINE_EXCEEDED');
  assert.equal(e.rpc, 'StopContainer');
  await assert.rejects(evictPod(e2e.client, pod.sandboxId, 30, { stopDeadlineMs: 500 }), (err: unknown) => {
    assert.ok(err instanceof EvictError, String(err));
    assert.equal(err.step, 'stopContainer');
    assert.equal(err.code, 'DEADLINE_EXCEEDED');
    return true;
  });
  // The runtime is still fine, and an immediate stop finishes the job.
  await evictPod(e2e.client, pod.sandboxId, 0);
});

test('containerd killed during a StopContainer and started again: the call is retried and completes', async (t) => {
  if (skipped(t, e2e.setupError)) return;
  const pod = await createPod(e2e.client, 'restart', [stubborn('stubborn')], FAULTS_DIR);
  const id = pod.containers.stubborn as string;
  const pid = e2e.harness().containerdPid();
  assert.ok(pid, 'the harness containerd is running');
  // Grace 3 s: the first StopContainer is still waiting when containerd dies under it. The
  // deadline covers the harness's restart of containerd, which takes long on emulated CPUs (the
  // lab's CI saw the 20 s run out first).
  const stopping = e2e.client.stopContainer(id, 3, { deadlineMs: slow(20_000) });
  // Awaited below, after the restart: a rejection meanwhile is that await's failure, not an unhandled one.
  stopping.catch(() => undefined);
  await new Promise((r) => setTimeout(r, 500));
  process.kill(pid, 'SIGKILL');
  await waitFor('containerd to exit', async () => e2e.harness().containerdPid() === null, 5000, 20);
  const up = await e2e.harness().run(['up']);
  assert.equal(up.code, 0, up.stderr);
  assert.notEqual(e2e.harness().containerdPid(), pid, 'a new containerd');
  await stopping;
  const st = (await e2e.client.containerStatus(id)).status;
  assert.equal(st?.state, 'CONTAINER_EXITED');
  assert.equal(st?.exitCode, 137);
  await evictPod(e2e.client, pod.sandboxId, 0);
});

test('containerd killed during a call and not restarted: the call fails within its deadline, typed', async (t) => {
  if (skipped(t, e2e.setupError)) return;
  const pod = await createPod(e2e.client, 'down', [stubborn('stubborn')], FAULTS_DIR);
  const pid = e2e.harness().containerdPid();
  assert.ok(pid);
  const stopping = e2e.client.stopContainer(pod.containers.stubborn as string, 5, { deadlineMs: 2000 });
  await new Promise((r) => setTimeout(r, 300));
  process.kill(pid, 'SIGKILL');
  const e = await rejection(stopping);
  assert.ok(e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED', e.message);
  assert.equal(e.rpc, 'StopContainer');
  const up = await e2e.harness().run(['up']);
  assert.equal(up.code, 0, up.stderr);
  await evictPod(e2e.client, pod.sandboxId, 0);
});
