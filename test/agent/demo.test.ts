import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { skipped } from '../support/environment';
import { AGENT_HARNESS_DIR, missingE2e } from './agent-harness';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');

test('evictd demo --json: every ramp evicted, no OOM kill, the protected pods survive; the last line is the summary', async (t) => {
  if (skipped(t, missingE2e())) return;
  // The demo brings up (and takes down) the harness instance it is pointed at.
  const child = spawn(process.execPath, [bin, 'demo', '--json', '--rates', '300,2000'], { env: { ...process.env, EVICTD_HARNESS_DIR: AGENT_HARNESS_DIR }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const lines = out.trim().split('\n');
  const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const last = events[events.length - 1] as { summary?: Record<string, unknown> };
  assert.ok(last.summary, `last line: ${lines[lines.length - 1]}\nstderr: ${err}`);
  const s = last.summary as { evicted: string[]; oomKills: number; reactionP50Ms: number; reactionP99Ms: number; freedP99Ms: number; protectedPodsSurvived: boolean; ramps: number };
  assert.deepEqual(s.evicted, ['hog-1', 'hog-2']);
  assert.equal(s.oomKills, 0);
  assert.equal(s.ramps, 2);
  assert.equal(s.protectedPodsSurvived, true);
  assert.ok(s.reactionP50Ms > 0 && s.reactionP99Ms >= s.reactionP50Ms);
  assert.ok(s.freedP99Ms > 0);
  assert.equal(code, 0);
  const ramps = events.filter((e) => e.event === 'ramp');
  assert.equal(ramps.length, 2);
  for (const r of ramps) assert.equal(r.outcome, 'evicted');
});
