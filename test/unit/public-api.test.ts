// The package's public name, as an embedder imports it: `evictd`, never a relative path. The
// names docs/embedding.md promises must be there and work together.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as evictd from 'evictd';
import { documentedNames } from '../package/documented-api';

/**
 * The types the doc names beside them, checked by the compiler: one missing from the package
 * fails the build.
 */
export type DocumentedTypes = [
  evictd.EvictionConfig,
  evictd.EvictionFlags,
  evictd.PolicyConfig,
  evictd.Watcher,
  evictd.ThresholdWatcher,
  evictd.PsiWatcher,
  evictd.KernelEvent,
  evictd.KernelError,
  evictd.RuntimePort,
  evictd.NotificationPort,
  evictd.PodSpecSource,
  evictd.EvictionReporter,
];

test('require("evictd") exposes the documented parts', () => {
  for (const name of [
    'configFromKubeletConfiguration',
    'configFromFlags',
    'compileConfig',
    'ConfigError',
    'evaluate',
    'assess',
    'planEvictions',
    'initialState',
    'admit',
    'Quantity',
    'readScenario',
    'simulate',
    'watchUsageThreshold',
    'watchPsi',
    'watchCgroupEvents',
    'nativeAvailable',
    'detectCgroups',
    'NodeObserver',
    'CriClient',
    'evictPod',
    'reclaimContainers',
    'Agent',
    'AgentMetrics',
    'CriRuntime',
    'kernelNotifications',
  ]) {
    assert.equal(typeof (evictd as Record<string, unknown>)[name], 'function', `evictd.${name}`);
  }
});

test('require("evictd") is exactly the names docs/embedding.md lists: nothing missing, nothing more', () => {
  const documented = documentedNames();
  assert.ok(documented.length > 40, `the doc's table was read (${documented.length} names)`);
  assert.deepEqual(Object.keys(evictd).sort(), documented);
  for (const name of documented) assert.notEqual((evictd as Record<string, unknown>)[name], undefined, `evictd.${name}`);
});

test('the public names decide as the kubelet does: config from a KubeletConfiguration, flags on top, one pass', () => {
  const file = evictd.configFromKubeletConfiguration({ kind: 'KubeletConfiguration', evictionHard: { 'memory.available': '1Gi' } });
  const policy = evictd.compileConfig(evictd.configFromFlags({ evictionHard: 'memory.available<2Gi' }, file));
  const pod = (name: string, priority: number): evictd.ActivePod => ({
    spec: { namespace: 'ns', name, uid: name, priority, annotations: {}, volumes: [], containers: [{ name: 'c', requests: {}, limits: {} }] },
    usage: { containers: [{ name: 'c', memoryBytes: 1 << 30 }], volumes: [] },
  });
  const ev = evictd.evaluate(policy, evictd.initialState(), {
    now: 0,
    layout: 'single',
    node: { memory: { availableBytes: 1.5 * 2 ** 30, workingSetBytes: 2 ** 30 } },
    pods: [pod('high', 100), pod('low', 0)],
  });
  // 1.5Gi available: under the flag's 2Gi (flags win over the file's 1Gi).
  assert.deepEqual(ev.conditions, ['MemoryPressure']);
  assert.equal(ev.thresholdsMet[0]?.quantity, '2Gi');
  assert.equal(ev.plan?.candidates[0]?.pod.name, 'low');
});

test('a bad config through the public name is a ConfigError naming the field and the value', () => {
  assert.throws(
    () => evictd.compileConfig(evictd.configFromFlags({ evictionHard: 'memory.available<lots' })),
    (err: unknown) => {
      assert.ok(err instanceof evictd.ConfigError);
      assert.match((err as Error).message, /eviction-hard.*lots/);
      return true;
    },
  );
});

test('fractional numbers from an embedder are truncated in messages and reasons, never a crash', () => {
  const policy = evictd.compileConfig(evictd.configFromFlags({ evictionHard: 'memory.available<10%' }));
  const ev = evictd.evaluate(policy, evictd.initialState(), {
    now: 0,
    layout: 'single',
    node: { memory: { availableBytes: 0.05 * 2 ** 30 + 0.5, workingSetBytes: 2 ** 30 } },
    pods: [
      {
        spec: { namespace: 'ns', name: 'p', uid: 'p', priority: 0, annotations: {}, volumes: [], containers: [{ name: 'c', requests: {}, limits: {} }] },
        usage: { containers: [{ name: 'c', memoryBytes: 1e6 + 0.25 }], volumes: [] },
      },
    ],
  });
  const first = ev.plan?.candidates[0];
  assert.match(first?.message ?? '', /available: 53687091\. /);
  assert.match(first?.reasons.join('; ') ?? '', /memory usage 1000000 exceeds request 0/);
});
