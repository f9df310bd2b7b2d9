import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { KubeClient } from '../../src/kube/client';
import { type EvictionReport, EvictionReporter, resourceOfSignal } from '../../src/kube/eviction-reporter';
import { FakeApiServer, makePod } from './fake-api-server';
import { FakeClock } from '../support/fake-node';
import { client, MemoryLogger } from './helpers';

const MESSAGE =
  'The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. Container main was using 900Mi, request is 128Mi, has larger consumption of memory. ';

function eviction(name: string, signal = 'memory.available'): EvictionReport {
  return {
    pod: { namespace: 'default', name, uid: `uid-${name}` },
    signal,
    gracePeriodSeconds: 0,
    message: MESSAGE,
    annotations: { offending_containers: 'main', offending_containers_usage: '900Mi', starved_resource: 'memory' },
  };
}

type AnyEvent = {
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  involvedObject: Record<string, string>;
  reason: string;
  message: string;
  type: string;
  source: { component: string; host: string };
  count: number;
};

describe('EvictionReporter against the in-repo fake API server (real HTTP)', () => {
  let api: FakeApiServer;
  let kc: KubeClient;
  let reporter: EvictionReporter;
  let log: MemoryLogger;
  const at = new Date('2026-11-21T18:30:00.123Z');

  beforeEach(async () => {
    api = new FakeApiServer();
    api.token = 'test-token';
    kc = client(await api.start(), 300);
    log = new MemoryLogger();
    reporter = new EvictionReporter({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 10, maxBackoffMs: 50, maxAttempts: 6, now: () => at });
  });

  afterEach(async () => {
    reporter.stop();
    await reporter.drain();
    kc.close();
    await api.stop();
  });

  const events = () => api.events as unknown as AnyEvent[];
  const podEvents = (name: string) => events().filter((e) => e.involvedObject.kind === 'Pod' && e.involvedObject.name === name);
  const nodeEvents = () => events().filter((e) => e.involvedObject.kind === 'Node');

  test('writes what the kubelet writes: Failed/Evicted status with DisruptionTarget, Evicted and EvictionThresholdMet events', async () => {
    api.addPod(makePod('victim'));
    await reporter.report(eviction('victim'));

    const pod = api.pod('default', 'victim')!;
    assert.equal(pod.status?.phase, 'Failed');
    assert.equal(pod.status?.reason, 'Evicted');
    assert.equal(pod.status?.message, MESSAGE);
    assert.deepEqual(pod.status?.conditions, [
      { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: MESSAGE, lastTransitionTime: '2026-11-21T18:30:00Z' },
    ]);
    const patch = api.requests.find((r) => r.method === 'PATCH')!;
    assert.equal(patch.path, '/api/v1/namespaces/default/pods/victim/status');
    assert.equal(patch.contentType, 'application/strategic-merge-patch+json');
    assert.deepEqual((patch.body as { metadata: unknown }).metadata, { uid: 'uid-victim' }, 'uid precondition');

    const [ev] = podEvents('victim');
    assert.equal(ev.reason, 'Evicted');
    assert.equal(ev.type, 'Warning');
    assert.equal(ev.message, MESSAGE);
    assert.deepEqual(ev.metadata.annotations, { offending_containers: 'main', offending_containers_usage: '900Mi', starved_resource: 'memory' });
    assert.deepEqual(ev.involvedObject, { kind: 'Pod', apiVersion: 'v1', namespace: 'default', name: 'victim', uid: 'uid-victim' });
    assert.match(ev.metadata.name, /^victim\.[0-9a-f]+$/);
    assert.equal(ev.metadata.name, `victim.${(BigInt(at.getTime()) * 1_000_000n).toString(16)}`);
    assert.equal(ev.source.host, 'node-a');

    const [nodeEv] = nodeEvents();
    assert.equal(nodeEv.reason, 'EvictionThresholdMet');
    assert.equal(nodeEv.message, 'Attempting to reclaim memory');
    assert.equal(nodeEv.metadata.namespace, 'default');
    assert.deepEqual(nodeEv.involvedObject, { kind: 'Node', apiVersion: 'v1', name: 'node-a', uid: 'node-a' });
    assert.deepEqual(reporter.stats, { reported: 1, statusWrites: 1, eventWrites: 2, retries: 0, failures: 0, skipped: 0, pending: 0 });
  });

  test('maps signals to the resource the kubelet names, and sends no node event for local-storage limits', async () => {
    assert.equal(resourceOfSignal('allocatableMemory.available'), 'memory');
    assert.equal(resourceOfSignal('nodefs.available'), 'ephemeral-storage');
    assert.equal(resourceOfSignal('imagefs.inodesFree'), 'inodes');
    assert.equal(resourceOfSignal('pid.available'), 'pids');
    assert.equal(resourceOfSignal('emptydirfs.limit'), undefined);
    api.addPod(makePod('big-emptydir'));
    await reporter.report(eviction('big-emptydir', 'emptydirfs.limit'));
    assert.equal(podEvents('big-emptydir').length, 1);
    assert.equal(nodeEvents().length, 0);
  });

  test('500s are retried until the write lands, once', async () => {
    api.addPod(makePod('victim'));
    api.faults.push({ match: (r) => r.method === 'PATCH', status: 500, times: 2 });
    api.faults.push({ match: (r) => r.method === 'POST', status: 503, times: 2 });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1);
    assert.equal(podEvents('victim').length, 1);
    assert.equal(nodeEvents().length, 1);
    assert.equal(reporter.stats.retries, 4);
    assert.equal(reporter.stats.failures, 0);
  });

  test('an answer slower than the deadline after the write applied: no second write', async () => {
    api.addPod(makePod('victim'));
    // the server applies each write, then answers after the client gave up (300 ms)
    api.faults.push({ match: (r) => r.method === 'PATCH', delayMs: 600 });
    api.faults.push({ match: (r) => r.method === 'POST', delayMs: 600, times: 2 });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1, 'one status write');
    assert.equal(api.requests.filter((r) => r.method === 'PATCH').length, 1, 'the pod was read back instead of patched again');
    assert.equal(podEvents('victim').length, 1, 'one Evicted event (the retry met 409 AlreadyExists)');
    assert.equal(nodeEvents().length, 1);
    assert.equal(reporter.stats.retries, 2, 'status once, pod event once (its retry met 409 at once)');
  });

  test('a connection reset after the write applied: no second write', async () => {
    api.addPod(makePod('victim'));
    api.faults.push({ match: (r) => r.method === 'PATCH', reset: true, afterApply: true });
    api.faults.push({ match: (r) => r.method === 'POST', reset: true, afterApply: true });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1);
    assert.equal(podEvents('victim').length, 1);
  });

  test('a connection reset before the write: written on retry', async () => {
    api.addPod(makePod('victim'));
    api.faults.push({ match: (r) => r.method === 'PATCH', reset: true });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1);
    assert.equal(api.pod('default', 'victim')!.status?.reason, 'Evicted');
  });

  test('403 that persists: gives up after maxAttempts, logs it, and report() still resolves', async () => {
    api.addPod(makePod('victim'));
    api.faults.push({ match: () => true, status: 403, times: 1000 });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 0);
    assert.equal(reporter.stats.failures, 3, 'status, pod event, node event each abandoned');
    // attempt 1 patches; attempts 2..6 read the pod back first, and that read is refused too
    assert.equal(api.requests.filter((r) => r.method === 'PATCH').length, 1);
    assert.equal(api.requests.filter((r) => r.method === 'GET').length, 5);
    assert.ok(log.has('error', /write abandoned/));
  });

  test('an API outage longer than any attempt count: by default the report is retried for as long as the agent lives, and lands', async () => {
    const patient = new EvictionReporter({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 1, maxBackoffMs: 4, now: () => at });
    api.addPod(makePod('victim'));
    api.faults.push({ match: () => true, status: 503, times: 40 });
    assert.equal(await patient.report(eviction('victim')), 'done');
    assert.equal(api.statusWrites.length, 1);
    assert.equal(patient.stats.failures, 0, 'nothing abandoned');
    assert.ok(patient.stats.retries >= 10, `retried past the old 10-attempt bound (${patient.stats.retries})`);
    patient.stop();
    await patient.drain();
  });

  test('an API outage of 30 minutes (on a stepped clock) with evictions all through it: every status and event written once, each within the backoff ceiling of the API coming back', async () => {
    const clock = new FakeClock();
    const t0 = clock.now();
    const minutes = () => Number(clock.now() - t0) / 60e9;
    const OUTAGE_MIN = 30;
    // The backoff's ceiling (30 s by default), with the +-20% jitter a fleet's retries get.
    const CEILING_MS = 30_000 * 1.2;
    const steppedSleep = (ms: number, signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        const timer = clock.after(ms, resolve);
        signal.addEventListener('abort', () => (timer.cancel(), resolve()), { once: true });
      });
    const patient = new EvictionReporter({
      client: kc,
      nodeName: 'node-a',
      log,
      now: () => new Date(at.getTime() + minutes() * 60_000),
      sleep: steppedSleep,
    });
    // Every request fails while the outage lasts: 503, as an apiserver behind a load balancer.
    api.faults.push({ match: () => minutes() < OUTAGE_MIN, status: 503, times: Infinity });
    const arrivals = [0, 1, 7, 15, 22, 29.5];
    const landed = new Map<string, { outcome: string; minute: number }>();
    const reports: Promise<void>[] = [];
    for (const [i, m] of arrivals.entries()) {
      const name = `victim-${i}`;
      api.addPod(makePod(name));
      clock.after(m * 60_000, () => reports.push(patient.report(eviction(name)).then((outcome) => void landed.set(name, { outcome, minute: minutes() }))));
    }
    // The clock moves to each next wake-up once the real requests of the last one are answered.
    while (landed.size < arrivals.length) {
      assert.ok(minutes() < OUTAGE_MIN + 5, `still not landed 5 min after the outage: ${[...landed.keys()].join(', ')}`);
      await new Promise((r) => setTimeout(r, 1));
      const next = clock.pending()[0];
      if (next !== undefined) await clock.step(next);
    }
    await Promise.all(reports);
    for (const [i] of arrivals.entries()) {
      const name = `victim-${i}`;
      const l = landed.get(name)!;
      assert.equal(l.outcome, 'done', name);
      assert.ok(l.minute >= OUTAGE_MIN && l.minute <= OUTAGE_MIN + CEILING_MS / 60_000 + 0.01, `${name} landed at minute ${l.minute.toFixed(2)}`);
      assert.equal(api.statusWrites.filter((w) => w.name === `default/${name}`).length, 1, `${name}: one status write`);
      assert.equal(api.pod('default', name)?.status?.reason, 'Evicted');
      assert.equal(podEvents(name).filter((e) => e.reason === 'Evicted').length, 1, `${name}: one Evicted event`);
    }
    assert.equal(patient.stats.failures, 0, 'nothing abandoned');
    const waits = log.lines.filter((l) => l.msg === 'kube: write failed; will retry').map((l) => Number((l.obj as { retryInMs?: number }).retryInMs));
    assert.ok(Math.max(...waits) <= CEILING_MS, `the backoff stays at its ceiling: ${Math.max(...waits)} ms`);
    assert.ok(Math.max(...waits) >= 24_000, 'and reaches it');
    assert.ok(patient.stats.retries > 200, `retried all through the outage: ${patient.stats.retries}`);
    patient.stop();
    await patient.drain();
  });

  test('stopped while the API is down: the report ends "interrupted" (its journal entry is kept for the next start), not abandoned', async () => {
    const patient = new EvictionReporter({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 5, maxBackoffMs: 10, now: () => at });
    api.addPod(makePod('victim'));
    api.faults.push({ match: () => true, status: 503, times: 100_000 });
    const end = patient.report(eviction('victim'));
    await new Promise((r) => setTimeout(r, 100));
    patient.stop();
    assert.equal(await end, 'interrupted');
    assert.equal(patient.stats.failures, 0);
    await patient.drain();
  });

  test('403 that is fixed (RBAC applied late) is retried and lands', async () => {
    api.addPod(makePod('victim'));
    api.faults.push({ match: () => true, status: 403, times: 2 });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1);
    assert.equal(reporter.stats.failures, 0);
  });

  test('a pod already gone (404) or replaced under the same name (uid precondition, 409) is not written', async () => {
    await reporter.report(eviction('deleted'));
    api.addPod(makePod('reborn', { uid: 'uid-new-incarnation' }));
    await reporter.report(eviction('reborn'));
    assert.equal(api.statusWrites.length, 0);
    assert.equal(api.pod('default', 'reborn')!.status?.phase, 'Running');
    assert.equal(reporter.stats.skipped, 2);
    assert.equal(reporter.stats.failures, 0);
  });

  test('KEP-5986 ContainerMemoryPressure: set with a Warning event, then cleared, in order under faults; other conditions kept; a replaced pod untouched', async () => {
    api.addPod(makePod('web'));
    await reporter.report(eviction('web')); // a DisruptionTarget already there stays
    const pod = { namespace: 'default', name: 'web', uid: 'uid-web' };
    const message = 'memory.high of container app was raised to memory.max after sustained memory pressure';
    // the set's patch fails twice: the clear, asked for at once, must still land after it
    api.faults.push({ match: (r) => r.method === 'PATCH', status: 503, times: 2 });
    const set = reporter.podCondition({
      pod,
      type: 'ContainerMemoryPressure',
      status: 'True',
      reason: 'MemoryHighRelaxed',
      message,
      event: { reason: 'MemoryHighRelaxed', message },
    });
    const clear = reporter.podCondition({ pod, type: 'ContainerMemoryPressure', status: 'False', reason: 'MemoryPressureSubsided', message: 'subsided' });
    assert.deepEqual(await Promise.all([set, clear]), ['done', 'done']);
    const conditions = api.pod('default', 'web')!.status?.conditions ?? [];
    assert.deepEqual(
      conditions.map((c) => [c.type, c.status, c.reason]),
      [
        ['DisruptionTarget', 'True', 'TerminationByKubelet'],
        ['ContainerMemoryPressure', 'False', 'MemoryPressureSubsided'],
      ],
    );
    const relaxed = podEvents('web').filter((e) => e.reason === 'MemoryHighRelaxed');
    assert.deepEqual(
      relaxed.map((e) => [e.type, e.message]),
      [['Warning', message]],
    );
    const patches = api.requests
      .filter((r) => r.method === 'PATCH')
      .map((r) => (r.body as { status: { conditions: { status: string }[] } }).status.conditions[0]!.status);
    assert.deepEqual(patches.slice(-2), ['True', 'False'], 'the clear after the set');
    // a pod re-created under the name: the uid precondition keeps its status untouched
    api.addPod(makePod('reborn', { uid: 'uid-new-incarnation' }));
    assert.equal(
      await reporter.podCondition({
        pod: { namespace: 'default', name: 'reborn', uid: 'uid-reborn' },
        type: 'ContainerMemoryPressure',
        status: 'True',
        reason: 'MemoryHighRelaxed',
        message,
      }),
      'skipped',
    );
    assert.equal(api.pod('default', 'reborn')!.status?.conditions?.length ?? 0, 0);
  });

  test('the same eviction reported twice is written once', async () => {
    api.addPod(makePod('victim'));
    await Promise.all([reporter.report(eviction('victim')), reporter.report(eviction('victim'))]);
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1);
    assert.equal(podEvents('victim').length, 1);
    assert.equal(reporter.stats.reported, 1);
  });

  test('a report that gave up does not swallow the next eviction of the same pod (restarted in place)', async () => {
    api.addPod(makePod('victim'));
    // The status write is refused for good (a 403 through every attempt): the report gives up,
    // the kubelet restarts the pod in place under the same uid.
    api.faults.push({ match: (r) => r.method === 'PATCH', status: 403, times: 6 });
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 0);
    assert.equal(api.pod('default', 'victim')!.status?.phase, 'Running');
    // Evicted again once the API takes writes: this eviction is written.
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1, 'the second eviction sets the status');
    assert.equal(api.pod('default', 'victim')!.status?.reason, 'Evicted');
    assert.equal(reporter.stats.reported, 2);
    // ...and, written, it stands for any further report of that eviction.
    await reporter.report(eviction('victim'));
    assert.equal(api.statusWrites.length, 1);
    assert.equal(reporter.stats.reported, 2);
  });

  test('a report repeated after a crash (recovered, the same event name) writes nothing twice', async () => {
    api.addPod(makePod('victim'));
    const first = { ...eviction('victim'), at, podEventName: 'victim.18796a2b3c4d5e6f' };
    await reporter.report(first);
    assert.equal(api.statusWrites.length, 1);
    assert.equal(nodeEvents().length, 1);
    // The next process (a new reporter) repeats it from the journal: the status is read back and
    // found written, the event meets 409 under its name, no node event is sent again.
    const next = new EvictionReporter({
      client: kc,
      nodeName: 'node-a',
      log,
      initialBackoffMs: 10,
      maxBackoffMs: 50,
      maxAttempts: 6,
      now: () => new Date(at.getTime() + 60_000),
    });
    await next.report({ ...first, recovered: true });
    assert.equal(api.statusWrites.length, 1, 'no second status write');
    assert.equal(podEvents('victim').length, 1, 'no second Evicted event');
    assert.equal(podEvents('victim')[0]!.metadata.name, 'victim.18796a2b3c4d5e6f');
    assert.equal(nodeEvents().length, 1, 'no second node event');
    assert.equal(next.stats.failures, 0);
    // A report the first process never sent is written in full when repeated.
    api.addPod(makePod('lost'));
    await next.report({ ...eviction('lost'), at, podEventName: 'lost.18796a2b3c4d5e70', recovered: true });
    assert.equal(api.pod('default', 'lost')!.status?.reason, 'Evicted');
    assert.equal(podEvents('lost').length, 1);
  });

  test('EvictionThresholdMet is sent once per resource per window', async () => {
    for (const n of ['a', 'b', 'c']) api.addPod(makePod(n));
    await Promise.all(['a', 'b'].map((n) => reporter.report(eviction(n))));
    await reporter.report(eviction('c', 'nodefs.available'));
    await reporter.thresholdMet('memory.available');
    assert.deepEqual(
      nodeEvents()
        .map((e) => e.message)
        .sort(),
      ['Attempting to reclaim ephemeral-storage', 'Attempting to reclaim memory'],
    );
    const names = events().map((e) => e.metadata.name);
    assert.equal(new Set(names).size, names.length, 'event names never collide');
  });

  test('many evictions under random faults: every pod written exactly once', async () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pods = Array.from({ length: 30 }, (_, i) => `p${i}`);
    for (const n of pods) api.addPod(makePod(n));
    const kinds = [{ status: 500 }, { status: 429 }, { delayMs: 450 }, { reset: true, afterApply: true }, { reset: true }, { status: 403 }];
    for (let i = 0; i < 60; i++) {
      const f = kinds[Math.floor(random() * kinds.length)];
      const method = random() < 0.5 ? 'PATCH' : 'POST';
      api.faults.push({ match: (r) => r.method === method, ...f });
    }
    const many = new EvictionReporter({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 5, maxBackoffMs: 40, maxAttempts: 50 });
    await Promise.all(pods.map((n) => many.report(eviction(n))));
    for (const n of pods) {
      assert.equal(api.statusWrites.filter((w) => w.name === `default/${n}`).length, 1, `${n}: one status write`);
      assert.equal(podEvents(n).length, 1, `${n}: one Evicted event`);
      assert.equal(api.pod('default', n)!.status?.reason, 'Evicted');
    }
    assert.equal(many.stats.failures, 0);
    assert.ok(many.stats.retries > 0);
  });

  test('stop() interrupts pending retries at once; the rest of the report is left to the next start', async () => {
    api.addPod(makePod('victim'));
    api.faults.push({ match: () => true, status: 503, times: 1000 });
    const slow = new EvictionReporter({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 10_000, maxBackoffMs: 10_000 });
    const done = slow.report(eviction('victim'));
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    slow.stop();
    assert.equal(await done, 'interrupted');
    assert.ok(Date.now() - t0 < 1000, 'no 10 s backoff after stop');
    assert.equal(api.requests.length, 1, 'the status attempt only: the events come with the repeated report');
  });

  test('report() never rejects, even with the API server gone', async () => {
    await api.stop();
    const r = new EvictionReporter({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 5, maxBackoffMs: 10, maxAttempts: 3 });
    await r.report(eviction('victim'));
    assert.equal(r.stats.failures, 3);
    api = new FakeApiServer();
    await api.start();
  });
});
