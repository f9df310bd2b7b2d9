/**
 * A state dir that cannot be written (full, or read-only) costs evictd its crash-safety, never
 * an eviction: the journal's and the orders' writes fail and say so, the ramp is still evicted
 * through the runtime before the OOM killer (issue 33). The state dir is a tmpfs of its own,
 * filled to the last byte or remounted read-only.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped, slow } from '../support/environment';
import type { NodeLab } from '../../src/lab/node-lab';
import { AgentProcess, runRamp } from '../../src/lab/ramp-lab';
import { MiB, criClient, missingE2e, newLab, releaseHarness } from './agent-harness';

const labs: NodeLab[] = [];
const procs: AgentProcess[] = [];
const mounts: string[] = [];
after(async () => {
  for (const p of procs) await p.stop().catch(() => undefined);
  for (const l of labs) await l.destroy().catch(() => undefined);
  for (const m of mounts) {
    try {
      execFileSync('umount', [m]);
      fs.rmSync(m, { recursive: true, force: true });
    } catch {
      // left for the machine's cleanup
    }
  }
  await releaseHarness();
});

/** A 64 KiB tmpfs, 0700, either filled to its last byte or remounted read-only. */
function brokenStateDir(how: 'full' | 'read-only'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `evictd-state-${how}-`));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'evictd-state', dir]);
  mounts.push(dir);
  if (how === 'full') {
    const fd = fs.openSync(path.join(dir, 'filler'), 'w');
    try {
      for (;;) fs.writeSync(fd, Buffer.alloc(4096));
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
    } finally {
      fs.closeSync(fd);
    }
  } else execFileSync('mount', ['-o', 'remount,ro', dir]);
  return dir;
}

for (const how of ['full', 'read-only'] as const) {
  test(`a ${how} state dir: the ramp is still evicted through the runtime, the failed writes are said`, async (t) => {
    if (skipped(t, missingE2e())) return;
    const { endpoint } = await criClient();
    const lab = await newLab(`state-${how}`, { memoryLimitBytes: 384 * MiB });
    labs.push(lab);
    const stateDir = brokenStateDir(how);
    const agent = await AgentProcess.start({
      lab,
      endpoint,
      evictionHard: 'memory.available<64Mi',
      extraArgs: ['--state-dir', stateDir],
      startTimeoutMs: slow(15_000),
    });
    procs.push(agent);
    const r = await runRamp(lab, agent, { name: 'hog', rateMiBs: 300, targetMiB: 448 });
    assert.equal(r.outcome, 'evicted', JSON.stringify({ ...r, labPod: undefined }));
    assert.equal(r.oomKills, 0);
    const said = agent.lines.filter((l) => typeof l.msg === 'string' && /could not be written|uses log unavailable/.test(l.msg as string)).map((l) => l.msg);
    assert.ok(said.length > 0, `a failed write is logged: ${JSON.stringify(agent.lines.filter((l) => Number(l.level) >= 50).map((l) => l.msg))}`);
    assert.equal(agent.child.exitCode, null, 'still running');
  });
}
