/**
 * The memory brake over the kubelet's MemoryQoS (KEP-2570, beta in v1.37 when
 * memoryThrottlingFactor is set): the kubelet owns each container's memory.high (set through CRI
 * at create and resize) and, from v1.37, the pod cgroup's (ApplyPodLevelMemoryHigh, at the pod
 * cgroup's creation). The brake writes the pod cgroup's alone; on real cgroup v2 files it must
 * give the kubelet's value back when it ends, never leave its own, never undo a value the kubelet
 * wrote meanwhile, never hold a pod the kubelet already holds lower, and never ease past the
 * kubelet's value at a graceful stop.
 */
import path from 'node:path';
import fs from 'node:fs';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { systemClock } from '../../src/agent/clock';
import { MemoryBrakes } from '../../src/agent/effects/memory-brake';
import { AgentMetrics } from '../../src/agent/metrics';
import { hostCgroups } from '../../src/node/cgroup-port';
import type { BrakeApply } from '../../src/policy/brake';
import { missingRoot, needsPureV2, skipped } from '../support/environment';
import { tempDir } from '../support/temp-dir';
import { CgroupFixture } from './cgroup-fixture';

const MiB = 1024 * 1024;
const fixtures: CgroupFixture[] = [];
after(async () => {
  for (const f of fixtures) await f.cleanup();
});

const apply: BrakeApply = {
  pod: { namespace: 'ns', name: 'qos', uid: 'q1' },
  threshold: { signal: 'memory.available', kind: 'soft', quantity: '1Gi', gracePeriodMet: false, observed: { available: 900 * MiB, capacity: 4096 * MiB } },
  reasons: ['memory usage above request'],
};

test("the brake over MemoryQoS: the kubelet's pod memory.high back at release, the container's untouched, the kubelet's later value kept", async (t) => {
  if (skipped(t, missingRoot())) return;
  if (needsPureV2(t)) return;
  const f = new CgroupFixture('evictd-brake-qos');
  fixtures.push(f);
  const podRel = 'kubepods/burstable/podq1';
  f.mkdir(`${podRel}/ctr`);
  const podPath = path.posix.join(f.root, podRel);
  const high = (rel: string) => fs.readFileSync(path.join(f.memDir(rel), 'memory.high'), 'utf8').trim();
  const setHigh = (rel: string, bytes: number) => fs.writeFileSync(path.join(f.memDir(rel), 'memory.high'), String(bytes));
  // The kubelet's values: the container's from requests + factor x (limit - requests), the pod's
  // from its pod-level resources (both page aligned, as the kubelet rounds them).
  setHigh(`${podRel}/ctr`, 512 * MiB);
  setHigh(podRel, 768 * MiB);
  const child = f.spawnIn(`${podRel}/ctr`, "const b = Buffer.alloc(64*1024*1024, 1); console.log('ready'); setInterval(() => b[0]++, 1000);");
  await CgroupFixture.waitLine(child, /ready/);

  const lines: { msg?: string }[] = [];
  const brakes = new MemoryBrakes({
    stateDir: tempDir('brake-qos'),
    cgroups: hostCgroups(f.layout),
    clock: systemClock,
    marginBytes: 8 * MiB,
    logger: pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s) as { msg?: string }) }),
    metrics: new AgentMetrics(),
    podRootDir: path.join(f.layout.memoryMount, f.root, 'kubepods'),
  });

  // 1. braked below the kubelet's value; the container's own memory.high is not the brake's to touch
  brakes.apply(apply, podPath);
  const braked = Number(high(podRel));
  assert.ok(braked >= 64 * MiB && braked < 768 * MiB, `brake value ${braked}`);
  assert.equal(high(`${podRel}/ctr`), String(512 * MiB));
  brakes.release('q1', 'recovered');
  assert.equal(high(podRel), String(768 * MiB), "the kubelet's pod value back, to the byte");
  assert.equal(high(`${podRel}/ctr`), String(512 * MiB));

  // 2. the kubelet writes the pod's memory.high while the brake holds (a resize): its value stays
  brakes.apply(apply, podPath);
  assert.notEqual(high(podRel), String(768 * MiB));
  setHigh(podRel, 1024 * MiB);
  brakes.release('q1', 'recovered');
  assert.equal(high(podRel), String(1024 * MiB), 'a value the kubelet wrote since is never undone');

  // 3. a graceful stop's ease never goes past the kubelet's value
  brakes.apply(apply, podPath);
  brakes.ease('q1', 4096 * MiB);
  assert.ok(Number(high(podRel)) <= 1024 * MiB, `eased to ${high(podRel)}`);
  brakes.release('q1', 'pod-gone');
  assert.equal(high(podRel), String(1024 * MiB));

  // 4. the kubelet already holds the pod lower than the brake would: nothing written, said once
  setHigh(podRel, 32 * MiB);
  brakes.apply(apply, podPath);
  assert.equal(high(podRel), String(32 * MiB));
  assert.equal(brakes.active.length, 0);
  assert.ok(lines.some((l) => l.msg === 'memory brake: the pod memory.high is already at or below the brake; left as is'));
  assert.equal(high(`${podRel}/ctr`), String(512 * MiB));
});
