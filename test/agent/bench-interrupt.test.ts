/**
 * A lab bench stopped by SIGTERM mid-trial (a user's Ctrl-C, a test's time limit) leaves nothing
 * on the node (src/lab/interrupt.ts): its agents are gone, its node cgroups removed, its pods'
 * sandboxes removed from the runtime, and it exits 143. `bench memory-pressure` is the one
 * taken: two `evictd run` agents on two lab nodes, pods running when the signal comes. Pure
 * cgroup v2 (the bench refuses v1), so it runs in the lab.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { needsPureV2, skipped, slow } from '../support/environment';
import { AGENT_HARNESS_DIR, criClient, missingE2e } from './agent-harness';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');

/** The pids whose command line names `needle` (an agent started with the bench's node cgroup). */
function processesNaming(needle: string): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes(needle)) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test('bench memory-pressure stopped by SIGTERM mid-trial: exit 143, its agents gone, its node cgroups and its pods removed', async (t) => {
  if (skipped(t, missingE2e()) || needsPureV2(t)) return;
  const { client } = await criClient();
  const before = new Set((await client.listPodSandbox()).map((s) => s.id));
  const child = spawn(process.execPath, [bin, 'bench', 'memory-pressure', '--quick'], {
    env: { ...process.env, EVICTD_HARNESS_DIR: AGENT_HARNESS_DIR },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<[number | null, string | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
  // Both agents up (the line after their start), then a moment for the first trial's pods.
  const started = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), slow(60_000));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/^bench memory-pressure: KEP-5986/m.test(out)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => resolve(false));
  });
  assert.ok(started, `the bench did not start its agents: ${out}${err}`.slice(-2000));
  const roots = ['a', 'b'].map((x) => `/evictd-bench-kep5986-${x}-${child.pid}`);
  assert.equal(processesNaming(roots[0]!).length, 1, 'the kernel-woken agent runs on the first node');
  assert.equal(processesNaming(roots[1]!).length, 1, 'the cycle agent runs on the second node');
  const until = Date.now() + slow(20_000);
  while ((await client.listPodSandbox()).every((s) => before.has(s.id)) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  assert.ok(
    (await client.listPodSandbox()).some((s) => !before.has(s.id)),
    'a trial pod is up when the signal comes',
  );

  child.kill('SIGTERM');
  const [code, signal] = await exited;
  assert.equal(signal, null, `ended by its own exit, not killed by the signal: ${err.slice(-1000)}`);
  assert.equal(code, 143);
  assert.match(err, /SIGTERM: stopping what this command started/);
  for (const root of roots) {
    // An agent is the bench's child: once the bench has exited, a live one would be init's.
    assert.deepEqual(processesNaming(root), [], `no agent left on ${root}`);
    assert.equal(fs.existsSync(path.join('/sys/fs/cgroup', root)), false, `${root} removed`);
  }
  const left = (await client.listPodSandbox()).filter((s) => !before.has(s.id));
  assert.deepEqual(
    left.map((s) => s.metadata?.name),
    [],
    'every sandbox the bench made removed',
  );
});
