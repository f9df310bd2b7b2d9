/**
 * The policy, pass by pass, on scenarios: each case states a kubelet behaviour and the outcome
 * the kubelet's rules give (worked out by hand from the rules, not by running this code).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readScenario } from '../../src/sim/scenario';
import { simulate, type StepResult } from '../../src/sim/run';

const run = (doc: unknown): StepResult[] => [...simulate(readScenario(doc))];
const mem = (available: string, workingSet = '4Gi') => ({ memory: { availableBytes: available, workingSetBytes: workingSet } });
const memPod = (name: string, usage: string, request?: string, extra: Record<string, unknown> = {}) => ({
  name,
  containers: [{ name: 'app', ...(request ? { requests: { memory: request } } : {}), usage: { memory: usage } }],
  ...extra,
});
const names = (s: StepResult) => s.evicted.map((e) => e.pod);

test('hard memory threshold: immediate eviction of the pod most over its request', () => {
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      { at: '0s', node: mem('900Mi'), pods: [memPod('big-within', '3Gi', '4Gi'), memPod('small-over', '200Mi', '100Mi'), memPod('best-effort', '50Mi')] },
    ],
  });
  assert.deepEqual(s.conditions, ['MemoryPressure']);
  assert.deepEqual(
    s.thresholdsMet,
    [
      { signal: 'allocatableMemory.available', kind: 'hard', quantity: '1Gi', gracePeriodMet: true },
      { signal: 'memory.available', kind: 'hard', quantity: '1Gi', gracePeriodMet: true },
    ].filter((t) => t.signal === 'memory.available'),
  ); // allocatable is not observed in this step
  // usage over request ranks first; among those over, the larger excess (best-effort: 50Mi over 0) loses to 100Mi over
  assert.deepEqual(names(s), ['default/small-over']);
  const e = s.evicted[0];
  assert.equal(e.signal, 'memory.available');
  assert.equal(e.gracePeriodSeconds, 0);
  assert.equal(
    e.message,
    'The node was low on resource: memory. Threshold quantity: 1Gi, available: 900Mi. Container app was using 200Mi, request is 100Mi, has larger consumption of memory. ',
  );
  assert.deepEqual(e.annotations, { offending_containers: 'app', offending_containers_usage: '200Mi', starved_resource: 'memory' });
});

test('memory ranking: over-request first, then lower priority, then larger usage above request', () => {
  const step = (pods: unknown[]) => run({ config: { evictionHard: { 'memory.available': '1Gi' } }, steps: [{ at: '0s', node: mem('500Mi'), pods }] })[0];
  assert.deepEqual(names(step([memPod('hi', '900Mi', '100Mi', { priority: 100 }), memPod('lo', '150Mi', '100Mi', { priority: 0 })])), ['default/lo']);
  assert.deepEqual(names(step([memPod('a', '150Mi', '100Mi'), memPod('b', '300Mi', '100Mi')])), ['default/b']);
  // nobody over request: priority decides before usage
  assert.deepEqual(names(step([memPod('a', '90Mi', '100Mi', { priority: 5 }), memPod('b', '10Mi', '100Mi', { priority: 1 })])), ['default/b']);
  // requests default to limits: a pod with only a limit is not over it
  const limited = { name: 'limited', containers: [{ name: 'app', limits: { memory: '1Gi' }, usage: { memory: '600Mi' } }] };
  assert.deepEqual(names(step([limited, memPod('over', '20Mi', '10Mi')])), ['default/over']);
});

test('a message lists every container over its request, and a missing request prints 0', () => {
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        at: '0s',
        node: mem('1000Mi'),
        pods: [
          {
            name: 'p',
            containers: [
              { name: 'a', usage: { memory: '1536Mi' } },
              { name: 'b', requests: { memory: '1G' }, usage: { memory: '10Mi' } },
              { name: 'c', requests: { memory: '100Mi' }, usage: { memory: '1500' } },
            ],
          },
        ],
      },
    ],
  });
  assert.equal(
    s.evicted[0].message,
    'The node was low on resource: memory. Threshold quantity: 1Gi, available: 1000Mi. Container a was using 1536Mi, request is 0, has larger consumption of memory. ',
  );
  assert.equal(s.evicted[0].annotations.offending_containers_usage, '1536Mi');
});

test('soft threshold: waits for its grace period, then evicts with min(max pod grace period, terminationGracePeriodSeconds)', () => {
  const pod = memPod('web', '300Mi', '100Mi', { terminationGracePeriodSeconds: 3 });
  const steps = run({
    config: {
      evictionSoft: { 'memory.available': '2Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
      evictionMaxPodGracePeriod: 10,
      evictionHard: { 'nodefs.available': '1%' },
    },
    steps: [
      { at: '0s', node: mem('1Gi'), pods: [pod] },
      { at: '59s', node: mem('1Gi'), pods: [pod] },
      { at: '60s', node: mem('1Gi'), pods: [pod] },
    ],
  });
  assert.deepEqual(
    steps.map((s) => s.thresholdsMet[0]?.gracePeriodMet),
    [false, false, true],
  );
  assert.deepEqual(
    steps.map((s) => s.conditions),
    [['MemoryPressure'], ['MemoryPressure'], ['MemoryPressure']],
  );
  assert.deepEqual(steps.map(names), [[], [], ['default/web']]);
  assert.equal(steps[2].evicted[0].gracePeriodSeconds, 3);
  assert.equal(steps[2].at, '1m0s');
});

test("soft eviction grace: the max pod grace period caps the pod's own; no max means 0", () => {
  const grace = (max: number | undefined, tgps: number) =>
    run({
      config: {
        evictionSoft: { 'memory.available': '2Gi' },
        evictionSoftGracePeriod: { 'memory.available': '0s' },
        ...(max === undefined ? {} : { evictionMaxPodGracePeriod: max }),
      },
      steps: [{ at: '0s', node: mem('1Gi'), pods: [memPod('p', '1Gi', '1Mi', { terminationGracePeriodSeconds: tgps })] }],
    })[0].evicted[0].gracePeriodSeconds;
  assert.equal(grace(5, 30), 0); // a 0s grace period makes the threshold behave as hard (kubelet's isHardEvictionThreshold)
  const soft = (max: number | undefined, tgps: number | undefined) =>
    run({
      config: {
        evictionSoft: { 'memory.available': '2Gi' },
        evictionSoftGracePeriod: { 'memory.available': '1s' },
        ...(max === undefined ? {} : { evictionMaxPodGracePeriod: max }),
      },
      steps: [
        { at: '0s', node: mem('1Gi'), pods: [] },
        { at: '1s', node: mem('1Gi'), pods: [memPod('p', '1Gi', '1Mi', tgps === undefined ? {} : { terminationGracePeriodSeconds: tgps })] },
      ],
    })[1].evicted[0].gracePeriodSeconds;
  assert.equal(soft(5, 30), 5);
  assert.equal(soft(60, 30), 30);
  assert.equal(soft(undefined, 30), 0);
  // No grace period of its own: the API server's default, 30, applies (kubelet v1.34+ takes
  // min(max, terminationGracePeriodSeconds), and a pod always has the latter).
  assert.equal(soft(60, undefined), 30);
  assert.equal(soft(20, undefined), 20);
});

test('a soft threshold that clears before its grace period restarts the clock', () => {
  const pod = memPod('p', '1Gi', '1Mi');
  const steps = run({
    config: { evictionSoft: { 'memory.available': '2Gi' }, evictionSoftGracePeriod: { 'memory.available': '30s' } },
    steps: [
      { at: '0s', node: mem('1Gi'), pods: [pod] },
      { at: '20s', node: mem('3Gi'), pods: [pod] },
      { at: '40s', node: mem('1Gi'), pods: [pod] },
      { at: '60s', node: mem('1Gi'), pods: [pod] },
      { at: '70s', node: mem('1Gi'), pods: [pod] },
    ],
  });
  assert.deepEqual(
    steps.map((s) => s.evicted.length),
    [0, 0, 0, 0, 1],
  );
});

test('minimum reclaim keeps a threshold met until available exceeds threshold + minimum reclaim', () => {
  const pod = memPod('p', '1Gi', '1Mi');
  const steps = run({
    config: { evictionHard: { 'memory.available': '1Gi' }, evictionMinimumReclaim: { 'memory.available': '500Mi' } },
    steps: [
      { at: '0s', node: mem('900Mi'), pods: [pod] },
      { at: '10s', node: mem('1200Mi'), pods: [pod] }, // above 1Gi but below 1Gi+500Mi: still met
      { at: '20s', node: mem('1600Mi'), pods: [pod] }, // above 1524Mi: resolved
      { at: '30s', node: mem('1200Mi'), pods: [pod] }, // not met again until it drops below 1Gi
    ],
  });
  assert.deepEqual(
    steps.map((s) => s.thresholdsMet.map((t) => t.signal)),
    [['memory.available'], ['memory.available'], [], []],
  );
  assert.deepEqual(
    steps.map((s) => s.evicted.length),
    [1, 1, 0, 0],
  );
});

test('node conditions hold for the pressure transition period after the threshold was last seen met', () => {
  const steps = run({
    config: { evictionHard: { 'memory.available': '1Gi' }, evictionPressureTransitionPeriod: '30s' },
    steps: [
      { at: '0s', node: mem('900Mi') },
      { at: '10s', node: mem('2Gi') },
      { at: '29s', node: mem('2Gi') },
      { at: '30s', node: mem('2Gi') },
    ],
  });
  assert.deepEqual(
    steps.map((s) => s.conditions),
    [['MemoryPressure'], ['MemoryPressure'], ['MemoryPressure'], []],
  );
});

test('critical pods (static, mirror, system-critical priority) are never evicted; the next candidate goes', () => {
  const big = (name: string, extra: Record<string, unknown>) => memPod(name, '3Gi', '1Mi', extra);
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        at: '0s',
        node: mem('100Mi'),
        pods: [
          big('static', { annotations: { 'kubernetes.io/config.source': 'file' } }),
          big('mirror', { annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
          big('system', { priority: 2000000000 }),
          big('api', { annotations: { 'kubernetes.io/config.source': 'api' }, priority: 1999999999 }),
        ],
      },
    ],
  });
  assert.deepEqual(names(s), ['default/api']);
  const [only] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [{ at: '0s', node: mem('100Mi'), pods: [big('static', { annotations: { 'kubernetes.io/config.source': 'file' } })] }],
  });
  assert.deepEqual(names(only), []);
});

test('allocatable memory: a hard memory threshold also guards the pods cgroup', () => {
  const [s] = run({
    config: { evictionHard: { 'memory.available': '500Mi' } },
    steps: [
      {
        at: '0s',
        node: { memory: { availableBytes: '8Gi', workingSetBytes: '8Gi' }, allocatableMemory: { availableBytes: '400Mi', workingSetBytes: '4Gi' } },
        pods: [memPod('p', '1Gi', '1Mi')],
      },
    ],
  });
  assert.deepEqual(
    s.thresholdsMet.map((t) => `${t.signal}/${t.kind}/${t.quantity}`),
    ['allocatableMemory.available/hard/500Mi'],
  );
  assert.equal(s.evicted[0].signal, 'allocatableMemory.available');
  assert.match(s.evicted[0].message, /Threshold quantity: 500Mi, available: 400Mi\. /);
});

test('PID pressure: lower priority first, then more processes', () => {
  const p = (name: string, priority: number, processes: number) => ({ name, priority, processes, containers: [{ name: 'c' }] });
  const [s] = run({
    config: { evictionHard: { 'pid.available': '10%' } },
    steps: [{ at: '0s', node: { pid: { maxPID: 1000, running: 950 } }, pods: [p('hi-prio-many', 10, 500), p('few', 0, 10), p('many', 0, 300)] }],
  });
  assert.deepEqual(s.conditions, ['PIDPressure']);
  assert.deepEqual(names(s), ['default/many']);
  // 10% of 1000 through float32 is 100; available 50 (decimal SI); pids name no containers
  assert.equal(s.evicted[0].message, 'The node was low on resource: pids. Threshold quantity: 100, available: 50. ');
  assert.deepEqual(s.evicted[0].annotations, { offending_containers: '', offending_containers_usage: '', starved_resource: 'pids' });
});

const diskPod = (name: string, rootfs: string, logs: string, volume?: string, extra: Record<string, unknown> = {}) => ({
  name,
  containers: [{ name: 'c', usage: { rootfs, logs, inodes: 10 } }],
  volumes: volume ? [{ name: 'v', emptyDir: {}, usage: volume }] : [],
  ...extra,
});
const nodefs = (available: string) => ({ nodefs: { availableBytes: available, capacityBytes: '20Gi', inodesFree: 90000, inodes: 100000 } });

test('single filesystem: node reclaim runs first; if it frees enough, nobody is evicted', () => {
  const steps = run({
    config: { evictionHard: { 'nodefs.available': '1Gi' } },
    steps: [
      { at: '0s', node: nodefs('500Mi'), pods: [diskPod('a', '1Gi', '0')], afterReclaim: nodefs('3Gi') },
      { at: '10s', node: nodefs('500Mi'), pods: [diskPod('a', '1Gi', '0')] },
    ],
  });
  assert.deepEqual(steps[0].nodeReclaim, ['deleteUnusedContainers', 'deleteUnusedImages']);
  assert.deepEqual(steps[0].evicted, []);
  assert.deepEqual(steps[0].conditions, ['DiskPressure']);
  assert.deepEqual(steps[1].nodeReclaim, ['deleteUnusedContainers', 'deleteUnusedImages']);
  assert.deepEqual(names(steps[1]), ['default/a']);
});

test('reclaim that frees less than the minimum reclaim does not spare the pods', () => {
  const [s] = run({
    config: { evictionHard: { 'nodefs.available': '1Gi' }, evictionMinimumReclaim: { 'nodefs.available': '2Gi' } },
    steps: [{ at: '0s', node: nodefs('500Mi'), pods: [diskPod('a', '1Gi', '0')], afterReclaim: nodefs('2Gi') }],
  });
  assert.deepEqual(names(s), ['default/a']);
});

test('single filesystem disk ranking counts writable layer, logs and volumes; message and percent quantity as the kubelet prints them', () => {
  const [s] = run({
    config: { evictionHard: { 'nodefs.available': '10%' } },
    steps: [{ at: '0s', node: nodefs('1Gi'), pods: [diskPod('layers', '300Mi', '10Mi'), diskPod('volume', '10Mi', '10Mi', '500Mi')] }],
  });
  assert.deepEqual(names(s), ['default/volume']);
  // 10% is float32(10)/100; times 20Gi and truncated: 2147483680 bytes, not a whole number of Ki
  assert.equal(
    s.evicted[0].message,
    'The node was low on resource: ephemeral-storage. Threshold quantity: 2147483680, available: 1Gi. Container c was using 20Mi, request is 0, has larger consumption of ephemeral-storage. ',
  );
});

test('inode pressure: observed counts print in decimal SI, and no containers are named', () => {
  const [s] = run({
    config: { evictionHard: { 'nodefs.inodesFree': '5%' } },
    steps: [
      { at: '0s', node: { nodefs: { availableBytes: '10Gi', capacityBytes: '20Gi', inodesFree: 1000, inodes: 100000 } }, pods: [diskPod('a', '1Mi', '1Mi')] },
    ],
  });
  assert.equal(s.evicted[0].message, 'The node was low on resource: inodes. Threshold quantity: 5000, available: 1k. ');
  assert.equal(s.evicted[0].annotations.starved_resource, 'inodes');
});

test('dedicated imagefs: nodefs pressure reclaims nothing and ranks by logs and volumes; imagefs pressure collects and ranks by writable layer', () => {
  const pods = [diskPod('layer', '5Gi', '1Mi'), diskPod('logs', '1Mi', '2Gi')];
  const [n] = run({
    config: { evictionHard: { 'nodefs.available': '1Gi' } },
    filesystems: 'dedicated-imagefs',
    steps: [{ at: '0s', node: nodefs('500Mi'), pods }],
  });
  assert.deepEqual(n.nodeReclaim, []);
  assert.deepEqual(names(n), ['default/logs']);
  const [i] = run({
    config: { evictionHard: { 'imagefs.available': '1Gi' } },
    filesystems: 'dedicated-imagefs',
    steps: [{ at: '0s', node: { imagefs: { availableBytes: '500Mi', capacityBytes: '50Gi' } }, pods }],
  });
  assert.deepEqual(i.nodeReclaim, ['deleteUnusedContainers', 'deleteUnusedImages']);
  assert.deepEqual(names(i), ['default/layer']);
});

test('split filesystems: imagefs collects images only, nodefs collects containers only; containerfs follows nodefs thresholds', () => {
  const pods = [diskPod('a', '2Gi', '1Mi')];
  const [i] = run({
    config: { evictionHard: { 'imagefs.available': '1Gi' } },
    filesystems: 'split',
    steps: [{ at: '0s', node: { imagefs: { availableBytes: '500Mi', capacityBytes: '50Gi' } }, pods }],
  });
  assert.deepEqual(i.nodeReclaim, ['deleteUnusedImages']);
  const [n] = run({ config: { evictionHard: { 'nodefs.available': '1Gi' } }, filesystems: 'split', steps: [{ at: '0s', node: nodefs('500Mi'), pods }] });
  assert.deepEqual(n.nodeReclaim, ['deleteUnusedContainers']);
  const [c] = run({
    config: { evictionHard: { 'nodefs.available': '1Gi' } },
    filesystems: 'split',
    steps: [{ at: '0s', node: { ...nodefs('5Gi'), containerfs: { availableBytes: '500Mi', capacityBytes: '20Gi' } }, pods }],
  });
  assert.deepEqual(
    c.thresholdsMet.map((t) => `${t.signal}<${t.quantity}`),
    ['containerfs.available<1Gi'],
  );
  assert.deepEqual(names(c), ['default/a']);
});

test('local storage limits: emptyDir sizeLimit, pod and container ephemeral limits; several pods at once, grace 0, kubelet strings', () => {
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi' } },
    steps: [
      {
        at: '0s',
        node: mem('100Mi'),
        pods: [
          { name: 'scratch', containers: [{ name: 'c' }], volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '1Gi' }, usage: '2Gi' }] },
          {
            name: 'pod-limit',
            containers: [
              { name: 'a', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '600Mi', logs: '0' } },
              { name: 'b', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '600Mi', logs: '0' } },
            ],
            volumes: [{ name: 'v', emptyDir: {}, usage: '900Mi' }],
          },
          // the pod as a whole is within its 1124Mi, one container is not
          {
            name: 'ctr-limit',
            containers: [
              { name: 'c', limits: { 'ephemeral-storage': '100Mi' }, usage: { rootfs: '90Mi', logs: '20Mi' } },
              { name: 'd', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '0', logs: '0' } },
            ],
          },
          { name: 'fine', containers: [{ name: 'c', limits: { 'ephemeral-storage': '1Gi' }, usage: { rootfs: '1Mi', logs: '1Mi' } }] },
        ],
      },
    ],
  });
  assert.deepEqual(
    s.evicted.map((e) => [e.pod, e.signal, e.gracePeriodSeconds]),
    [
      ['default/scratch', 'emptydirfs.limit', 0],
      ['default/pod-limit', 'ephemeralpodfs.limit', 0],
      ['default/ctr-limit', 'ephemeralcontainerfs.limit', 0],
    ],
  );
  assert.equal(s.evicted[0].message, 'Usage of EmptyDir volume "tmp" exceeds the limit "1Gi". ');
  assert.equal(s.evicted[1].message, 'Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ');
  assert.equal(s.evicted[2].message, 'Container c exceeded its local ephemeral storage limit "100Mi". ');
  // the memory threshold is met, but local-storage evictions take the pass
  assert.deepEqual(s.conditions, ['MemoryPressure']);
});

test('container ephemeral limit counts only logs when the writable layer is on a dedicated image filesystem', () => {
  const doc = (filesystems: string) => ({
    config: { evictionHard: { 'memory.available': '1Mi' } },
    filesystems,
    steps: [
      {
        at: '0s',
        pods: [
          {
            name: 'p',
            containers: [
              { name: 'c', limits: { 'ephemeral-storage': '100Mi' }, usage: { rootfs: '90Mi', logs: '20Mi' } },
              { name: 'd', limits: { 'ephemeral-storage': '1Gi' } },
            ],
          },
        ],
      },
    ],
  });
  assert.equal(run(doc('single'))[0].evicted.length, 1);
  assert.equal(run(doc('dedicated-imagefs'))[0].evicted.length, 0);
});

test('admission: BestEffort refused under MemoryPressure only; everything but critical refused under other pressure', () => {
  const admitting = (node: unknown) =>
    run({
      config: { evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '1Gi' } },
      steps: [
        {
          at: '0s',
          node,
          admit: [
            { name: 'be', containers: [{ name: 'c' }] },
            { name: 'burst', containers: [{ name: 'c', requests: { memory: '1Mi' } }] },
            {
              name: 'be-tolerates',
              containers: [{ name: 'c' }],
              tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }],
            },
            { name: 'static', containers: [{ name: 'c' }], annotations: { 'kubernetes.io/config.source': 'file' } },
          ],
        },
      ],
    })[0].admission;
  assert.deepEqual(admitting(mem('500Mi')), [
    { pod: 'default/be', admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' },
    { pod: 'default/burst', admit: true },
    { pod: 'default/be-tolerates', admit: true },
    { pod: 'default/static', admit: true },
  ]);
  const both = admitting({ ...mem('500Mi'), ...nodefs('500Mi') });
  assert.deepEqual(
    both.map((a) => a.admit),
    [false, false, false, true],
  );
  assert.equal(both[1].message, 'The node had condition: [DiskPressure MemoryPressure]. ');
  assert.deepEqual(
    admitting(mem('5Gi')).map((a) => a.admit),
    [true, true, true, true],
  );
});

test('thresholdsMet is sorted by signal then kind and shows the configured quantity', () => {
  const [s] = run({
    config: {
      evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10%' },
      evictionSoft: { 'memory.available': '1.5Gi', 'nodefs.available': '15%' },
      evictionSoftGracePeriod: { 'memory.available': '1m', 'nodefs.available': '1m' },
      enforceNodeAllocatable: ['none'],
    },
    steps: [{ at: '0s', node: { ...mem('100Mi'), ...nodefs('100Mi') } }],
  });
  assert.deepEqual(
    s.thresholdsMet.map((t) => `${t.signal} ${t.kind} ${t.quantity} ${t.gracePeriodMet}`),
    ['memory.available hard 1Gi true', 'memory.available soft 1.5Gi false', 'nodefs.available hard 10% true', 'nodefs.available soft 15% false'],
  );
  assert.deepEqual(s.conditions, ['DiskPressure', 'MemoryPressure']);
  // memory is reclaimed before disk, so no node-level reclaim runs
  assert.deepEqual(s.nodeReclaim, []);
});
