/**
 * `evictd record FILE` as users run it, on the real runtime and cgroups: under pressure it
 * records the eviction it would make and makes none (the hog keeps running), exits 0 on
 * SIGTERM, and `evictd simulate FILE` replays the recording to the same decisions.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped, slow } from '../support/environment';
import type { NodeLab } from '../../src/lab/node-lab';
import { AgentProcess } from '../../src/lab/ramp-lab';
import { MiB, criClient, hog, missingE2e, newLab, releaseHarness, sleeper } from './agent-harness';
import { waitFor } from '../support/wait';

const labs: NodeLab[] = [];
const procs: AgentProcess[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-record-'));
after(async () => {
  for (const p of procs) await p.stop().catch(() => undefined);
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');

test('evictd record: under pressure it records the eviction it would make, makes none, and the recording replays', async (t) => {
  if (skipped(t, missingE2e())) return;
  const { endpoint } = await criClient();
  const lab = await newLab('record', { memoryLimitBytes: 384 * MiB });
  labs.push(lab);
  const file = path.join(tmp, 'observed.jsonl');
  await lab.runPod({ name: 'kept', namespace: 'demo', qos: 'Guaranteed', containers: [sleeper('app', 32 * MiB)] });
  const agent = await AgentProcess.start({
    lab,
    endpoint,
    command: ['record', file],
    evictionHard: 'memory.available<200Mi',
    extraArgs: ['--housekeeping-interval', '500ms'],
    startTimeoutMs: slow(15_000),
  });
  procs.push(agent);
  // 250 MiB held on 384: about 100 MiB available, well past the 200Mi line.
  const victim = await lab.runPod({ name: 'hog', namespace: 'demo', qos: 'BestEffort', containers: [hog(200, 250)] });
  const decided = () =>
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"evict demo/hog memory.available'));
  await waitFor('a pass deciding to evict the hog', () => decided().length >= 2, slow(20_000));
  assert.equal(await lab.sandboxReady(victim), true, 'the hog still runs: nothing was acted on');
  assert.equal(await agent.stop(), 0);
  assert.deepEqual(
    agent.lines.filter((l) => l.msg === 'evicted pod'),
    [],
    'no eviction',
  );
  assert.ok(
    agent.lines.some((l) => l.msg === 'would evict pod (dry run)' && l.pod === 'demo/hog'),
    'the eviction it would have made, logged as such',
  );
  assert.ok(
    agent.lines.some((l) => l.msg === 'recording closed'),
    'the recording was closed at exit',
  );
  const r = spawnSync(process.execPath, [bin, 'simulate', file, '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout) as { passes: number; differences: unknown[]; recorded: { pod: string }[] };
  assert.deepEqual(out.differences, []);
  assert.ok(out.passes >= 2);
  assert.deepEqual(
    out.recorded.map((e) => e.pod),
    ['demo/hog'],
  );
});
