// KEP-5986 stage 1 on a real containerd: a container's cgroup v2 memory.high raised to "max"
// through UpdateContainerResources (unified["memory.high"]), and what the runtime really does
// with it, read from the container's cgroup. memory.high exists only on pure cgroup v2 (on a
// hybrid host memory is a v1 controller), so this runs in the lab (scripts/v2vm) and skips on
// such a host; the harness is not even brought up there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { relaxMemoryHigh } from '../../src/cri';
import { HARNESS_CGROUP, IMAGES } from '../../src/lab/harness';
import { containerConfig, sandboxConfig, type SandboxSpec } from '../../src/lab/sandbox-config';
import { cgroupMode, needsPureV2, skipped } from '../support/environment';
import { RUN_LABEL, runId, usePrivateHarness } from './pods';

const MiB = 1024 * 1024;
const RELAX_DIR = '/run/evictd-harness-relax';
const e2e = cgroupMode() === 'v2' ? usePrivateHarness(RELAX_DIR) : null;

interface Created {
  id: string;
  cgroup: string;
}

/**
 * A pod with one sleeping container under a memory limit and, as the kubelet's MemoryQoS sets
 * it, a memory.high in `unified` at creation: the suites' createPod (pods.ts) has no
 * unified map, so the container is created here.
 */
async function createThrottled(name: string, limit: number, high: number | null): Promise<Created> {
  assert.ok(e2e);
  const uid = `${runId}-${name}`;
  const logDirectory = path.join(RELAX_DIR, 'pods', uid);
  fs.mkdirSync(logDirectory, { recursive: true });
  const spec: SandboxSpec = {
    name: `${name}-${runId}`,
    uid,
    namespace: 'evictd-test',
    cgroupParent: `${HARNESS_CGROUP}/burstable/pod${uid}`,
    labels: { [RUN_LABEL]: runId },
    logDirectory,
  };
  const sandboxId = await e2e.client.runPodSandbox(sandboxConfig(spec));
  const config = containerConfig(spec, { name: 'app', image: IMAGES.busybox, command: ['sleep', '3600'], memoryLimitBytes: limit, logPath: 'app.log' });
  if (high !== null) config.linux = { ...config.linux, resources: { ...config.linux?.resources, unified: { 'memory.high': String(high) } } };
  const id = await e2e.client.createContainer(sandboxId, config, sandboxConfig(spec));
  await e2e.client.startContainer(id);
  return { id, cgroup: `/sys/fs/cgroup${spec.cgroupParent}/${id}` };
}

const read = (cgroup: string, file: string) => fs.readFileSync(path.join(cgroup, file), 'utf8').trim();

test('memory.high set at creation is raised to max by UpdateContainerResources; memory.max and the other resources stay', async (t) => {
  if (needsPureV2(t)) return;
  assert.ok(e2e);
  if (skipped(t, e2e.setupError)) return;
  const c = await createThrottled('relax', 64 * MiB, 48 * MiB);
  // containerd passes unified to runc at creation: the throttle is really there to lift.
  assert.equal(read(c.cgroup, 'memory.high'), String(48 * MiB));
  assert.equal(read(c.cgroup, 'memory.max'), String(64 * MiB));
  const before = (await e2e.client.containerStatus(c.id)).status?.resources?.linux;
  t.diagnostic(`ContainerStatus resources before: ${JSON.stringify(before)}`);
  assert.equal(before?.memoryLimitInBytes, 64 * MiB, 'the runtime reports the current resources the relax sends back');

  const r = await relaxMemoryHigh(e2e.client, c.id, async () => read(c.cgroup, 'memory.high'));
  t.diagnostic(`relax: ${JSON.stringify(r)}`);
  assert.equal(r.outcome, 'applied', r.detail);
  assert.equal(r.memoryHigh, 'max');
  assert.equal(read(c.cgroup, 'memory.high'), 'max');
  assert.equal(read(c.cgroup, 'memory.max'), String(64 * MiB), 'the memory limit is untouched');
  const after = (await e2e.client.containerStatus(c.id)).status;
  t.diagnostic(`ContainerStatus resources after: ${JSON.stringify(after?.resources?.linux)}`);
  assert.equal(after?.state, 'CONTAINER_RUNNING');
  assert.equal(after?.resources?.linux?.memoryLimitInBytes, 64 * MiB);
  assert.equal(after?.resources?.linux?.unified?.['memory.high'], 'max', "the runtime keeps the relaxed value in the container's resources");

  // The control: the unified key is what moves the file (not a side effect of any update), so
  // the same call with the old value puts the throttle back, as the kubelet's MemoryQoS would.
  await e2e.client.updateContainerResources(c.id, { ...after?.resources?.linux, unified: { 'memory.high': String(48 * MiB) } });
  assert.equal(read(c.cgroup, 'memory.high'), String(48 * MiB));
  assert.equal(read(c.cgroup, 'memory.max'), String(64 * MiB));
});

test('a container that is gone: the relax is refused with NOT_FOUND, and nothing is read', async (t) => {
  if (needsPureV2(t)) return;
  assert.ok(e2e);
  if (skipped(t, e2e.setupError)) return;
  let reads = 0;
  const r = await relaxMemoryHigh(e2e.client, 'no-such-container-0123456789', async () => {
    reads++;
    return 'max';
  });
  assert.equal(r.outcome, 'refused', r.detail);
  assert.equal(r.code, 'NOT_FOUND');
  assert.equal(reads, 0);
});
