import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { skipped, slow } from '../support/environment';
import { AGENT_HARNESS_DIR, missingE2e } from './agent-harness';

/** The JSON line the demo prints per ramp (src/lab/ramp-lab.ts RampResult, without labPod). */
interface RampLine {
  ramp: number;
  outcome: string;
  oomKills: number;
  signal?: string;
  crossingMiB?: number;
  observedAvailableMiB?: number;
  decisionMs?: number;
  reactionMs?: number;
  freedMs?: number;
  action?: string;
}

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');

test('evictd demo --json: every ramp evicted, no OOM kill, the protected pods survive; the last line is the summary', async (t) => {
  if (skipped(t, missingE2e())) return;
  // The demo brings up (and takes down) the harness instance it is pointed at.
  const child = spawn(process.execPath, [bin, 'demo', '--json', '--rates', '300,2000'], {
    env: { ...process.env, EVICTD_HARNESS_DIR: AGENT_HARNESS_DIR },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  // Bounded: a demo that never ends fails here with what it printed, instead of holding the suite.
  const code = await new Promise<number | null | 'timeout'>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), slow(60_000));
    child.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  if (code === 'timeout') {
    child.kill('SIGKILL');
    assert.fail(`evictd demo did not end within ${slow(60_000) / 1000} s; stdout tail: ${out.slice(-1500)}\nstderr tail: ${err.slice(-3000)}`);
  }
  const lines = out.trim().split('\n');
  const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const last = events[events.length - 1] as { summary?: Record<string, unknown> };
  assert.ok(last.summary, `last line: ${lines[lines.length - 1]}\nstderr: ${err}`);
  const s = last.summary as {
    evicted: string[];
    oomKills: number;
    machineOomKills: number;
    reactionP50Ms: number;
    reactionP99Ms: number;
    freedP99Ms: number;
    protectedPodsSurvived: boolean;
    ramps: number;
    cacheRamps: { ramps: number; spared: number };
    replay: {
      passes: number;
      recorded: string[];
      replayed: string[];
      differences: number;
      earlierWithHigherLine: string[];
      oomFirstWithLowerLine: string[];
      bytesPerPass: number;
    };
  };
  // The promise: every hog evicted, no kernel OOM kill, the Guaranteed and Burstable pods alive.
  assert.deepEqual(s.evicted, ['hog-1', 'hog-2']);
  assert.equal(s.oomKills, 0);
  // The pods' own counts read 0 once their cgroups are gone: the machine's count says it.
  assert.equal(s.machineOomKills, 0, 'no kernel OOM kill on the machine during the demo');
  assert.equal(s.ramps, 2);
  // Page cache past the line, the kubelet's signal above it, a standing order in place: nobody evicted.
  assert.ok(s.cacheRamps.ramps >= 1, 'the demo ran its page-cache ramp');
  assert.equal(s.cacheRamps.spared, s.cacheRamps.ramps, JSON.stringify(events.find((e) => e.event === 'cache-ramp')));
  assert.equal(s.protectedPodsSurvived, true);
  assert.ok(s.reactionP99Ms >= s.reactionP50Ms);
  // The run was recorded (evictd run --record) and its replay decided every pass as the live
  // agent did: the same evictions, in the same order, of the same pods, as the ramps saw them.
  const replayLine = events.find((e) => e.event === 'replay') as { differences: string[] } | undefined;
  assert.ok(replayLine, 'the demo printed its replay');
  assert.deepEqual(replayLine.differences, []);
  assert.equal(s.replay.differences, 0);
  assert.ok(s.replay.passes > 0);
  assert.deepEqual(s.replay.replayed, s.replay.recorded);
  assert.deepEqual(
    s.replay.recorded,
    s.evicted.map((p) => `demo/${p}`),
  );
  assert.ok(s.replay.bytesPerPass > 0);
  // What if: a line twice as high evicts the hogs earlier; one at 1Ki leaves each ramp less time
  // than the agent took to react, and the OOM killer would end it first.
  assert.ok(s.replay.earlierWithHigherLine.length > 0, JSON.stringify(replayLine));
  assert.ok(s.replay.earlierWithHigherLine.every((p) => /^demo\/hog-\d$/.test(p)));
  // Which ramps it names depends on what the recorded passes saw of each (a ramp seen by one pass
  // only has no rate: in the lab, hog-1 was), so: some, and only hogs.
  // Since the JS thread runs at normal priority (issue 32), in the TCG lab a ramp may be seen by
  // one recorded pass only (the kill thread acts first), and then no ramp has a rate to name: the
  // list may be empty there; what it names must still be only evicted hogs.
  if (process.env.EVICTD_LAB !== 'v2vm') assert.ok(s.replay.oomFirstWithLowerLine.length > 0, JSON.stringify(replayLine));
  assert.ok(
    s.replay.oomFirstWithLowerLine.every((p) => s.evicted.includes(p.replace(/^demo\//, ''))),
    JSON.stringify(replayLine),
  );
  assert.equal(code, 0);
  assert.deepEqual(
    events.filter((e) => e.event === 'warning'),
    [],
    'no protected pod was stopped between ramps',
  );
  const ramps = events.filter((e) => e.event === 'ramp') as unknown as RampLine[];
  assert.equal(ramps.length, 2);
  for (const r of ramps) {
    const at = `ramp ${r.ramp}`;
    assert.equal(r.outcome, 'evicted', at);
    assert.equal(r.oomKills, 0, at);
    assert.match(r.signal ?? '', /^(memory|allocatableMemory)\.available$/, at);
    // The crossing came before the hog reached the node's 512 MiB limit, and the decision was
    // made on numbers under the 100Mi line (the default --threshold).
    assert.ok(r.crossingMiB !== undefined && r.crossingMiB < 512, `${at}: hog at ${r.crossingMiB} MiB at the crossing`);
    assert.ok(r.observedAvailableMiB !== undefined && r.observedAvailableMiB < 100, `${at}: decided at ${r.observedAvailableMiB} MiB available`);
    // The timeline runs in order: crossing (0) -> decision -> kill sent -> memory back; for a
    // standing order's kill, crossing -> kill (decided by the pass before) -> memory back, and the
    // pass that confirms it comes after the kill.
    assert.ok(r.decisionMs !== undefined && r.reactionMs !== undefined && r.freedMs !== undefined, `${at}: ${JSON.stringify(r)}`);
    if (r.action === 'standing-order')
      assert.ok(
        r.reactionMs >= 0 && r.reactionMs <= r.decisionMs && r.reactionMs <= r.freedMs,
        `${at}: kill ${r.reactionMs} <= confirmation ${r.decisionMs}, kill <= freed ${r.freedMs}`,
      );
    else
      assert.ok(
        r.decisionMs >= 0 && r.decisionMs <= r.reactionMs && r.reactionMs <= r.freedMs,
        `${at}: decision ${r.decisionMs} <= kill ${r.reactionMs} <= freed ${r.freedMs}`,
      );
  }
});
