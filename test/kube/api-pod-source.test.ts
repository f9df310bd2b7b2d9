import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { ApiPodSource } from '../../src/kube/api-pod-source';
import type { KubeClient } from '../../src/kube/client';
import { FakeApiServer, makePod } from './fake-api-server';
import { client, MemoryLogger } from './helpers';
import { waitFor } from '../support/wait';

describe('ApiPodSource against the in-repo fake API server (real HTTP and watch streams)', () => {
  let api: FakeApiServer;
  let kc: KubeClient;
  let source: ApiPodSource;
  let log: MemoryLogger;

  beforeEach(async () => {
    api = new FakeApiServer();
    api.token = 'test-token';
    kc = client(await api.start(), 500);
    log = new MemoryLogger();
  });

  afterEach(async () => {
    await source?.stopped();
    kc.close();
    await api.stop();
  });

  function startSource(extra: Partial<ConstructorParameters<typeof ApiPodSource>[0]> = {}): Promise<void> {
    source = new ApiPodSource({ client: kc, nodeName: 'node-a', log, initialBackoffMs: 20, maxBackoffMs: 100, ...extra });
    return source.start();
  }

  const watchRequests = () => api.requests.filter((r) => r.path === '/api/v1/pods' && r.query.get('watch') === 'true');
  const listRequests = () => api.requests.filter((r) => r.path === '/api/v1/pods' && r.query.get('watch') !== 'true');

  test('lists only the pods bound to this node, with their specs', async () => {
    api.addPod(makePod('web', { priority: 1000, memRequest: '128Mi', memLimit: '256Mi' }));
    api.addPod(makePod('elsewhere', { node: 'node-b' }));
    await startSource();
    assert.equal(source.healthy, true);
    assert.deepEqual(
      source.list().map((p) => p.name),
      ['web'],
    );
    const web = source.get('uid-web')!;
    assert.equal(web.priority, 1000);
    assert.equal(web.terminationGracePeriodSeconds, 30);
    assert.equal(web.containers[0].requests.memory!.value(), 128 * 1024 * 1024);
    assert.equal(web.containers[0].limits.memory!.toString(), '256Mi');
    const first = listRequests()[0];
    assert.equal(first.query.get('fieldSelector'), 'spec.nodeName=node-a');
    assert.equal(first.query.get('resourceVersion'), '0', 'first list is served from the watch cache');
    assert.equal(first.auth, 'Bearer test-token');
  });

  test('follows adds, updates and deletes through the watch', async () => {
    await startSource();
    await waitFor('watch open', () => api.openWatches === 1);
    api.addPod(makePod('a'));
    await waitFor('a added', () => source.get('uid-a') !== undefined);
    api.updatePod('default', 'a', (p) => (p.spec.priority = 7));
    await waitFor('a updated', () => source.get('uid-a')?.priority === 7);
    api.updatePod('default', 'a', (p) => (p.status = { phase: 'Failed' }));
    await waitFor('a terminal', () => source.list().length === 0);
    assert.ok(source.get('uid-a'), 'a terminal pod stays readable by uid');
    api.deletePod('default', 'a');
    await waitFor('a deleted', () => source.get('uid-a') === undefined);
    const w = watchRequests()[0];
    assert.equal(w.query.get('allowWatchBookmarks'), 'true');
    assert.equal(w.query.get('resourceVersion'), '100');
  });

  test("a pod claiming to mirror another API pod (config.mirror = its uid) never takes that pod's place, listed or watched", async () => {
    const forger = (name: string) => makePod(name, { priority: 2_000_000_000, annotations: { 'kubernetes.io/config.mirror': 'uid-victim' } });
    // In the list, the forger after the pod it claims...
    api.addPod(makePod('victim', { priority: 3 }));
    api.addPod(forger('forger-listed'));
    await startSource();
    assert.equal(source.get('uid-victim')?.name, 'victim');
    // ...and through the watch, added after it, then deleted.
    await waitFor('watch open', () => api.openWatches === 1);
    api.addPod(forger('forger-watched'));
    api.addPod(makePod('marker'));
    await waitFor('the watch caught up', () => source.get('uid-marker') !== undefined);
    assert.equal(source.get('uid-victim')?.name, 'victim');
    assert.equal(source.get('uid-victim')?.priority, 3);
    api.deletePod('default', 'forger-watched');
    api.addPod(makePod('marker2'));
    await waitFor('the watch caught up', () => source.get('uid-marker2') !== undefined);
    assert.equal(source.get('uid-victim')?.name, 'victim', "the forger's delete does not remove the pod it claimed");
    assert.ok(log.lines.some((l) => /claims to mirror another API pod/.test(l.msg)));
  });

  test('a dropped watch resumes from the last resourceVersion: nothing lost, nothing replayed', async () => {
    api.addPod(makePod('a'));
    await startSource();
    await waitFor('watch open', () => api.openWatches === 1);
    api.addPod(makePod('b'));
    await waitFor('b', () => source.get('uid-b') !== undefined);
    const rvAfterB = api.resourceVersion;
    api.faults.push({ match: (r) => r.query.get('watch') === 'true', status: 503, times: 1 });
    api.dropWatches();
    // changes while no watch is open
    api.addPod(makePod('c'));
    api.deletePod('default', 'a');
    await waitFor('c after reconnect', () => source.get('uid-c') !== undefined && source.get('uid-a') === undefined);
    assert.equal(listRequests().length, 1, 'no re-list for a dropped watch');
    const rewatches = watchRequests().slice(1);
    assert.ok(
      rewatches.every((r) => r.query.get('resourceVersion') === rvAfterB),
      'every re-watch resumes from the last version seen',
    );
    assert.deepEqual(
      source
        .list()
        .map((p) => p.name)
        .sort(),
      ['b', 'c'],
    );
    assert.equal(source.healthy, true);
  });

  test('a watch the server ends normally is reopened from where it stopped', async () => {
    await startSource();
    await waitFor('watch open', () => api.openWatches === 1);
    api.addPod(makePod('a'));
    await waitFor('a', () => source.get('uid-a') !== undefined);
    api.bookmark();
    const rv = api.resourceVersion;
    await waitFor('bookmark seen', () => source.stats.watchEvents === 2);
    api.endWatches();
    await waitFor('second watch', () => watchRequests().length === 2 && api.openWatches === 1);
    assert.equal(watchRequests()[1].query.get('resourceVersion'), rv);
    assert.equal(source.stats.failures, 0);
  });

  test('410 Gone on re-watch: re-lists with a consistent read, and the list replaces the cache', async () => {
    api.addPod(makePod('keep'));
    api.addPod(makePod('gone'));
    await startSource();
    await waitFor('watch open', () => api.openWatches === 1);
    api.faults.push({ match: (r) => r.query.get('watch') === 'true', status: 503 }); // the first retry fails, so a compaction can happen in the gap
    api.dropWatches();
    api.deletePod('default', 'gone');
    api.addPod(makePod('new'));
    api.compact();
    await waitFor('re-listed', () => source.stats.relistsAfterGone === 1 && source.get('uid-new') !== undefined);
    assert.equal(source.get('uid-gone'), undefined);
    assert.deepEqual(
      source
        .list()
        .map((p) => p.name)
        .sort(),
      ['keep', 'new'],
    );
    const relist = listRequests()[1];
    assert.equal(relist.query.get('resourceVersion'), null, 'after 410 the re-list must not be served from a possibly older cache');
    await waitFor('watch again', () => api.openWatches === 1);
  });

  test('410 as an ERROR event inside the watch stream also re-lists', async () => {
    api.addPod(makePod('a'));
    api.faults.push({ match: (r) => r.query.get('watch') === 'true', watchErrorCode: 410 });
    await startSource();
    await waitFor('re-listed', () => source.stats.relistsAfterGone === 1 && listRequests().length === 2);
    await waitFor('watch open', () => api.openWatches === 1);
    api.addPod(makePod('b'));
    await waitFor('b', () => source.get('uid-b') !== undefined);
    assert.equal(source.get('uid-a')?.name, 'a');
  });

  test('403 on list: start() still resolves, unhealthy and logged, then recovers when access is granted', async () => {
    api.addPod(makePod('a'));
    api.faults.push({ match: (r) => r.path === '/api/v1/pods', status: 403, times: 3 });
    const healthFlips: boolean[] = [];
    await startSource();
    source.on('health', (ok: boolean) => healthFlips.push(ok));
    assert.equal(source.healthy, false);
    assert.equal(source.list().length, 0);
    assert.ok(log.has('warn', /pod list failed/));
    await waitFor('recovered', () => source.healthy && source.get('uid-a') !== undefined);
    assert.deepEqual(healthFlips, [true]);
    assert.equal(source.stats.failures, 3);
  });

  test('a slow API server (answer after the client deadline) is retried; the cache then fills', async () => {
    api.addPod(makePod('a'));
    api.faults.push({ match: (r) => r.path === '/api/v1/pods' && r.query.get('watch') !== 'true', delayMs: 800 });
    await startSource();
    assert.equal(source.healthy, false);
    assert.match(source.stats.lastError ?? '', /no answer within 500 ms/);
    await waitFor('listed', () => source.get('uid-a') !== undefined);
  });

  test('repeated 500s on the watch mark the source unhealthy; the cache keeps serving', async () => {
    api.addPod(makePod('a'));
    await startSource();
    await waitFor('watch open', () => api.openWatches === 1);
    api.faults.push({ match: (r) => r.query.get('watch') === 'true', status: 500, times: 4 });
    api.dropWatches();
    await waitFor('unhealthy', () => !source.healthy);
    assert.equal(source.get('uid-a')?.name, 'a', 'stale but served');
    await waitFor('healthy again', () => source.healthy && api.openWatches === 1);
    api.addPod(makePod('b'));
    await waitFor('b', () => source.get('uid-b') !== undefined);
  });

  test('a silent watch (no bytes, no bookmark) is abandoned after the idle timeout and reopened', async () => {
    await startSource({ idleTimeoutMs: 150 });
    await waitFor('watch open', () => api.openWatches === 1);
    await waitFor('reopened', () => watchRequests().length >= 2, 2000);
    assert.equal(listRequests().length, 1);
  });

  test('stop() during a slow first list: start() still resolves', async () => {
    api.faults.push({ match: (r) => r.path === '/api/v1/pods', delayMs: 300 });
    const started = startSource();
    await waitFor('list sent', () => api.requests.length === 1);
    source.stop();
    await started;
    assert.equal(source.healthy, false);
  });

  test('stop() ends the loop and closes the watch', async () => {
    await startSource();
    await waitFor('watch open', () => api.openWatches === 1);
    await source.stopped();
    await waitFor('watch closed', () => api.openWatches === 0);
    const n = api.requests.length;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(api.requests.length, n, 'no request after stop');
  });
});
