/**
 * The memory brake's record and restore (src/agent/effects/memory-brake.ts) on a stand-in cgroup directory
 * (plain files named memory.high and memory.current): what is written, in which order, and what
 * a restart finds. The real cgroup side is proven in the VM (test/agent/brake.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { systemClock } from '../../src/agent/clock';
import { dryRun } from '../../src/agent/effects/effect';
import { BRAKE_RECORD_FILE, MemoryBrakes } from '../../src/agent/effects/memory-brake';
import { hostCgroups } from '../../src/node/cgroup-port';
import { AgentMetrics } from '../../src/agent/metrics';
import type { BrakeApply } from '../../src/policy/brake';

const mi = (n: number) => n * 2 ** 20;

function setup(original = 'max') {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-brake-'));
  const mount = path.join(root, 'cgroup');
  const podPath = '/kubepods/besteffort/podabc';
  const dir = path.join(mount, podPath);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'memory.high'), `${original}\n`);
  fs.writeFileSync(path.join(dir, 'memory.current'), `${mi(300)}\n`);
  const stateDir = path.join(root, 'state');
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  const metrics = new AgentMetrics();
  const cgroups = hostCgroups({ memoryMount: mount, memoryVersion: 2, unifiedMount: null });
  const make = () => new MemoryBrakes({ stateDir, cgroups, clock: systemClock, marginBytes: mi(8), logger, metrics });
  const high = () => fs.readFileSync(path.join(dir, 'memory.high'), 'utf8');
  const record = () => (fs.existsSync(path.join(stateDir, BRAKE_RECORD_FILE)) ? JSON.parse(fs.readFileSync(path.join(stateDir, BRAKE_RECORD_FILE), 'utf8')) : null);
  return { root, mount, podPath, dir, stateDir, lines, logger, metrics, make, high, record };
}

const apply: BrakeApply = {
  pod: { namespace: 'ns', name: 'hog', uid: 'abc' },
  threshold: { signal: 'memory.available', kind: 'soft', quantity: '1Gi', gracePeriodMet: false, observed: { available: mi(900), capacity: mi(4096) } },
  reasons: ['memory usage 300Mi exceeds request 0'],
};

test('a brake: record first, memory.high = usage + margin; release puts back the exact original and empties the record', async () => {
  const e = setup('1073741824');
  const b = e.make();
  b.apply(apply, e.podPath, 123n);
  assert.equal(e.high(), String(mi(308)));
  const rec = e.record();
  assert.equal(rec.version, 1);
  assert.deepEqual(
    rec.brakes.map((x: Record<string, unknown>) => [x.original, x.value, x.dir, x.sinceNs, x.signal]),
    [['1073741824', String(mi(308)), e.dir, '123', 'memory.available']],
  );
  assert.deepEqual(b.active, [{ uid: 'abc', since: 123, signal: 'memory.available' }]);
  const on = e.lines.find((l) => l.msg === 'memory brake on')!;
  assert.equal(on.memoryHigh, String(mi(308)));
  assert.equal(on.replaced, '1073741824');
  assert.deepEqual(on.reasons, apply.reasons);
  assert.match(await e.metrics.registry.getSingleMetricAsString('evictd_brakes_active'), /evictd_brakes_active 1/);
  // The kernel prints the value back as it stores it: the brake is page-aligned, so the restore's
  // "is it still ours?" comparison holds.
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(308)}\n`);
  b.release('abc', 'pod-gone');
  assert.equal(e.high(), '1073741824');
  assert.equal(e.record(), null);
  assert.deepEqual(b.active, []);
  assert.match(await e.metrics.registry.getSingleMetricAsString('evictd_brakes_active'), /evictd_brakes_active 0/);
  assert.match(await e.metrics.registry.getSingleMetricAsString('evictd_brake_duration_seconds'), /evictd_brake_duration_seconds_count\{end="pod-gone"\} 1/);
});

test('no record, no brake: when the record cannot be written, memory.high is not touched', () => {
  const e = setup();
  fs.writeFileSync(e.stateDir, 'a file where the state directory should be');
  const b = e.make();
  b.apply(apply, e.podPath, 1n);
  assert.equal(e.high(), 'max\n');
  assert.deepEqual(b.active, []);
  assert.ok(e.lines.some((l) => l.msg === 'memory brake could not be set'));
});

test('a restart releases what a crashed run left: the brake value goes back to the original; the record is gone', () => {
  const e = setup();
  e.make().apply(apply, e.podPath, 1n); // the "crashed" run: never released
  assert.equal(e.high(), String(mi(308)));
  const next = e.make();
  next.recover();
  assert.equal(e.high(), 'max');
  assert.equal(e.record(), null);
  assert.deepEqual(next.active, []);
  const line = e.lines.find((l) => l.msg === 'memory brake from a previous run released')!;
  assert.equal(line.outcome, 'restored');
  assert.equal(line.restored, 'max');
});

test('a restart leaves memory.high alone when it is not the brake value (crash before the write, or someone else set it since)', () => {
  const e = setup();
  e.make().apply(apply, e.podPath, 1n);
  fs.writeFileSync(path.join(e.dir, 'memory.high'), '999424');
  e.make().recover();
  assert.equal(e.high(), '999424');
  assert.equal(e.record(), null);
  assert.equal(e.lines.find((l) => l.msg === 'memory brake from a previous run released')?.outcome, 'not the brake value: left as is');
});

test('a pod already held lower by its own memory.high is left as is; dry run writes nothing', () => {
  const low = setup(String(mi(200)));
  low.make().apply(apply, low.podPath, 1n);
  assert.equal(low.high(), `${mi(200)}\n`);
  assert.equal(low.record(), null);
  const dry = setup();
  // Dry run is the brake's action wrapped (effect.ts): its rehearsal runs before run() returns.
  void dryRun(dry.make().braking, dry.logger).run({ brake: apply, podPath: dry.podPath });
  assert.equal(dry.high(), 'max\n');
  assert.equal(dry.record(), null);
  const would = dry.lines.find((l) => l.msg === 'would brake pod (dry run)')!;
  assert.equal(would.memoryHigh, String(mi(308)));
  assert.equal(would.replaced, 'max');
});
