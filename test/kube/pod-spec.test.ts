import assert from 'node:assert/strict';
import { isCritical } from '../../src/policy/pods';
import { describe, test } from 'node:test';
import { fromV1Pod } from '../../src/kube/pod-spec';

describe('v1.Pod -> PodSpec', () => {
  test('carries what the policy ranks and limits on', () => {
    const k = fromV1Pod({
      metadata: {
        name: 'db',
        namespace: 'prod',
        uid: 'u1',
        resourceVersion: '9',
        annotations: { a: 'b' },
        ownerReferences: [{ kind: 'StatefulSet', name: 'db', controller: true }],
      },
      spec: {
        nodeName: 'n',
        priority: -5,
        terminationGracePeriodSeconds: 45,
        containers: [
          { name: 'main', resources: { requests: { memory: '1Gi', cpu: '500m' }, limits: { memory: '1Gi', cpu: '500m', 'ephemeral-storage': '2G' } } },
        ],
        initContainers: [{ name: 'init', resources: { limits: { memory: 268435456 } } }],
        volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '500Mi' } }, { name: 'shm', emptyDir: { medium: 'Memory' } }, { name: 'cfg' }],
        tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }],
      },
      status: { phase: 'Running', qosClass: 'Guaranteed' },
    })!;
    assert.equal(k.spec.uid, 'u1');
    assert.equal(k.apiUid, 'u1');
    assert.equal(k.spec.priority, -5);
    assert.equal(k.spec.terminationGracePeriodSeconds, 45);
    assert.deepEqual(k.spec.annotations, { a: 'b' });
    assert.equal(k.spec.containers[0].limits['ephemeral-storage']!.value(), 2e9);
    assert.equal(k.spec.initContainers![0].limits.memory!.value(), 268435456);
    assert.equal(k.spec.volumes[0].emptyDir!.sizeLimit!.toString(), '500Mi');
    assert.deepEqual(k.spec.volumes[1], { name: 'shm', emptyDir: { medium: 'Memory' } });
    assert.deepEqual(k.spec.volumes[2], { name: 'cfg' });
    assert.equal(k.spec.tolerations![0].operator, 'Exists');
    assert.equal(k.qosClass, 'Guaranteed');
    assert.deepEqual(k.owner, { kind: 'StatefulSet', name: 'db' });
    assert.equal(k.resourceVersion, '9');
    assert.equal(k.terminating, false);
  });

  test('defaults: no priority is 0, no phase is Pending, QoS computed when status lacks it', () => {
    const k = fromV1Pod({ metadata: { name: 'x', uid: 'u', deletionTimestamp: '2026-01-01T00:00:00Z' }, spec: { containers: [{ name: 'c' }] } })!;
    assert.equal(k.spec.namespace, 'default');
    assert.equal(k.spec.priority, 0);
    assert.equal(k.phase, 'Pending');
    assert.equal(k.qosClass, 'BestEffort');
    assert.equal(k.terminating, true);
    assert.equal(k.spec.terminationGracePeriodSeconds, undefined);
    assert.equal(fromV1Pod({ metadata: { name: 'no-uid' } }), undefined);
  });

  test("a static pod's mirror is keyed by the runtime's uid (config.mirror), not the API's", () => {
    const k = fromV1Pod({
      metadata: {
        name: 'etcd-n',
        namespace: 'kube-system',
        uid: 'api-uid',
        annotations: { 'kubernetes.io/config.mirror': 'hash-uid', 'kubernetes.io/config.source': 'file' },
      },
      spec: { containers: [] },
    })!;
    assert.equal(k.spec.uid, 'hash-uid');
    assert.equal(k.apiUid, 'api-uid');
    assert.equal(k.mirror, true);
  });

  test("the author's kubernetes.io/config.source is dropped: an API pod cannot declare itself static", () => {
    const k = fromV1Pod({
      metadata: { name: 'hog', uid: 'u', annotations: { 'kubernetes.io/config.source': 'file', team: 'a' } },
      spec: { containers: [{ name: 'c' }] },
    })!;
    assert.deepEqual(k.spec.annotations, { team: 'a' });
    assert.equal(isCritical(k.spec), false);
  });

  test('a quantity our parser refuses is reported and left out, not thrown', () => {
    const bad: string[] = [];
    const k = fromV1Pod({ metadata: { name: 'x', uid: 'u' }, spec: { containers: [{ name: 'c', resources: { limits: { memory: '12 parsecs' } } }] } }, (f) =>
      bad.push(f),
    )!;
    assert.deepEqual(k.spec.containers[0].limits, {});
    assert.deepEqual(bad, ['default/x containers[c].resources.limits.memory']);
  });
});
