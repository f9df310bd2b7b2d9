/**
 * KEP-5986's ContainerMemoryPressure across a restart (agent/condition-record.ts): the pods a run
 * set True on are kept in the state dir; the next run clears them at its first pass, as the
 * KEP's kubelet does at its next sync, and forgets a pod only once a pod list that succeeded no
 * longer has it. The tracker is driven with pods that have no cgroup (no signals: nothing held),
 * a reporter that keeps what it is given, and a state dir of its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { CONDITION_FILE, ConditionRecord } from '../../src/agent/condition-record';
import { MEMORY_PRESSURE_SUBSIDED, MemoryPressureTracker } from '../../src/agent/memory-pressure-tracker';
import { AgentMetrics } from '../../src/agent/metrics';
import type { JoinedPod } from '../../src/agent/active-pods';
import type { EvictionReporter } from '../../src/agent/ports';
import type { PodConditionReport } from '../../src/policy/types';

const logger = pino({ level: 'silent' });

function stateDir(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-conditions-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function tracker(dir: string): { t: MemoryPressureTracker; reports: PodConditionReport[] } {
  const reports: PodConditionReport[] = [];
  const reporter: EvictionReporter = {
    report: () => Promise.resolve('done'),
    podCondition: (c) => {
      reports.push(c);
      return Promise.resolve();
    },
  };
  const t = new MemoryPressureTracker({
    config: { highThreshold: 10, maxThreshold: 0, psiThreshold: 0, gracePeriodNs: 30e9 },
    maxPodGracePeriodSeconds: 0,
    runtime: { listPods: () => Promise.resolve([]) } as never,
    podDir: (p) => p,
    notifications: null,
    wake: () => undefined,
    clock: { now: () => 0n } as never,
    logger,
    metrics: new AgentMetrics(),
    reporter,
    record: new ConditionRecord(dir, logger),
  });
  return { t, reports };
}

/** A running pod with no cgroup read: no container signals, so the policy holds no condition for it. */
const joined = (uid: string): JoinedPod => ({
  active: { spec: { namespace: 'default', name: uid, uid, priority: 0, annotations: {}, volumes: [], containers: [] } },
  runtime: { sandboxId: `sb-${uid}`, uid, name: uid, namespace: 'default', labels: {}, annotations: {}, ready: true },
  specSource: 'runtime',
});

const recorded = (dir: string): string[] => Object.keys((JSON.parse(fs.readFileSync(path.join(dir, CONDITION_FILE), 'utf8')) as { pods: object }).pods).sort();

test('a condition set by the last run is cleared at the first pass of the next; a pod gone is forgotten, not written', async (t) => {
  const dir = stateDir(t);
  new ConditionRecord(dir, logger).save(
    new Map([
      ['web', { uid: 'web', namespace: 'default', name: 'web' }],
      ['gone', { uid: 'gone', namespace: 'default', name: 'gone' }],
    ]),
  );
  const { t: tr, reports } = tracker(dir);
  await tr.decide([joined('web'), joined('other')], 1e9);
  assert.deepEqual(
    reports.map((r) => [r.pod.uid, r.status, r.reason]),
    [['web', 'False', MEMORY_PRESSURE_SUBSIDED]],
  );
  assert.deepEqual(recorded(dir), [], 'the record is empty once both are settled');
  // The next pass has nothing left to clear.
  await tr.decide([joined('web')], 2e9);
  assert.equal(reports.length, 1);
});

test('a pod missing from a pod list that failed is kept for the pass that can tell', async (t) => {
  const dir = stateDir(t);
  new ConditionRecord(dir, logger).save(
    new Map([
      ['web', { uid: 'web', namespace: 'default', name: 'web' }],
      ['api', { uid: 'api', namespace: 'default', name: 'api' }],
    ]),
  );
  const { t: tr, reports } = tracker(dir);
  // The runtime did not answer: only what was joined (from the last good list) is known.
  await tr.decide([joined('web')], 1e9, false);
  assert.deepEqual(
    reports.map((r) => r.pod.uid),
    ['web'],
  );
  assert.deepEqual(recorded(dir), ['api'], 'api not forgotten on a failed list');
  await tr.decide([joined('api')], 2e9, true);
  assert.deepEqual(
    reports.map((r) => [r.pod.uid, r.status]),
    [
      ['web', 'False'],
      ['api', 'False'],
    ],
  );
  assert.deepEqual(recorded(dir), []);
});

test('the record refuses what it cannot trust: a file that does not parse, or a link in its place, is ignored', (t) => {
  const dir = stateDir(t);
  fs.writeFileSync(path.join(dir, CONDITION_FILE), '{"version": 2, "pods": {"x": {"namespace": "a", "name": "b"}}}');
  assert.equal(new ConditionRecord(dir, logger).load().size, 0, 'another version');
  fs.writeFileSync(path.join(dir, CONDITION_FILE), 'not json');
  assert.equal(new ConditionRecord(dir, logger).load().size, 0, 'not JSON');
  fs.rmSync(path.join(dir, CONDITION_FILE));
  const target = path.join(dir, 'elsewhere.json');
  fs.writeFileSync(target, JSON.stringify({ version: 1, pods: { x: { namespace: 'a', name: 'b' } } }));
  fs.symlinkSync(target, path.join(dir, CONDITION_FILE));
  assert.equal(new ConditionRecord(dir, logger).load().size, 0, 'a link is not followed');
  fs.rmSync(path.join(dir, CONDITION_FILE));
  fs.renameSync(target, path.join(dir, CONDITION_FILE));
  assert.deepEqual([...new ConditionRecord(dir, logger).load().values()], [{ uid: 'x', namespace: 'a', name: 'b' }], 'the same file in its place is read');
});
