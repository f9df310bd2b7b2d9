/**
 * The grace period a threshold eviction gives the pod (pkg/kubelet/eviction/eviction_manager.go
 * synchronize, v1.34+: gracePeriodOverride), with the simulate contract's fixed rules for hard
 * thresholds (0) and for a soft one with no max pod grace period (0).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileConfig } from '../../../src/policy/config';
import { evictionGracePeriod } from '../../../src/policy/evaluate';
import type { ActivePod } from '../../../src/policy/types';
import { mem, memPod, run } from './helpers';

const pod = (tgps?: number): ActivePod => ({
  spec: {
    namespace: 'default',
    name: 'p',
    uid: 'p',
    priority: 0,
    annotations: {},
    containers: [],
    volumes: [],
    ...(tgps === undefined ? {} : { terminationGracePeriodSeconds: tgps }),
  },
});

test('gracePeriodOverride: hard 0; soft min(evictionMaxPodGracePeriod, terminationGracePeriodSeconds, API default 30)', () => {
  const cases: { name: string; softGrace?: string; max: number; tgps?: number; expected: number }[] = [
    { name: 'hard threshold, max set', max: 10, tgps: 30, expected: 0 },
    { name: 'hard threshold, no max', max: 0, tgps: 30, expected: 0 },
    { name: 'soft, no max: the fixed rule 0', softGrace: '1m', max: 0, tgps: 30, expected: 0 },
    { name: "soft, max below the pod's own", softGrace: '1m', max: 5, tgps: 30, expected: 5 },
    { name: "soft, max above the pod's own", softGrace: '1m', max: 60, tgps: 30, expected: 30 },
    { name: 'soft, pod with 0 of its own', softGrace: '1m', max: 60, tgps: 0, expected: 0 },
    { name: 'soft, pod without its own: the API default 30 caps a larger max', softGrace: '1m', max: 60, expected: 30 },
    { name: 'soft, pod without its own: a smaller max wins', softGrace: '1m', max: 10, expected: 10 },
    { name: 'soft with a 0s grace period is hard (isHardEvictionThreshold)', softGrace: '0s', max: 60, tgps: 30, expected: 0 },
  ];
  for (const c of cases) {
    const config = compileConfig(
      c.softGrace === undefined
        ? { evictionHard: { 'memory.available': '1Gi' }, evictionMaxPodGracePeriod: c.max }
        : {
            evictionHard: {},
            evictionSoft: { 'memory.available': '1Gi' },
            evictionSoftGracePeriod: { 'memory.available': c.softGrace },
            evictionMaxPodGracePeriod: c.max,
          },
    );
    assert.equal(evictionGracePeriod(config, config.thresholds[0]!, pod(c.tgps)), c.expected, c.name);
  }
});

test('the grace period reaches the simulate output for a pod without terminationGracePeriodSeconds', () => {
  const steps = run({
    config: {
      evictionHard: {},
      evictionSoft: { 'memory.available': '2Gi' },
      evictionSoftGracePeriod: { 'memory.available': '30s' },
      evictionMaxPodGracePeriod: 45,
    },
    steps: [
      { at: '0s', node: mem('1Gi'), pods: [memPod('p', '1Gi')] },
      { at: '30s', node: mem('1Gi'), pods: [memPod('p', '1Gi')] },
    ],
  });
  assert.deepEqual(steps[0]!.evicted, []);
  assert.equal(steps[1]!.evicted[0]!.gracePeriodSeconds, 30);
});

test('local-storage limit evictions always give 0', () => {
  const [s] = run({
    config: { evictionMaxPodGracePeriod: 60 },
    steps: [
      {
        at: '0s',
        pods: [
          { name: 'p', terminationGracePeriodSeconds: 90, containers: [{ name: 'c' }], volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Mi' }, usage: '2Mi' }] },
        ],
      },
    ],
  });
  assert.equal(s!.evicted[0]!.gracePeriodSeconds, 0);
});
