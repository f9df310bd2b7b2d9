// Pod helpers for the e2e tests: every pod a test creates carries the run's label, so cleanup
// removes exactly those pods, also when the harness was already running for someone else.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { CriClient } from '../../src/cri';
import { containerConfig, sandboxConfig, type ContainerRunSpec, type SandboxSpec } from '../../src/lab/sandbox-config';
import { ensureHarness, HARNESS_CGROUP, HARNESS_DIR, harnessMissing, type Harness } from '../../src/lab/harness';

export const RUN_LABEL = 'evictd.test/run';
export const runId = randomUUID().slice(0, 8);

export interface TestPod {
  spec: SandboxSpec;
  sandboxId: string;
  containers: Record<string, string>;
  /** The pod's cgroup under the v1 memory controller or cgroup2 (whichever has memory files). */
  cgroupParent: string;
}

export async function createPod(client: CriClient, name: string, containers: ContainerRunSpec[], harnessDir = HARNESS_DIR): Promise<TestPod> {
  const uid = `${runId}-${name}`;
  const logDirectory = path.join(harnessDir, 'pods', uid);
  fs.mkdirSync(logDirectory, { recursive: true });
  const spec: SandboxSpec = {
    name: `${name}-${runId}`,
    uid,
    namespace: 'evictd-test',
    cgroupParent: `${HARNESS_CGROUP}/burstable/pod${uid}`,
    labels: { [RUN_LABEL]: runId },
    logDirectory,
  };
  const sandboxId = await client.runPodSandbox(sandboxConfig(spec));
  const ids: Record<string, string> = {};
  for (const c of containers) {
    const id = await client.createContainer(sandboxId, containerConfig(spec, { logPath: `${c.name}.log`, ...c }), sandboxConfig(spec));
    await client.startContainer(id);
    ids[c.name] = id;
  }
  return { spec, sandboxId, containers: ids, cgroupParent: spec.cgroupParent as string };
}

/** Stops and removes every sandbox of this run (idempotent; errors are ignored on purpose: best-effort cleanup). */
export async function removeRunPods(client: CriClient): Promise<void> {
  const pods = await client.listPodSandbox({ labelSelector: { [RUN_LABEL]: runId } }).catch(() => []);
  for (const p of pods) {
    await client.stopPodSandbox(p.id).catch(() => undefined);
    await client.removePodSandbox(p.id).catch(() => undefined);
  }
}

export function podLog(pod: TestPod, container: string): string {
  const file = path.join(pod.spec.logDirectory as string, `${container}.log`);
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
}

/** A container that ignores SIGTERM (its shell is PID 1 and traps it), so only SIGKILL stops it. */
export const stubborn = (name: string): ContainerRunSpec => ({
  name,
  image: 'localhost/evictd/busybox:1',
  command: ['/bin/sh', '-c', 'trap "" TERM; while true; do sleep 1; done'],
});

/**
 * A suite's own harness instance in `dir` (its tests kill containerd or reclaim images, which
 * must not reach anyone else's harness): brought up before the suite, its pods removed and the
 * instance released after. `setupError` names what is missing when it could not start.
 */
export function usePrivateHarness(dir: string) {
  let harness: Harness | undefined;
  let client: CriClient | undefined;
  let setupError: string | null = harnessMissing();
  before(async () => {
    if (setupError) return;
    try {
      harness = await ensureHarness(dir);
      client = CriClient.connect(harness.endpoint, { timeoutMs: 10_000 });
    } catch (e) {
      setupError = `containerd harness could not start: ${(e as Error).message}`;
    }
  });
  after(async () => {
    if (client) {
      await removeRunPods(client);
      client.close();
    }
    await harness?.release();
  });
  return {
    get setupError(): string | null {
      return setupError;
    },
    get client(): CriClient {
      assert.ok(client, 'CRI client connected');
      return client;
    },
    harness(): Harness {
      assert.ok(harness, 'harness up');
      return harness;
    },
  };
}
