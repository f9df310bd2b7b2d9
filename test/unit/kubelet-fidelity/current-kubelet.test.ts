/**
 * What the kubelet changed since the older tables: huge pages out of memory.available
 * (HugepageAwareEviction, v1.37), pod-level resources in ranking, messages and QoS (PodLevelResources,
 * v1.34+), a resized pod ranked by its spec, swap ignored, the pod overhead in the request.
 * Each test names the upstream function it follows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readScenario } from '../../../src/sim/scenario';
import { makeObservations } from '../../../src/policy/thresholds';
import { podRequest, qosClass } from '../../../src/policy/pods';
import { compileConfig, configFromFlags, configFromKubeletConfiguration } from '../../../src/policy/config';
import { mem, memPod, names, run } from './helpers';

const Gi = 2 ** 30;

/** memory.available as the eviction manager observes it from a scenario's first step. */
function observed(doc: Record<string, unknown>) {
  const [step] = readScenario({ ...doc, steps: [{ node: mem('10Gi', '50Gi') }] }).steps;
  return makeObservations(step!.node)['memory.available']!;
}

// pkg/kubelet/server/stats/summary.go adjustForHugePages (kubernetes PR #138127, v1.37; its unit
// test TestAdjustForHugePages): every hugepages-<size> capacity of the node, summed, comes out of
// the node's available memory, floored at 0; the working set stays, so capacity shrinks with it.
test('adjustForHugePages: the node capacity of every page size comes out of memory.available, floored at 0', () => {
  assert.deepEqual(observed({ capacity: { 'hugepages-1Gi': '4Gi' } }), { available: 6 * Gi, capacity: 56 * Gi });
  assert.deepEqual(observed({ capacity: { 'hugepages-1Gi': '2Gi', 'hugepages-2Mi': '1Gi' } }), { available: 7 * Gi, capacity: 57 * Gi });
  assert.deepEqual(observed({ capacity: { 'hugepages-1Gi': '12Gi' } }), { available: 0, capacity: 50 * Gi });
  assert.deepEqual(observed({}), { available: 10 * Gi, capacity: 60 * Gi });
  // only the node's numbers: the pods cgroup's (allocatableMemory.available) are the summary's own
  const [step] = readScenario({
    capacity: { 'hugepages-1Gi': '4Gi' },
    steps: [{ node: { allocatableMemory: { availableBytes: '10Gi', workingSetBytes: '50Gi' } } }],
  }).steps;
  assert.deepEqual(makeObservations(step!.node)['allocatableMemory.available'], { available: 10 * Gi, capacity: 60 * Gi });
});

test('adjustForHugePages: a threshold is met on the adjusted number, a percentage of the smaller capacity', () => {
  const doc = (capacity: Record<string, string>) => ({
    config: { evictionHard: { 'memory.available': '11%' } },
    capacity,
    steps: [{ node: mem('10Gi', '50Gi'), pods: [memPod('hog', '40Gi')] }],
  });
  // without huge pages: 10Gi available of 60Gi, 11% is 6.6Gi: not met
  assert.deepEqual(names(run(doc({}))[0]!), []);
  // 4Gi of huge pages: 6Gi available of 56Gi, 11% (a float32, as the kubelet keeps it) is
  // 6614249600 bytes: met, and the message says so
  const [step] = run(doc({ 'hugepages-1Gi': '4Gi' }));
  assert.deepEqual(names(step!), ['default/hog']);
  assert.match(step!.evicted[0]!.message, /Threshold quantity: 6614249600, available: 6Gi\. /);
});

// The gate, as the kubelet's featureGates: off, memory.available is cAdvisor's again.
test('HugepageAwareEviction off: huge pages stay in memory.available', () => {
  assert.deepEqual(observed({ config: { featureGates: { HugepageAwareEviction: false } }, capacity: { 'hugepages-1Gi': '4Gi' } }), {
    available: 10 * Gi,
    capacity: 60 * Gi,
  });
});

test('capacity: only hugepages-<page size> is read; anything else is refused, naming it', () => {
  assert.throws(() => readScenario({ capacity: { memory: '64Gi' }, steps: [] }), /^UsageError: capacity\.memory: "64Gi": unknown resource/);
  assert.throws(() => readScenario({ capacity: { 'hugepages-x': '1Gi' }, steps: [] }), /capacity\["hugepages-x"\]|capacity\.hugepages-x/);
  assert.throws(() => readScenario({ capacity: { 'hugepages-2Mi': '-2Mi' }, steps: [] }), /must not be negative/);
});

const withPodLevel = (name: string, resources: Record<string, unknown>, containers: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  name,
  resources,
  containers,
  ...extra,
});

// pkg/api/v1/resource GetResourceRequestQuantity (v1.34+): with pod-level resources set,
// PodRequests(SkipContainerLevelResources) reads the pod level alone; helpers.go
// exceedMemoryRequests and memory() rank by it.
test('GetResourceRequestQuantity: pod-level requests replace the containers in memory ranking', () => {
  const scenario = {
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        node: mem('512Mi'),
        pods: [
          // containers ask 200Mi, the pod 2Gi: at 1Gi it is within its request
          withPodLevel('pod-level', { requests: { memory: '2Gi' } }, [
            { name: 'a', requests: { memory: '100Mi' }, usage: { memory: '600Mi' } },
            { name: 'b', requests: { memory: '100Mi' }, usage: { memory: '424Mi' } },
          ]),
          memPod('no-request', '500Mi'),
        ],
      },
    ],
  };
  assert.deepEqual(names(run(scenario)[0]!), ['default/no-request']);
});

test('GetResourceRequestQuantity: pod-level cpu alone makes the memory request 0 (container requests skipped)', () => {
  const pod = readScenario({
    steps: [{ pods: [withPodLevel('p', { requests: { cpu: '1' } }, [{ name: 'a', requests: { memory: '2Gi', cpu: '500m' } }])] }],
  }).steps[0]!.pods[0]!.spec;
  assert.equal(podRequest(pod, 'memory'), 0);
  assert.equal(podRequest(pod, 'cpu'), 1);
  // ephemeral-storage has no pod level: with pod-level resources set it is 0 too
  const disk = readScenario({
    steps: [{ pods: [withPodLevel('p', { limits: { memory: '1Gi' } }, [{ name: 'a', requests: { 'ephemeral-storage': '1Gi' } }])] }],
  }).steps[0]!.pods[0]!.spec;
  assert.equal(podRequest(disk, 'ephemeral-storage'), 0);
});

// pkg/apis/core/v1 defaultPodRequests: a pod-level limit without a request defaults the request
// to the containers' effective request when they give one, else to the limit.
test('defaultPodRequests: a pod-level limit alone defaults the pod-level request', () => {
  const spec = (containers: Record<string, unknown>[]) =>
    readScenario({ steps: [{ pods: [withPodLevel('p', { limits: { memory: '2Gi' } }, containers)] }] }).steps[0]!.pods[0]!.spec;
  assert.equal(podRequest(spec([{ name: 'a' }]), 'memory'), 2 * Gi);
  assert.equal(
    podRequest(
      spec([
        { name: 'a', requests: { memory: '300Mi' } },
        { name: 'b', limits: { memory: '200Mi' } },
      ]),
      'memory',
    ),
    500 * 2 ** 20,
  );
});

// GetResourceRequestQuantity: the pod overhead is added to a non-zero request, never to 0.
test('GetResourceRequestQuantity: spec.overhead is added to a non-zero request only', () => {
  const spec = (containers: Record<string, unknown>[]) =>
    readScenario({ steps: [{ pods: [{ name: 'p', overhead: { memory: '256Mi' }, containers }] }] }).steps[0]!.pods[0]!.spec;
  assert.equal(podRequest(spec([{ name: 'a', requests: { memory: '1Gi' } }]), 'memory'), 1.25 * Gi);
  assert.equal(podRequest(spec([{ name: 'a' }]), 'memory'), 0);
});

// helpers.go evictionMessage (v1.34+): a pod-level memory request puts "Pod NAME was using USAGE,
// request is REQUEST, has larger consumption of memory. " before the container lines, whether or
// not the pod is over it, with offending_pod and offending_pod_usage; containers are tested
// against their own (absent: 0) requests as before.
test('evictionMessage: the pod line of a pod-level memory request, then the containers', () => {
  const [step] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [{ node: mem('512Mi'), pods: [withPodLevel('web', { requests: { memory: '4Gi' } }, [{ name: 'app', usage: { memory: '1536Mi' } }])] }],
  });
  const e = step!.evicted[0]!;
  assert.equal(
    e.message,
    'The node was low on resource: memory. Threshold quantity: 1Gi, available: 512Mi. ' +
      'Pod web was using 1536Mi, request is 4Gi, has larger consumption of memory. ' +
      'Container app was using 1536Mi, request is 0, has larger consumption of memory. ',
  );
  assert.deepEqual(e.annotations, {
    offending_pod: 'web',
    offending_pod_usage: '1536Mi',
    offending_containers: 'app',
    offending_containers_usage: '1536Mi',
    starved_resource: 'memory',
  });
});

// qos.go ComputePodQOS with PodLevelResources: spec.resources alone decides the class.
test('ComputePodQOS: pod-level resources decide the QoS class, and with it admission under MemoryPressure', () => {
  const spec = (resources: Record<string, unknown>, containers: Record<string, unknown>[] = [{ name: 'a' }]) =>
    readScenario({ steps: [{ pods: [withPodLevel('p', resources, containers)] }] }).steps[0]!.pods[0]!.spec;
  const guaranteed = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } };
  assert.equal(qosClass(spec(guaranteed)), 'Guaranteed');
  assert.equal(qosClass(spec({ limits: { cpu: '1', memory: '1Gi' } })), 'Guaranteed'); // requests default to the limits
  assert.equal(
    qosClass(spec({ requests: { cpu: '1' } }, [{ name: 'a', requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }])),
    'Burstable',
  );
  assert.equal(qosClass(spec({})), 'BestEffort');
  const [step] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [{ node: mem('512Mi'), admit: [withPodLevel('g', guaranteed, [{ name: 'a' }]), { name: 'be', containers: [{ name: 'a' }] }] }],
  });
  assert.deepEqual(
    step!.admission.map((a) => [a.pod, a.admit]),
    [
      ['default/g', true],
      ['default/be', false],
    ],
  );
});

// A resized pod (status.containerStatuses[].allocatedResources differ from the spec): the
// eviction manager passes no UseStatusResources to PodRequests and evictionMessage reads the spec
// (helpers.go v1.34+; the allocatedResources branch of v1.27 to v1.32 is gone), so the spec ranks.
test('a resized pod ranks and is worded by its spec, not its allocated resources', () => {
  const [step] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        node: mem('512Mi'),
        pods: [
          { name: 'resized', containers: [{ name: 'app', requests: { memory: '2Gi' }, allocatedResources: { memory: '256Mi' }, usage: { memory: '1Gi' } }] },
          memPod('over', '600Mi', '512Mi'),
        ],
      },
    ],
  });
  assert.deepEqual(names(step!), ['default/over']);
  assert.throws(
    () => readScenario({ steps: [{ pods: [{ name: 'p', containers: [{ name: 'a', allocatedResources: { memory: 'x' } }] }] }] }),
    /allocatedResources\.memory: "x"/,
  );
});

// Swap (NodeSwap, GA in v1.34): no eviction signal or ranking reads SwapStats (helpers.go has no
// swap term; the swap-aware PR #129578 was closed, issue #120800 is open): the same decisions.
test('swap: the summary swap stats change no decision', () => {
  const base = {
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [{ node: mem('512Mi'), pods: [memPod('a', '700Mi'), memPod('b', '600Mi')] }],
  };
  const swapped = {
    ...base,
    steps: [
      {
        node: { ...mem('512Mi'), swap: { swapAvailableBytes: '0', swapUsageBytes: '8Gi' } },
        pods: [memPod('a', '700Mi'), { name: 'b', containers: [{ name: 'app', usage: { memory: '600Mi', swap: '6Gi' } }] }],
      },
    ],
  };
  assert.deepEqual(run(swapped), run(base));
  assert.throws(
    () => readScenario({ steps: [{ node: { swap: { swapUsageBytes: '-1' } } }] }),
    /steps\[0\]\.node\.swap\.swapUsageBytes: "-1": must not be negative/,
  );
});

// component-base featuregate Set (the kubelet's --feature-gates): "Gate=value" pairs, each value a
// Go bool (strconv.ParseBool); the flag's gates go over the file's featureGates one by one.
test('--feature-gates: Go bools, gate by gate over the file', () => {
  const file = configFromKubeletConfiguration({ featureGates: { HugepageAwareEviction: false, Other: true } });
  assert.equal(compileConfig(file).hugepageAwareEviction, false);
  assert.equal(compileConfig({}).hugepageAwareEviction, true);
  for (const [text, on] of [
    ['T', true],
    ['1', true],
    ['TRUE', true],
    ['f', false],
    ['False', false],
  ] as const) {
    const cfg = configFromFlags({ featureGates: `HugepageAwareEviction=${text}` }, file);
    assert.equal(compileConfig(cfg).hugepageAwareEviction, on, text);
    assert.equal(cfg.featureGates!.Other, true);
  }
  assert.throws(
    () => configFromFlags({ featureGates: 'HugepageAwareEviction=yes' }),
    /--feature-gates\["HugepageAwareEviction"\]: "yes": invalid value, must be a boolean/,
  );
  assert.throws(
    () => configFromKubeletConfiguration({ featureGates: { HugepageAwareEviction: 'false' } }),
    /featureGates\.HugepageAwareEviction: "false": must be true or false/,
  );
});
