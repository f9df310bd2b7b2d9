import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { joinPods } from '../../src/agent/active-pods';
import { LAST_KNOWN_FILE, LastKnownPriorities } from '../../src/agent/last-known-priorities';
import type { RuntimePod } from '../../src/agent/ports';
import type { ObservedPodCgroup } from '../../src/node/observer';
import { isCritical } from '../../src/policy/pods';
import { tempDir } from '../support/temp-dir';

const silent = pino({ level: 'silent' });
const sandbox = (uid: string, namespace = 'net'): RuntimePod => ({
  sandboxId: `sb-${uid}`,
  uid,
  name: `pod-${uid}`,
  namespace,
  labels: {},
  annotations: { 'kubernetes.io/config.source': 'api' },
  ready: true,
});
const cgroup = (uid: string): ObservedPodCgroup => ({
  uid,
  qos: 'Burstable',
  path: `/kubepods/burstable/pod${uid}`,
  usage: { memoryWorkingSetBytes: 1 << 20, memoryUsageBytes: 1 << 20 },
});
const pod = (uid: string, priority: number, fromSource = true) => ({ uid, namespace: 'net', name: `pod-${uid}`, priority, fromSource });

test('a system-critical pod the source once named stays protected across a restart while the source is down', () => {
  const dir = tempDir('lastknown');
  const before = new LastKnownPriorities({ stateDir: dir, logger: silent });
  before.learn([pod('cni', 2_000_001_000), pod('web', 10)]);
  before.save();
  assert.equal(fs.statSync(path.join(dir, LAST_KNOWN_FILE)).mode & 0o777, 0o600);

  // The next process: no spec from the source (the API is unreachable at start).
  const after = new LastKnownPriorities({ stateDir: dir, logger: silent });
  after.load();
  const cgroups = new Map([
    ['cni', cgroup('cni')],
    ['web', cgroup('web')],
    ['new', cgroup('new')],
  ]);
  const joined = joinPods([sandbox('cni'), sandbox('web'), sandbox('new')], cgroups, { get: () => undefined }, { lastKnownPriority: after.priorityOf });
  const by = new Map(joined.map((j) => [j.runtime.uid, j]));
  assert.equal(by.get('cni')!.specSource, 'last-known');
  assert.equal(isCritical(by.get('cni')!.active.spec), true, 'the CNI pod outside kube-system is still system-critical');
  assert.equal(by.get('web')!.active.spec.priority, 10);
  assert.equal(by.get('new')!.specSource, 'runtime', 'a pod the source never named gets the runtime-only spec');
  assert.equal(by.get('new')!.active.spec.priority, 0);
  // Without the record, the same join would make the CNI pod evictable.
  assert.equal(isCritical(joinPods([sandbox('cni')], cgroups)[0]!.active.spec), false);
});

test('pods no longer running are forgotten; a record that does not parse is ignored', () => {
  const dir = tempDir('lastknown');
  const k = new LastKnownPriorities({ stateDir: dir, logger: silent });
  k.learn([pod('a', 5), pod('b', 6)]);
  k.learn([pod('a', 7), pod('c', 1, false)]);
  assert.equal(k.priorityOf('a'), 7);
  assert.equal(k.priorityOf('b'), undefined);
  assert.equal(k.priorityOf('c'), undefined, 'a pod the source did not speak for is not learned');
  k.save();
  assert.deepEqual(Object.keys(JSON.parse(fs.readFileSync(path.join(dir, LAST_KNOWN_FILE), 'utf8')).pods), ['a']);
  fs.writeFileSync(path.join(dir, LAST_KNOWN_FILE), '{"version":1,"pods":');
  const broken = new LastKnownPriorities({ stateDir: dir, logger: silent });
  broken.load();
  assert.equal(broken.priorityOf('a'), undefined);
});
