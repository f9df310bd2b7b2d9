/**
 * When a kernel-woken pass (or a standing order's) may decide on the last pod listing instead of a CRI round trip:
 * every pod cgroup it sees belongs to a pod some listing named. A pod that stopped leaves its
 * cgroup behind for a while (the kubelet removes it seconds later): that is no new pod.
 * The runtime here is a fake that counts ListPodSandbox calls; the real one is in the e2e and
 * agent suites.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { AgentMetrics } from '../../src/agent/metrics';
import { PodListing } from '../../src/agent/pod-listing';
import type { PassTrigger } from '../../src/agent/controller';
import type { RuntimePod, RuntimePort } from '../../src/agent/ports';
import type { NodeReading, ObservedPodCgroup } from '../../src/node/observer';

const pod = (uid: string): RuntimePod => ({ sandboxId: `sb-${uid}`, uid, name: uid, namespace: 'ns', labels: {}, annotations: {}, ready: true });
/** Only the pod cgroups matter to the listing. */
const seen = (...uids: string[]): NodeReading => ({ pods: new Map(uids.map((u) => [u, { uid: u } as ObservedPodCgroup])) }) as NodeReading;
const kernel: PassTrigger = { sources: { 'memcg-threshold': 1 }, firstEventNs: 1n, firstNotifiedNs: 1n };
const housekeeping: PassTrigger = { sources: { housekeeping: 1 }, firstEventNs: null, firstNotifiedNs: 1n };

/** A listing on this runtime, nothing else of the node. */
function listingOn(runtime: RuntimePort): PodListing {
  return new PodListing({
    runtime,
    logger: pino({ level: 'silent' }),
    metrics: new AgentMetrics(),
    memoryMount: '/nonexistent',
    podCgroupRoot: '/kubepods',
    podRootMemoryDir: '/nonexistent/kubepods',
  });
}

function listing(ready: () => RuntimePod[]) {
  const calls = { n: 0 };
  const runtime = {
    listPods: () => {
      calls.n++;
      return Promise.resolve(ready());
    },
  } as unknown as RuntimePort;
  const l = listingOn(runtime);
  return { l, calls };
}

test('an evicted pod whose cgroup lingers: the next kernel-woken pass still decides on the cached listing', async () => {
  let ready = [pod('web'), pod('hog-1')];
  const { l, calls } = listing(() => ready);
  assert.deepEqual(
    (await l.forPass(seen('web', 'hog-1'), housekeeping)).map((p) => p.uid),
    ['web', 'hog-1'],
  );
  // hog-1 evicted: its sandbox is no longer ready, its cgroup is still there; hog-2 started and was listed.
  ready = [pod('web'), pod('hog-2')];
  await l.list();
  const before = calls.n;
  const pods = await l.forPass(seen('web', 'hog-1', 'hog-2'), kernel);
  assert.equal(l.usedCache, true, 'hog-1 was listed before: its lingering cgroup is no new pod');
  assert.deepEqual(
    pods.map((p) => p.uid),
    ['web', 'hog-2'],
    'the stopped pod is not a candidate',
  );
  await new Promise((r) => setImmediate(r));
  assert.equal(calls.n, before + 1, 'one refresh, in the background');
});

test('a pod cgroup no listing has named: the pass waits for a fresh listing; housekeeping always does', async () => {
  let ready = [pod('web')];
  const { l, calls } = listing(() => ready);
  await l.forPass(seen('web'), housekeeping);
  ready = [pod('web'), pod('new')];
  const pods = await l.forPass(seen('web', 'new'), kernel);
  assert.equal(l.usedCache, false);
  assert.deepEqual(
    pods.map((p) => p.uid),
    ['web', 'new'],
  );
  const n = calls.n;
  await l.forPass(seen('web', 'new'), housekeeping);
  assert.equal(l.usedCache, false);
  assert.equal(calls.n, n + 1);
});

test('a pod is forgotten once neither a cgroup nor the last listing names it (the set stays as small as the node)', async () => {
  let ready = [pod('web'), pod('old')];
  const { l } = listing(() => ready);
  await l.forPass(seen('web', 'old'), housekeeping);
  ready = [pod('web')];
  await l.forPass(seen('web'), housekeeping); // the listing that drops it
  await l.forPass(seen('web'), housekeeping); // the pass after: no cgroup, not listed
  // Were a cgroup of that uid to appear again, nothing would vouch for it any more.
  await l.forPass(seen('web', 'old'), kernel);
  assert.equal(l.usedCache, false);
});

test("a standing order's refresh pass decides on the cached listing and does not wait on a slow runtime; housekeeping does", async () => {
  // containerd short of memory itself: a listing takes as long as the pass's 1 s deadline. A
  // refresh pass (at half the order's 1 s TTL) that waited on it would end past the TTL.
  let slow = false;
  let calls = 0;
  let answered = 0;
  const runtime = {
    listPods: () => {
      calls++;
      const done = () => (answered++, [pod('web'), pod('hog')]);
      return slow ? new Promise<RuntimePod[]>((resolve) => setTimeout(() => resolve(done()), 300)) : Promise.resolve(done());
    },
  } as unknown as RuntimePort;
  const l = listingOn(runtime);
  await l.forPass(seen('web', 'hog'), housekeeping);
  slow = true;
  const refresh: PassTrigger = { sources: { 'standing-order': 1 }, firstEventNs: null, firstNotifiedNs: 1n };
  const pods = await l.forPass(seen('web', 'hog'), refresh);
  assert.equal(l.usedCache, true, 'the cached listing');
  assert.deepEqual(
    pods.map((p) => p.uid),
    ['web', 'hog'],
  );
  assert.equal(answered, 1, 'decided before the slow listing answered');
  assert.equal(calls, 2, 'which runs in the background');
  // A refresh that sees a pod cgroup no listing has named waits, as any pass does.
  await l.forPass(seen('web', 'hog', 'new'), refresh);
  assert.equal(l.usedCache, false);
  await l.forPass(seen('web', 'hog'), housekeeping);
  assert.equal(l.usedCache, false, 'housekeeping lists fresh');
});

test('the runtime down: a kernel-woken pass decides on the last listing at once, without waiting out another listing', async () => {
  let answer: () => Promise<RuntimePod[]> = () => Promise.resolve([pod('web'), pod('hog')]);
  const runtime = { listPods: () => answer() } as unknown as RuntimePort;
  const l = listingOn(runtime);
  await l.forPass(seen('web', 'hog'), housekeeping);
  // containerd stops answering: a housekeeping pass finds out (its listing fails) ...
  answer = () => Promise.reject(new Error('UNAVAILABLE'));
  await l.forPass(seen('web', 'hog'), housekeeping);
  assert.equal(l.runtimeOk, false);
  // ... then its calls hang until their deadline: a kernel-woken pass does not wait for one.
  let hung = 0;
  answer = () => {
    hung++;
    return new Promise<RuntimePod[]>(() => undefined);
  };
  const pods = await l.forPass(seen('web', 'hog'), kernel);
  assert.deepEqual(
    pods.map((p) => p.uid),
    ['web', 'hog'],
  );
  assert.equal(l.usedCache, true);
  assert.equal(hung, 1, 'a listing goes on in the background');
  // A pod cgroup no listing named still waits for the runtime (here: for ever, so not awaited).
  let settled = false;
  void l.forPass(seen('web', 'hog', 'new'), kernel).then(() => (settled = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, false);
});
