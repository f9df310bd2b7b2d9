import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { skipped, slow } from '../support/environment';
import { NodeLab } from '../../src/lab/node-lab';
import { AgentProcess, runRamp } from '../../src/lab/ramp-lab';
import { lockedFileMappings } from '../../src/kernel/memory-lock';
import { MiB, criClient, missingE2e, newLab, releaseHarness, sleeper } from './agent-harness';

const labs: NodeLab[] = [];
const procs: AgentProcess[] = [];
after(async () => {
  for (const p of procs) await p.stop().catch(() => undefined);
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
});

const get = (url: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      })
      .on('error', reject);
  });

const post = (url: string, body: unknown) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });

test('evictd run as users run it: a ramp is evicted before the OOM killer; /metrics, /healthz, /admit; SIGTERM exits 0', async (t) => {
  if (skipped(t, missingE2e())) return;
  const { endpoint } = await criClient();
  const lab = await newLab('process', { memoryLimitBytes: 384 * MiB });
  labs.push(lab);
  const kept = await lab.runPod({ name: 'kept', namespace: 'demo', qos: 'Guaranteed', containers: [sleeper('app', 32 * MiB)] });
  // --record as a user records a node: the admission answers land in it too (checked at the end).
  const recording = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-run-process-')), 'node.jsonl');
  const agent = await AgentProcess.start({
    lab,
    endpoint,
    evictionHard: 'memory.available<64Mi',
    extraArgs: ['--admission-address', '127.0.0.1:0', '--record', recording],
    startTimeoutMs: slow(15_000),
  });
  // No API access (--pod-source runtime): the kubelet's release is unknown, so huge pages stay in
  // memory.available (HugepageAwareEviction off), and the start says so.
  const gate = agent.lines.find((l) => l.gate === 'HugepageAwareEviction');
  assert.deepEqual([gate?.on, gate?.source], [false, 'release-unknown'], JSON.stringify(gate));
  procs.push(agent);
  const machineOom0 = NodeLab.oomKills();
  assert.ok(agent.metricsAddress, 'the starting line names the metrics address');
  // Its code is locked in RAM (--lock-memory, on by default): every file it maps.
  const code = lockedFileMappings(agent.child.pid!);
  assert.ok(code && code.files > 0 && code.locked === code.files, JSON.stringify(code));
  // Once its first pass is done it gives back the code pages its start touched, and keeps the
  // lock on what it runs afterwards.
  const shed = await agent.waitFor((l) => l.msg === 'code pages of the start given back (MADV_PAGEOUT)', slow(15_000));
  const resident = shed.residentCodeMiB as { before: number; after: number };
  assert.ok(resident.after < resident.before, JSON.stringify(resident));
  const relocked = lockedFileMappings(agent.child.pid!);
  assert.ok(relocked && relocked.locked === relocked.files, JSON.stringify(relocked));
  const r = await runRamp(lab, agent, { name: 'hog', rateMiBs: 500, targetMiB: 448 });
  assert.equal(r.outcome, 'evicted', JSON.stringify({ ...r, labPod: undefined }));
  assert.equal(r.oomKills, 0);
  // The hog's own count reads 0 once its cgroup is gone: the machine-wide count (/proc/vmstat
  // oom_kill) is what shows the kernel never killed anything during the ramp.
  assert.equal(NodeLab.oomKills() - machineOom0, 0, 'no kernel OOM kill on the machine');
  // The node's line or the pod cgroup root's, whichever the ramp crossed first (a standing order
  // acts at that crossing; their inactive_file differ, so either may come first).
  assert.match(r.signal ?? '', /^(memory|allocatableMemory)\.available$/);
  assert.ok(r.reactionMs !== undefined && r.reactionMs > 0);
  assert.equal(await lab.sandboxReady(kept), true);
  const metrics = await get(`http://${agent.metricsAddress}/metrics`);
  assert.equal(metrics.status, 200);
  assert.match(metrics.body, new RegExp(`evictd_evictions_total\\{signal="${r.signal}"\\} 1`));
  // A kernel notification woke the loop: the line's own, or its standing order's use. Both come
  // from the same crossing, and when the order acts there the line's own wake-up may not have
  // reached the loop by the time the eviction is reported (seen in the lab on main, 1 run in 3).
  assert.match(metrics.body, /evictd_notifications_total\{source="(memcg-threshold|standing-order-used)"\} \d+/);
  // A standing order's kill is timed from the crossing; a pass's decision from the kernel event
  // that woke it. A pass an order's own timer woke at the crossing (a CI run on this host: it
  // decided before the order's thread had killed, whose use then was the duplicate) answers no
  // event, and says so: its eviction has no event stamp.
  if (r.action === 'standing-order') assert.match(metrics.body, /evictd_standing_order_crossed_to_killed_seconds_count\{signal="[a-zA-Z.]+"\} 1/);
  else if (r.eventReactionMs !== undefined) assert.match(metrics.body, /evictd_event_to_decision_seconds_count\{source="[a-z-]+"\} 1/);
  else assert.match(metrics.body, /evictd_notifications_total\{source="standing-order"\} [1-9]/, 'a pass with no event was woken by an order timer');
  assert.match(metrics.body, /evictd_notifications_mode\{mode="native"\} 1/);
  // Each memory line's mechanism, said once at start and exposed as a gauge: the kernel's own
  // where the platform has one (memcg v1 thresholds; the eBPF tripwire on pure cgroup v2).
  const said = agent.lines.filter((l) => typeof l.line === 'string' && typeof l.mechanism === 'string' && String(l.msg).startsWith('memory line '));
  assert.ok(said.length >= 2, `a start line per memory line (node, pods): ${JSON.stringify(said)}`);
  const expected = lab.layout.memoryVersion === 1 ? 'memcg-threshold-eventfd' : 'bpf-tripwire';
  for (const l of said) {
    assert.equal(l.mechanism, expected, `line ${String(l.line)}`);
    assert.match(metrics.body, new RegExp(`^evictd_memory_line_mechanism\\{line="${String(l.line)}",mechanism="${expected}"\\} 1$`, 'm'));
  }
  const health = await get(`http://${agent.metricsAddress}/healthz`);
  assert.equal(
    health.status,
    200,
    `${health.body}\n${agent.lines
      .filter((l) => Number(l.level) >= 40)
      .map((l) => JSON.stringify(l))
      .join('\n')}`,
  );
  const starting = agent.lines.find((l) => l.msg === 'evictd starting')!;
  assert.equal(starting.cgroupRoot, lab.root);
  assert.ok(['v1', 'v2', 'hybrid'].includes(String(starting.cgroups)));
  const evicted = agent.lines.find((l) => l.msg === 'evicted pod')!;
  for (const k of ['threshold', 'observation', 'reasons', 'signal', 'pod']) assert.ok(k in evicted, `the eviction log line has ${k}`);
  // Admission under the condition the eviction left (MemoryPressure, held for the transition
  // period): a BestEffort pod is refused, a Burstable one admitted.
  const admission = agent.lines.find((l) => l.msg === 'admission endpoint: POST /admit')!;
  const pod = (name: string, resources: object) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'demo', uid: `u-${name}` },
    spec: { containers: [{ name: 'c', resources }] },
  });
  const be = await post(`http://${String(admission.address)}/admit`, pod('be', {}));
  assert.equal(be.status, 200, be.body);
  assert.equal(JSON.parse(be.body).admit, false, be.body);
  const bu = await post(`http://${String(admission.address)}/admit`, pod('bu', { requests: { memory: '10Mi' } }));
  assert.equal(JSON.parse(bu.body).admit, true, bu.body);
  assert.equal(await agent.stop(), 0);
  // The recording holds both answers, after the passes they followed, and replays as lived.
  const answers = fs
    .readFileSync(recording, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{"admission"'))
    .map((l) => (JSON.parse(l) as { admission: { pod: { name: string }; admit: boolean } }).admission);
  assert.deepEqual(
    answers.map((a) => [a.pod.name, a.admit]),
    [
      ['be', false],
      ['bu', true],
    ],
  );
  const replay = spawnSync(process.execPath, [path.join(__dirname, '../../../bin/evictd.js'), 'simulate', recording], { encoding: 'utf8' });
  assert.equal(replay.status, 0, replay.stdout + replay.stderr);
  assert.match(replay.stdout, /and 2 admission answers: every decision as recorded/);
});
