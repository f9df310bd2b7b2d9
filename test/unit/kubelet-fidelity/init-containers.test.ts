/**
 * Init containers, as the kubelet v1.34/v1.35 counts them:
 * - their requests and limits in the pod's: component-helpers/resource PodRequests / PodLimits
 *   (aggregateContainerResourcesByFn), behind eviction's GetResourceRequestQuantity and
 *   podEphemeralStorageLimitEviction. Sidecars (restartPolicy Always) add to the app containers;
 *   an init container needs its own amount plus the sidecars started before it; the pod takes
 *   the larger. Before sidecars (v1.28) it was max(sum of app containers, largest init container),
 *   which is still the result for a pod without sidecars.
 * - a running one's usage: it is in the summary's pod stats, so rankMemoryPressure (pod memory),
 *   podDiskUsage (containerUsage walks podStats.Containers) and evictionMessage (which looks the
 *   stats up in Spec.Containers then Spec.InitContainers) all see it.
 * - containerEphemeralStorageLimitEviction checks the app containers' own limits only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromV1Pod } from '../../../src/kube/pod-spec';
import { podLimit, podRequest } from '../../../src/policy/pods';
import { Quantity } from '../../../src/policy/quantity';
import type { ContainerSpec, PodSpec } from '../../../src/policy/types';
import { readScenario } from '../../../src/sim/scenario';
import { mem, memPod, names, run } from './helpers';

const c = (name: string, memory: string, extra: Partial<ContainerSpec> = {}): ContainerSpec => ({
  name,
  requests: { memory: Quantity.parse(memory) },
  limits: { 'ephemeral-storage': Quantity.parse(memory) },
  ...extra,
});
const spec = (containers: ContainerSpec[], initContainers: ContainerSpec[]): PodSpec => ({
  namespace: 'default',
  name: 'p',
  uid: 'p',
  priority: 0,
  annotations: {},
  volumes: [],
  containers,
  initContainers,
});
const MI = 2 ** 20;

test('PodRequests / PodLimits: sidecars add up, an init container adds the sidecars before it', () => {
  const sidecar = (name: string, amount: string) => c(name, amount, { restartPolicy: 'Always' });
  const table: [string, PodSpec, number][] = [
    ['no sidecar: max(sum of apps, largest init)', spec([c('a', '100Mi'), c('b', '50Mi')], [c('init', '120Mi'), c('init2', '200Mi')]), 200],
    ['no sidecar: the apps win', spec([c('a', '100Mi'), c('b', '150Mi')], [c('init', '200Mi')]), 250],
    ['a sidecar adds to the apps', spec([c('app', '100Mi')], [sidecar('proxy', '100Mi')]), 200],
    ['an init after a sidecar needs both', spec([c('app', '50Mi')], [sidecar('proxy', '100Mi'), c('migrate', '300Mi')]), 400],
    ['an init before the sidecar needs its own only', spec([c('app', '50Mi')], [c('migrate', '300Mi'), sidecar('proxy', '100Mi')]), 300],
    ['sidecars accumulate', spec([c('app', '10Mi')], [sidecar('s1', '100Mi'), sidecar('s2', '100Mi'), c('late', '150Mi')]), 350],
  ];
  for (const [name, pod, mi] of table) {
    assert.equal(podRequest(pod, 'memory'), mi * MI, `request: ${name}`);
    assert.equal(podLimit(pod, 'ephemeral-storage')?.value(), mi * MI, `limit: ${name}`);
  }
  assert.equal(podLimit(spec([c('app', '1Gi')], [sidecar('proxy', '1Gi')]), 'ephemeral-storage')?.toString(), '2Gi');
  // requests default to limits on init containers too (the API server's SetDefaults_Pod)
  assert.equal(podRequest(spec([], [{ name: 'i', requests: {}, limits: { memory: Quantity.parse('64Mi') } }]), 'memory'), 64 * MI);
});

test('evictd run: an API pod keeps restartPolicy Always on its init containers only', () => {
  const k = fromV1Pod({
    metadata: { name: 'p', uid: 'u' },
    spec: {
      containers: [{ name: 'app', resources: { requests: { memory: '100Mi' } } }],
      initContainers: [
        { name: 'proxy', restartPolicy: 'Always', resources: { requests: { memory: '100Mi' } } },
        { name: 'setup', resources: { requests: { memory: '150Mi' } } },
      ],
    },
  })!;
  assert.equal(k.spec.initContainers![0]!.restartPolicy, 'Always');
  assert.equal(k.spec.initContainers![1]!.restartPolicy, undefined);
  assert.equal(podRequest(k.spec, 'memory'), 250 * MI);
});

test('rankMemoryPressure: a running init container uses pod memory, a sidecar request raises the pod request', () => {
  const node = mem('100Mi');
  const config = { evictionHard: { 'memory.available': '1Gi' } };
  // init-hog: 50Mi in the app, 500Mi in the sidecar, request 110Mi: 440Mi over. app-hog: 200Mi over.
  const initHog = {
    name: 'init-hog',
    containers: [{ name: 'app', requests: { memory: '100Mi' }, usage: { memory: '50Mi' } }],
    initContainers: [{ name: 'proxy', restartPolicy: 'Always', requests: { memory: '10Mi' }, usage: { memory: '500Mi' } }],
  };
  const [a] = run({ config, steps: [{ node, pods: [memPod('app-hog', '300Mi', '100Mi'), initHog] }] });
  assert.deepEqual(names(a!), ['default/init-hog']);
  assert.equal(
    a!.evicted[0]!.message,
    'The node was low on resource: memory. Threshold quantity: 1Gi, available: 100Mi. Container proxy was using 500Mi, request is 10Mi, has larger consumption of memory. ',
  );
  assert.deepEqual(a!.evicted[0]!.annotations, { offending_containers: 'proxy', offending_containers_usage: '500Mi', starved_resource: 'memory' });
  // within: 150Mi + 40Mi used against 100Mi + 100Mi requested; "other" is 20Mi over its request
  const withSidecar = {
    name: 'with-sidecar',
    containers: [{ name: 'app', requests: { memory: '100Mi' }, usage: { memory: '150Mi' } }],
    initContainers: [{ name: 'proxy', restartPolicy: 'Always', requests: { memory: '100Mi' }, usage: { memory: '40Mi' } }],
  };
  const [b] = run({ config, steps: [{ node, pods: [withSidecar, memPod('other', '120Mi', '100Mi')] }] });
  assert.deepEqual(names(b!), ['default/other']);
  // the same pod whose init container is not a sidecar: request max(100Mi, 100Mi), 90Mi over
  const plainInit = { ...withSidecar, name: 'plain-init', initContainers: [{ ...withSidecar.initContainers[0], restartPolicy: undefined }] };
  const [d] = run({ config, steps: [{ node, pods: [plainInit, memPod('other', '120Mi', '100Mi')] }] });
  assert.deepEqual(names(d!), ['default/plain-init']);
});

test("disk: a running init container's layer and logs rank, are named, count in the pod total, but its own limit is not checked", () => {
  const init = { name: 'loader', usage: { rootfs: '5Gi', logs: '1Mi' } };
  const pods = [
    { name: 'small', containers: [{ name: 'app', usage: { rootfs: '1Gi', logs: '0' } }] },
    { name: 'with-init', containers: [{ name: 'app', usage: { rootfs: '10Mi', logs: '0' } }], initContainers: [init] },
  ];
  const [s] = run({
    config: { evictionHard: { 'nodefs.available': '10%' } },
    steps: [{ node: { nodefs: { availableBytes: '1Gi', capacityBytes: '100Gi' } }, pods }],
  });
  assert.deepEqual(names(s!), ['default/with-init']);
  assert.equal(s!.evicted[0]!.signal, 'nodefs.available');
  assert.match(s!.evicted[0]!.message, /Container loader was using 5121Mi, request is 0, has larger consumption of ephemeral-storage\. $/);
  // pod limit 1Gi (app) + 1Gi (sidecar) = 2Gi; 1.5Gi in all is within it, though the sidecar
  // alone is over its own 1Gi: only app containers' own limits are checked
  const sidecarPod = (usage: string) => ({
    name: 'limited',
    containers: [{ name: 'app', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '0', logs: '0' } }],
    initContainers: [{ name: 'proxy', restartPolicy: 'Always', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: usage, logs: '0' } }],
  });
  const limits = (usage: string) => run({ config: { evictionHard: {} }, steps: [{ pods: [sidecarPod(usage)] }] })[0]!.evicted.map((e) => e.message);
  assert.deepEqual(limits('1536Mi'), []);
  assert.deepEqual(limits('2560Mi'), ['Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ']);
});

test("the scenario keeps init containers' usage, and takes restartPolicy Always on them only", () => {
  const read = (pod: Record<string, unknown>) => readScenario({ steps: [{ pods: [{ name: 'p', containers: [{ name: 'app' }], ...pod }] }] }).steps[0]!.pods[0]!;
  const p = read({ initContainers: [{ name: 'done' }, { name: 'proxy', restartPolicy: 'Always', usage: { memory: '1Mi' } }] });
  assert.deepEqual(
    p.usage!.containers.map((u) => [u.name, u.memoryBytes]),
    [
      ['app', undefined],
      ['proxy', MI],
    ],
  );
  assert.equal(p.spec.initContainers![1]!.restartPolicy, 'Always');
  assert.throws(() => read({ initContainers: [{ name: 'i', restartPolicy: 'OnFailure' }] }), /initContainers\[0\]\.restartPolicy: "OnFailure": must be Always/);
  assert.throws(() => read({ containers: [{ name: 'app', restartPolicy: 'Always' }] }), /containers\[0\]\.restartPolicy: "Always": unknown field/);
});
