// `evictd bench notify` as a user runs it, short (--quick, a few crossings), so the bench
// cannot rot: every row it promises is there, measured on this kernel's line mechanism (the eBPF
// tripwire in the pure cgroup v2 VM, the memcg v1 eventfd on the hybrid host), and no latency
// is negative (the bench itself refuses one). Its figures are benchmarks, not asserted here.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { packageRoot } from '../../src/kernel/addon';
import { detectCgroups } from '../../src/node/cgroups';
import { skipped, slow } from '../support/environment';
import { missingKernel } from './support';

type Row = Record<string, unknown> & { mechanism: string };

test('bench notify --quick --json: the line mechanism, its JS row, the pollers and the ratio, all positive', { timeout: slow(180_000) }, (t) => {
  if (skipped(t, missingKernel({ memory: true }))) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-bench-notify-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const svg = path.join(dir, 'notify.svg');
  const r = spawnSync(process.execPath, [path.join(packageRoot, 'bin', 'evictd.js'), 'bench', 'notify', '--quick', '--json', '--samples', '9', '--svg', svg], {
    encoding: 'utf8',
    timeout: slow(170_000),
  });
  assert.equal(r.status, 0, `bench notify failed:\n${r.stderr.slice(-2000)}`);
  const rows = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Row);
  const byName = new Map(rows.map((row) => [row.mechanism, row]));
  const line = detectCgroups().memoryVersion === 1 ? 'memcg-threshold-eventfd' : 'bpf-tripwire';
  for (const name of [line, `${line}-js`, 'adaptive-poll', 'poll-100ms', 'poll-1s', 'poll-10s']) {
    const row = byName.get(name);
    assert.ok(row, `a ${name} row in ${[...byName.keys()].join(', ')}`);
    assert.ok(Number(row.samples) >= 7, `${name}: ${String(row.samples)} of 9 crossings measured`);
    assert.ok(Number(row.p50_us) > 0 && Number(row.p99_us) >= Number(row.p50_us), `${name}: ${JSON.stringify(row)}`);
  }
  // The JS row is the line's own events, a little later: never earlier than the native stamp.
  assert.ok(Number(byName.get(`${line}-js`)!.p50_us) >= Number(byName.get(line)!.p50_us));
  const ratio = byName.get('ratio-to-poll-100ms');
  assert.ok(ratio && ratio.of === `${line}-js` && Number(ratio.p50_x) > 0, JSON.stringify(ratio));
  assert.ok(
    rows.some((row) => row.mechanism === 'granularity' && row.of === line),
    'usage past the line, per ramp rate',
  );
  assert.ok(byName.get('idle-cpu'), 'idle cost of armed watchers');
  // Where it ran is part of every figure: the VM lab says its CPUs are emulated.
  const env = byName.get('environment');
  assert.ok(env && env.kernel === os.release(), JSON.stringify(env));
  if (process.env.EVICTD_LAB === 'v2vm') assert.equal(env.cpu, 'qemu-tcg');
  // The tripwire's events carry the program's own stamp: the wakeup is told from the JS side.
  if (line === 'bpf-tripwire') {
    const d = byName.get('delivery');
    assert.ok(d && Number(d.wake_p50_us) > 0 && Number(d.to_js_p50_us) > 0, JSON.stringify(d));
  }
  assert.match(fs.readFileSync(svg, 'utf8'), /^<svg/);
});
