/**
 * Admission under node pressure (eviction_manager.go Admit) with the memory-pressure taint
 * toleration test of core/v1 TolerationsTolerateTaint / Toleration.ToleratesTaint.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit } from '../../../src/policy/admission';
import type { NodeCondition, PodSpec, Toleration } from '../../../src/policy/types';
import { Quantity } from '../../../src/policy/quantity';
import { run } from './helpers';

const bestEffort = (tolerations?: Toleration[], extra: Partial<PodSpec> = {}): PodSpec => ({
  namespace: 'default',
  name: 'be',
  uid: 'be',
  priority: 0,
  annotations: {},
  volumes: [],
  containers: [{ name: 'c', requests: {}, limits: {} }],
  ...(tolerations ? { tolerations } : {}),
  ...extra,
});
const burstable: PodSpec = { ...bestEffort(), name: 'bu', containers: [{ name: 'c', requests: { memory: Quantity.parse('100Mi') }, limits: {} }] };
const MP = 'node.kubernetes.io/memory-pressure';

test('ToleratesTaint: which tolerations let a BestEffort pod in under MemoryPressure alone', () => {
  const cases: { name: string; t: Toleration; admitted: boolean }[] = [
    { name: 'key, Exists, NoSchedule', t: { key: MP, operator: 'Exists', effect: 'NoSchedule' }, admitted: true },
    { name: 'key, Exists, any effect', t: { key: MP, operator: 'Exists' }, admitted: true },
    { name: 'empty key with Exists tolerates every taint', t: { operator: 'Exists' }, admitted: true },
    { name: 'empty key with Exists, NoSchedule', t: { operator: 'Exists', effect: 'NoSchedule' }, admitted: true },
    { name: 'key, no operator (Equal), no value: the taint has none', t: { key: MP }, admitted: true },
    { name: 'key, Equal, empty value', t: { key: MP, operator: 'Equal', value: '' }, admitted: true },
    { name: 'key, Equal, a value the taint does not have', t: { key: MP, operator: 'Equal', value: 'true' }, admitted: false },
    { name: 'key, Exists, NoExecute', t: { key: MP, operator: 'Exists', effect: 'NoExecute' }, admitted: false },
    { name: 'key, Exists, PreferNoSchedule', t: { key: MP, operator: 'Exists', effect: 'PreferNoSchedule' }, admitted: false },
    { name: 'another taint', t: { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' }, admitted: false },
    { name: 'empty key, Exists, NoExecute', t: { operator: 'Exists', effect: 'NoExecute' }, admitted: false },
  ];
  for (const c of cases) assert.equal(admit(bestEffort([c.t]), ['MemoryPressure']).admit, c.admitted, c.name);
  assert.equal(admit(bestEffort(), ['MemoryPressure']).admit, false, 'no toleration');
  assert.equal(admit(bestEffort([{ key: 'x', operator: 'Exists' }, { key: MP }]), ['MemoryPressure']).admit, true, 'any one toleration is enough');
});

test('Admit: conditions, QoS and critical pods', () => {
  const tolerating = bestEffort([{ key: MP, operator: 'Exists' }]);
  const staticPod = bestEffort(undefined, { name: 'static', annotations: { 'kubernetes.io/config.source': 'file' } });
  const mirror = bestEffort(undefined, { name: 'mirror', annotations: { 'kubernetes.io/config.mirror': 'abc' } });
  const systemCritical = bestEffort(undefined, { name: 'sc', priority: 2000000000 });
  const belowCritical = bestEffort(undefined, { name: 'nc', priority: 1999999999 });
  const cases: { conditions: NodeCondition[]; pod: PodSpec; admitted: boolean; why: string }[] = [
    { conditions: [], pod: bestEffort(), admitted: true, why: 'no pressure' },
    { conditions: ['MemoryPressure'], pod: burstable, admitted: true, why: 'memory pressure refuses BestEffort only' },
    { conditions: ['MemoryPressure'], pod: bestEffort(), admitted: false, why: 'BestEffort under memory pressure' },
    { conditions: ['DiskPressure'], pod: burstable, admitted: false, why: 'any other condition refuses every pod' },
    { conditions: ['PIDPressure'], pod: burstable, admitted: false, why: 'PID pressure too' },
    {
      conditions: ['DiskPressure'],
      pod: bestEffort([{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' }]),
      admitted: false,
      why: 'tolerations count only under memory pressure alone',
    },
    { conditions: ['DiskPressure', 'MemoryPressure'], pod: tolerating, admitted: false, why: 'memory pressure with another condition' },
    { conditions: ['DiskPressure', 'MemoryPressure'], pod: staticPod, admitted: true, why: 'static pods are critical' },
    { conditions: ['PIDPressure'], pod: mirror, admitted: true, why: 'mirror pods are critical' },
    { conditions: ['DiskPressure'], pod: systemCritical, admitted: true, why: 'system-critical priority' },
    { conditions: ['DiskPressure'], pod: belowCritical, admitted: false, why: 'one below system-critical priority' },
  ];
  for (const c of cases) assert.equal(admit(c.pod, c.conditions).admit, c.admitted, c.why);
  assert.deepEqual(admit(burstable, ['DiskPressure', 'MemoryPressure']), {
    admit: false,
    reason: 'Evicted',
    message: 'The node had condition: [DiskPressure MemoryPressure]. ',
  });
});

test('a scenario offers pods to admission with their tolerations', () => {
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        at: '0s',
        node: { memory: { availableBytes: '500Mi', workingSetBytes: '1Gi' } },
        admit: [
          { name: 'plain', containers: [{ name: 'c' }] },
          { name: 'tolerant', containers: [{ name: 'c' }], tolerations: [{ key: MP, operator: 'Exists', effect: 'NoSchedule' }] },
        ],
      },
    ],
  });
  assert.deepEqual(
    s!.admission.map((a) => `${a.pod} ${a.admit}`),
    ['default/plain false', 'default/tolerant true'],
  );
});
