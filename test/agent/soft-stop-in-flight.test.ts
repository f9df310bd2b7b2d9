/**
 * A soft eviction's graceful stop runs for its whole grace period beside the loop: /healthz
 * stays 200 all along (the liveness probe would otherwise restart evictd in the middle of it),
 * and a hard ramp that starts meanwhile is killed at once, not after the stop. The grace period
 * (25 s, from evictionMaxPodGracePeriod) is longer than /healthz's staleness bound (3 housekeeping
 * intervals + 5 s: 14 s at the 3 s interval used here), so a pass that waited for the stop would
 * turn it stale well before the stop ends: the same shape as the shipped 60 s against the 35 s
 * bound at the kubelet's 10 s interval, in less time.
 *
 * The slow pod: a hog holding memory above the soft line, and a shell that ignores SIGTERM, so
 * its stop lasts until the runtime's SIGKILL at the end of the grace period. Its 90 s terminationGracePeriodSeconds comes from the (fake) API
 * server, as a pod's spec does; the eviction caps it at evictionMaxPodGracePeriod.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped, slow } from '../support/environment';
import { waitFor } from '../support/wait';
import { startMetricsServer, type MetricsServer } from '../../src/agent/http-server';
import { createKubeParts, type KubeParts } from '../../src/kube/setup';
import type { NodeLab } from '../../src/lab/node-lab';
import { FakeApiServer, makePod, writeKubeconfig } from '../kube/fake-api-server';
import { MiB, healthz, hog, logTail, missingE2e, newLab, releaseHarness, sleeper, startAgent, stopAgents, type TestAgent } from './agent-harness';

const GRACE_S = 25;
const HOUSEKEEPING_MS = 3000;

const labs: NodeLab[] = [];
const agents: TestAgent[] = [];
let api: FakeApiServer | null = null;
let parts: KubeParts | null = null;
let server: MetricsServer | null = null;
let tmp: string | null = null;
after(async () => {
  await server?.close().catch(() => undefined);
  // each agent's recording replayed as it stops; a difference fails the file once all is torn down
  const replayed = await stopAgents(agents).then(
    () => null,
    (e: Error) => e,
  );
  parts?.source.stop();
  parts?.close();
  await api?.stop();
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  if (replayed) throw replayed;
});

test(`a soft eviction with a ${GRACE_S} s grace period keeps /healthz at 200 throughout, and a hard ramp beside it is killed at once`, async (t) => {
  if (skipped(t, missingE2e())) return;
  const lab = await newLab('soft-in-flight', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const slowPod = await lab.runPod({
    name: 'slow',
    namespace: 'shop',
    qos: 'BestEffort',
    containers: [hog(400, 340), { ...sleeper('stubborn'), command: ['/bin/sh', '-c', "trap '' TERM; while true; do sleep 1; done"] }],
  });
  await waitFor('the slow pod to hold its memory', () => lab.podLog(slowPod, 'hog').some((l) => / 340$/.test(l)), 10_000);

  api = new FakeApiServer();
  const url = await api.start();
  const spec = makePod('slow', { namespace: 'shop', uid: slowPod.uid });
  spec.spec!.terminationGracePeriodSeconds = 90;
  api.addPod(spec);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-soft-'));
  parts = createKubeParts({ kubeconfig: writeKubeconfig(path.join(tmp, 'kubeconfig'), url), nodeName: 'node-a', podSource: 'api' });
  await parts.source.start();
  await waitFor('the pod source to know the slow pod', () => parts!.source.get(slowPod.uid), 10_000);

  // The soft line at 200 Mi free (312 MiB in use), met for 5 s; the hard one at 64 Mi free. A
  // pass blocked on the stop would turn /healthz stale after 3 x 3 s + 5 s = 14 s.
  const a = await startAgent(lab, {
    flags: {
      evictionSoft: 'memory.available<200Mi',
      evictionSoftGracePeriod: 'memory.available=5s',
      evictionMaxPodGracePeriod: String(GRACE_S),
      evictionHard: 'memory.available<64Mi',
    },
    pods: parts.source,
    housekeepingIntervalMs: HOUSEKEEPING_MS,
  });
  agents.push(a);
  server = await startMetricsServer({ host: '127.0.0.1', port: 0 }, a.metrics.registry, { live: () => a.agent.liveness(), ready: () => a.agent.health() });
  const port = Number(server.address.split(':').pop());

  // A stop in the background has no record until it ends: its start is the log's.
  const began = () =>
    fs
      .readFileSync(a.logFile, 'utf8')
      .split('\n')
      .flatMap((l) =>
        l.includes('graceful stop running in the background')
          ? [JSON.parse(l) as { uid: string; gracePeriodSeconds: number; threshold: { kind: string } }]
          : [],
      )
      .find((l) => l.uid === slowPod.uid);
  const soft = await waitFor('the soft eviction to begin', began, 30_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  assert.equal(soft.threshold.kind, 'soft');
  assert.equal(soft.gracePeriodSeconds, GRACE_S, "the pod's 90 s capped at evictionMaxPodGracePeriod");
  const softBegan = Date.now();

  // /healthz every half second until the stop ends.
  const probes: { ms: number; status: number }[] = [];
  let stopDone = false;
  const probing = (async () => {
    while (!stopDone) {
      probes.push({ ms: Date.now() - softBegan, status: await healthz(port) });
      await new Promise((r) => setTimeout(r, 500));
    }
  })();

  // The hard ramp, while the slow pod's stop is in flight.
  const ramp = await lab.runPod({ name: 'ramp', namespace: 'shop', qos: 'BestEffort', containers: [hog(200, 480)] });
  api.addPod(makePod('ramp', { namespace: 'shop', uid: ramp.uid }));
  const hard = await waitFor('the hard ramp killed', () => a.evictions.find((e) => e.pod.uid === ramp.uid && e.ok), 30_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${logTail(a.logFile)}`);
  });
  const softDoneEarly = a.evictions.some((e) => e.pod.uid === slowPod.uid);
  assert.equal(softDoneEarly, false, 'the hard kill came while the soft stop was still in flight');
  assert.equal(hard.threshold?.kind, 'hard');
  assert.ok(hard.action === 'fast-kill' || hard.action === 'standing-order', `a hard threshold kills at once (action ${hard.action})`);
  // From the notification (or the order's own wake-up) to the kill: what a pass costs, not a stop.
  const from = BigInt(hard.at.event ?? hard.at.notified);
  const reactionMs = Number(BigInt(hard.at.killSent!) - from) / 1e6;
  t.diagnostic(
    `hard ramp: ${hard.action}, notification -> kill ${reactionMs.toFixed(2)} ms, ${((Date.now() - softBegan) / 1000).toFixed(1)} s into the soft stop`,
  );
  assert.ok(reactionMs < slow(1000), `the hard kill ${reactionMs} ms after its notification`);

  const done = await waitFor('the soft stop to end', () => a.evictions.find((e) => e.pod.uid === slowPod.uid), GRACE_S * 1500 + 30_000);
  stopDone = true;
  await probing;
  const lastedS = (Date.now() - softBegan) / 1000;
  t.diagnostic(`soft stop: ${lastedS.toFixed(1)} s, ${probes.length} probes, ${probes.filter((p) => p.status !== 200).length} not 200`);
  assert.equal(done.ok, true, done.error ?? done.note ?? 'the soft stop failed');
  assert.ok(lastedS >= GRACE_S - 5, `the stubborn container held the stop for its grace period (${lastedS} s)`);
  const bad = probes.filter((p) => p.status !== 200);
  assert.deepEqual(bad, [], `/healthz not 200 during the stop: ${JSON.stringify(bad.slice(0, 5))}`);
  assert.equal(await lab.sandboxReady(slowPod), false);
});
