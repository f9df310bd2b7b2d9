/**
 * The memory brake's record and restore (src/agent/effects/memory-brake.ts) on a stand-in cgroup directory
 * (plain files named memory.high and memory.current): what is written, in which order, and what
 * a restart finds. The real cgroup side is proven in the VM (test/agent/brake.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { systemClock } from '../../src/agent/clock';
import { dryRun } from '../../src/agent/effects/effect';
import { BRAKE_RECORD_FILE, stateDirProblem } from '../../src/agent/effects/brake-record';
import { EASE_SIGNAL_WAIT_MS, MemoryBrakes } from '../../src/agent/effects/memory-brake';
import { hostCgroups, type CgroupPort } from '../../src/node/cgroup-port';
import { SIGTERM_NUMBER, signalPendingIn } from '../../src/node/signal-pending';
import { AgentMetrics } from '../../src/agent/metrics';
import { stopEaseRoom, type BrakeApply } from '../../src/policy/brake';
import { STOP_EASE_NODE_MARGIN_BYTES } from '../../src/policy/config';
import { CRASH_AT_REQUIRE } from '../support/crash-at';
import { tempDir } from '../support/temp-dir';

const mi = (n: number) => n * 2 ** 20;

function setup(original = 'max') {
  const root = tempDir('brake');
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
  const node = { availableBytes: null as number | null };
  const make = () =>
    new MemoryBrakes({ stateDir, cgroups, clock: systemClock, marginBytes: mi(8), logger, metrics, nodeAvailableBytes: () => node.availableBytes });
  const high = () => fs.readFileSync(path.join(dir, 'memory.high'), 'utf8');
  const record = () =>
    fs.existsSync(path.join(stateDir, BRAKE_RECORD_FILE)) ? JSON.parse(fs.readFileSync(path.join(stateDir, BRAKE_RECORD_FILE), 'utf8')) : null;
  return { root, mount, podPath, dir, stateDir, lines, logger, metrics, make, high, record, node };
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

test('a record from another boot is discarded: its cgroups and clock went with that boot', () => {
  const e = setup();
  e.make().apply(apply, e.podPath, 1n);
  const rec = e.record();
  rec.bootId = 'another-boot';
  fs.writeFileSync(path.join(e.stateDir, BRAKE_RECORD_FILE), JSON.stringify(rec));
  e.make().recover();
  assert.equal(e.high(), String(mi(308)), 'nothing written on the word of another boot');
  assert.equal(e.record(), null);
  assert.ok(e.lines.some((l) => l.msg === 'memory brake record from another boot: discarded'));
});

test('a record entry naming a cgroup outside the pod cgroup root is never written to', () => {
  const e = setup();
  e.make().apply(apply, e.podPath, 1n);
  const outside = path.join(e.mount, 'system.slice', 'sshd.service');
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(path.join(outside, 'memory.high'), '4096');
  const rec = e.record();
  rec.brakes.push({ ...rec.brakes[0], pod: { namespace: 'x', name: 'y', uid: 'zzz' }, dir: outside, value: '4096', original: '0' });
  rec.brakes.push({
    ...rec.brakes[0],
    pod: { namespace: 'x', name: 'up', uid: 'up' },
    dir: path.join(e.mount, 'kubepods', '..', 'system.slice', 'sshd.service'),
    value: '4096',
    original: '0',
  });
  fs.writeFileSync(path.join(e.stateDir, BRAKE_RECORD_FILE), JSON.stringify(rec));
  new MemoryBrakes({
    stateDir: e.stateDir,
    cgroups: hostCgroups({ memoryMount: e.mount, memoryVersion: 2, unifiedMount: null }),
    clock: systemClock,
    marginBytes: mi(8),
    logger: e.logger,
    metrics: e.metrics,
    podRootDir: path.join(e.mount, 'kubepods'),
  }).recover();
  assert.equal(fs.readFileSync(path.join(outside, 'memory.high'), 'utf8'), '4096');
  assert.equal(e.high(), 'max', "the pod's own brake is released");
  assert.equal(e.lines.filter((l) => l.msg === 'memory brake record names a cgroup outside the pod cgroup root: not touched').length, 2);
});

test('a link in place of the record is not followed: refused with an error line, and the start goes on; the next write replaces the link, not what it names', () => {
  const e = setup();
  fs.mkdirSync(e.stateDir, { recursive: true, mode: 0o700 });
  const elsewhere = path.join(e.root, 'elsewhere.json');
  const theirs = JSON.stringify({ version: 1, brakes: [{ path: '/somewhere', previousHigh: 'max' }] });
  fs.writeFileSync(elsewhere, theirs);
  fs.symlinkSync(elsewhere, path.join(e.stateDir, BRAKE_RECORD_FILE));
  const brakes = e.make();
  brakes.recover();
  assert.equal(
    e.lines.filter((l) => l.msg === 'memory brake record unreadable: brakes it names (if any) are not released' && /ELOOP|symbolic link/.test(String(l.err)))
      .length,
    1,
  );
  brakes.apply(apply, e.podPath, systemClock.now());
  assert.equal(fs.readFileSync(elsewhere, 'utf8'), theirs, 'the file the link named is untouched');
  assert.equal(fs.lstatSync(path.join(e.stateDir, BRAKE_RECORD_FILE)).isSymbolicLink(), false, 'the record is a file of its own again');
});

test('a crash loop cannot keep a pod braked past the bound: a brake set again right after a restart keeps its first start', () => {
  const e = setup();
  const first = e.make();
  const since = systemClock.now() - 90n * 1_000_000_000n; // braked 90 s ago
  first.apply(apply, e.podPath, since);
  const next = e.make();
  next.recover(); // released; the pressure is still there, so the next pass brakes again
  next.apply(apply, e.podPath);
  assert.deepEqual(
    next.active.map((b) => b.since),
    [Number(since)],
    'the bound counts from the first brake',
  );
  // A later brake of the same pod (after the inherited one was used) starts afresh.
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(308)}\n`);
  next.release('abc', 'recovered');
  next.apply(apply, e.podPath, 5n);
  assert.deepEqual(
    next.active.map((b) => b.since),
    [5],
  );
});

test('stateDirProblem: a state dir others can write, a link, or another owner is refused; an absent one is fine', () => {
  const root = tempDir('state');
  const euid = process.geteuid!();
  assert.equal(stateDirProblem(path.join(root, 'absent'), euid), null);
  const ok = path.join(root, 'ok');
  fs.mkdirSync(ok, { mode: 0o700 });
  assert.equal(stateDirProblem(ok, euid), null);
  const open = path.join(root, 'open');
  fs.mkdirSync(open);
  fs.chmodSync(open, 0o777);
  assert.equal(stateDirProblem(open, euid), 'writable by others (mode 0777)');
  fs.symlinkSync(ok, path.join(root, 'link'));
  assert.match(stateDirProblem(path.join(root, 'link'), euid)!, /symbolic link/);
  assert.equal(stateDirProblem(ok, euid + 1), `owned by uid ${euid}, not by evictd's ${euid + 1}`);
});

test("a braked pod's graceful stop eases the brake to usage + headroom (record first), never above what the brake replaced", () => {
  const e = setup();
  const b = e.make();
  b.apply(apply, e.podPath, 1n);
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(308)}\n`);
  fs.writeFileSync(path.join(e.dir, 'memory.current'), `${mi(310)}\n`);
  b.ease('abc', mi(64));
  assert.equal(e.high(), String(mi(374)));
  assert.equal(e.record().brakes[0].value, String(mi(374)), 'the record names the value now in force');
  assert.ok(e.lines.some((l) => l.msg === 'memory brake eased for the graceful stop' && l.was === String(mi(308))));
  // The release still knows its value: the original comes back.
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(374)}\n`);
  b.release('abc', 'pod-gone');
  assert.equal(e.high(), 'max');
  // A pod whose own memory.high was a number: eased up to it, not past it.
  const own = setup(String(mi(340)));
  const ob = own.make();
  ob.apply(apply, own.podPath, 1n);
  ob.ease('abc', mi(64));
  assert.equal(own.high(), String(mi(340)));
  // Not braked: nothing written.
  const none = setup();
  none.make().ease('abc', mi(64));
  assert.equal(none.high(), 'max\n');
});

test('the ease at a graceful stop is never more than the node has left beyond the margin, and says so when it gives less or nothing', () => {
  const e = setup();
  const b = e.make();
  b.apply(apply, e.podPath, 1n);
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(308)}\n`);
  fs.writeFileSync(path.join(e.dir, 'memory.current'), `${mi(310)}\n`);
  // 72 MiB left, 32 kept back: 40 MiB of room, not the 64 asked.
  e.node.availableBytes = mi(72);
  b.ease('abc', mi(64));
  assert.equal(e.high(), String(mi(350)));
  const less = e.lines.find((l) => /eased less than asked/.test(String(l.msg)));
  assert.ok(less, JSON.stringify(e.lines.map((l) => l.msg)));
  assert.equal(less.roomBytes, mi(40));
  assert.equal(less.nodeMarginBytes, STOP_EASE_NODE_MARGIN_BYTES);
  // No room at all: the brake stays as it is, and the log says the handler will be throttled.
  const tight = setup();
  const tb = tight.make();
  tb.apply(apply, tight.podPath, 1n);
  const set = tight.high();
  tight.node.availableBytes = mi(20);
  tb.ease('abc', mi(64));
  assert.equal(tight.high(), set);
  assert.ok(tight.lines.some((l) => /memory brake kept for the graceful stop/.test(String(l.msg)) && l.roomBytes === 0));
});

test('the ease at a graceful stop is never more than the tightest limited cgroup above the pod has left beyond its margin', () => {
  const e = setup();
  const b = e.make();
  b.apply(apply, e.podPath, 1n);
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(308)}\n`);
  fs.writeFileSync(path.join(e.dir, 'memory.current'), `${mi(310)}\n`);
  // kubepods at 512 MiB with 452 in use (60 left), besteffort unlimited, the node plenty.
  const kubepods = path.join(e.mount, 'kubepods');
  fs.writeFileSync(path.join(kubepods, 'memory.max'), `${mi(512)}\n`);
  fs.writeFileSync(path.join(kubepods, 'memory.current'), `${mi(452)}\n`);
  fs.writeFileSync(path.join(kubepods, 'besteffort', 'memory.max'), 'max\n');
  fs.writeFileSync(path.join(kubepods, 'besteffort', 'memory.current'), `${mi(400)}\n`);
  e.node.availableBytes = mi(2048);
  b.ease('abc', mi(128));
  // 60 left, 8 kept back: 52 MiB of room.
  assert.equal(e.high(), String(mi(362)));
  const less = e.lines.find((l) => /eased less than asked/.test(String(l.msg)));
  assert.ok(less, JSON.stringify(e.lines.map((l) => l.msg)));
  assert.equal(less.limitDir, kubepods);
  assert.equal(less.limitLeftBytes, mi(60));
  assert.equal(less.roomBytes, mi(52));
  // A tighter one lower down wins; the mount's root (no memory.max) ends the walk.
  const t2 = setup();
  const b2 = t2.make();
  b2.apply(apply, t2.podPath, 1n);
  fs.writeFileSync(path.join(t2.dir, 'memory.current'), `${mi(310)}\n`);
  fs.writeFileSync(path.join(t2.mount, 'kubepods', 'memory.max'), `${mi(512)}\n`);
  fs.writeFileSync(path.join(t2.mount, 'kubepods', 'memory.current'), `${mi(312)}\n`);
  fs.writeFileSync(path.join(t2.mount, 'kubepods', 'besteffort', 'memory.max'), `${mi(340)}\n`);
  fs.writeFileSync(path.join(t2.mount, 'kubepods', 'besteffort', 'memory.current'), `${mi(312)}\n`);
  b2.ease('abc', mi(64));
  assert.equal(t2.high(), String(mi(330)));
  const eased = t2.lines.find((l) => /eased less than asked/.test(String(l.msg)));
  assert.equal(eased?.limitDir, path.join(t2.mount, 'kubepods', 'besteffort'));
});

test('stopEaseRoom: the asked room, bounded by the node and by the tightest limit above the pod, each beyond its margin; unknown, unbounded', () => {
  assert.equal(stopEaseRoom(mi(128), null), mi(128));
  assert.equal(stopEaseRoom(mi(128), mi(500)), mi(128));
  assert.equal(stopEaseRoom(mi(128), mi(100)), mi(68));
  assert.equal(stopEaseRoom(mi(128), mi(10)), 0);
  assert.equal(stopEaseRoom(mi(128), null, mi(100)), mi(92));
  assert.equal(stopEaseRoom(mi(128), mi(100), mi(50)), mi(42));
  assert.equal(stopEaseRoom(mi(128), mi(60), mi(100)), mi(28));
  assert.equal(stopEaseRoom(mi(128), null, mi(4)), 0);
  assert.equal(stopEaseRoom(mi(128), null, -mi(10)), 0, 'a cgroup already past its limit (usage counted before reclaim) gives nothing');
});

/**
 * Crash points of a brake (src/agent/crash-point.ts): a child process brakes the stand-in pod,
 * and eases or releases it, with EVICTD_CRASH_AT set and the test hook loaded (test/support/crash-at.ts),
 * and SIGKILLs itself there, between a
 * write of the record and a write of memory.high. The next start's recovery must leave
 * memory.high exactly as it was before any brake and no record. (On real cgroups, in the pure
 * v2 lab: test/agent/brake.test.ts.)
 */
const brakeModule = path.resolve(__dirname, '..', '..', 'src', 'agent', 'effects', 'memory-brake.js');
const childScript = `
  const pino = require('pino');
  const fs = require('node:fs');
  const path = require('node:path');
  const { MemoryBrakes } = require(${JSON.stringify(brakeModule)});
  const { systemClock } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'src', 'agent', 'clock.js'))});
  const { hostCgroups } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'src', 'node', 'cgroup-port.js'))});
  const { AgentMetrics } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'src', 'agent', 'metrics.js'))});
  const o = JSON.parse(process.env.BRAKE_TEST);
  const b = new MemoryBrakes({ stateDir: o.stateDir, cgroups: hostCgroups({ memoryMount: o.mount, memoryVersion: 2, unifiedMount: null }), clock: systemClock, marginBytes: 8 << 20, logger: pino({ level: 'silent' }), metrics: new AgentMetrics() });
  b.apply(o.apply, o.podPath, 1n);
  if (o.then === 'ease') {
    fs.writeFileSync(path.join(o.dir, 'memory.current'), String(310 << 20));
    b.ease('abc', 64 << 20);
  }
  if (o.then === 'release') b.release('abc', 'pod-gone');
  process.stdout.write('no crash\\n');
`;

for (const [point, then] of [
  ['brake:recorded', 'none'],
  ['brake:set', 'none'],
  ['brake:ease-recorded', 'ease'],
  ['brake:eased', 'ease'],
  ['brake:restored', 'release'],
] as const) {
  test(`SIGKILLed at ${point}: the next start leaves memory.high exactly as before the brake, and no record`, async () => {
    const original = '1073741824';
    const e = setup(original);
    const r = spawnSync(process.execPath, [...CRASH_AT_REQUIRE, '-e', childScript], {
      encoding: 'utf8',
      env: {
        ...process.env,
        EVICTD_CRASH_AT: point,
        BRAKE_TEST: JSON.stringify({ stateDir: e.stateDir, mount: e.mount, podPath: e.podPath, dir: e.dir, apply, then }),
      },
    });
    assert.equal(r.signal, 'SIGKILL', `the child was to die at ${point}: ${r.stdout}${r.stderr}`);
    assert.notEqual(e.record(), null, 'the dead run left its record');
    e.make().recover();
    assert.equal(e.high().trim(), original, `memory.high after the restart (outcome: ${JSON.stringify(e.lines.at(-1))})`);
    assert.equal(e.record(), null);
  });
}

test('EVICTD_CRASH_AT alone arms nothing: without the test hook loaded the run goes to its end', () => {
  const e = setup('1073741824');
  const r = spawnSync(process.execPath, ['-e', childScript], {
    encoding: 'utf8',
    env: {
      ...process.env,
      EVICTD_CRASH_AT: 'brake:set',
      BRAKE_TEST: JSON.stringify({ stateDir: e.stateDir, mount: e.mount, podPath: e.podPath, dir: e.dir, apply, then: 'none' }),
    },
  });
  assert.equal(r.signal, null, r.stderr);
  assert.match(r.stdout, /no crash/);
});

test("a graceful stop's ease holds the pod still (cgroup.freeze), eases it, and thaws it once the stop's SIGTERM is queued; a restart thaws a pod left frozen", async () => {
  const e = setup();
  let looks = 0;
  let queued = false;
  const cgroups: CgroupPort = {
    ...hostCgroups({ memoryMount: e.mount, memoryVersion: 2, unifiedMount: null }),
    pids: () => [4242],
    sigtermPending: () => (looks++, queued),
  };
  const b = new MemoryBrakes({ stateDir: e.stateDir, cgroups, clock: systemClock, marginBytes: mi(8), logger: e.logger, metrics: e.metrics });
  b.apply(apply, e.podPath, 1n);
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(308)}\n`);
  fs.writeFileSync(path.join(e.dir, 'memory.current'), `${mi(310)}\n`);
  const freeze = () => fs.readFileSync(path.join(e.dir, 'cgroup.freeze'), 'utf8');
  const eased = b.easing.run({ uid: 'abc', headroomBytes: mi(64), stopAsked: true });
  assert.equal(freeze(), '1', 'frozen at once, in the same turn as the stop was asked for');
  assert.equal(e.high(), String(mi(374)), 'eased while frozen');
  await new Promise((r) => setTimeout(r, 30));
  assert.ok(looks > 1, 'it looks again and again');
  assert.equal(freeze(), '1', 'still frozen: no SIGTERM queued yet');
  queued = true;
  await eased;
  assert.equal(freeze(), '0', 'thawed once it is');
  assert.equal(e.lines.find((l) => /held still until its SIGTERM/.test(String(l.msg)))?.waited, 'sigterm-queued');
  // A brake that ends while its pod is held still (the agent stopping) thaws it at once.
  queued = false;
  fs.writeFileSync(path.join(e.dir, 'memory.high'), `${mi(374)}\n`);
  const again = b.easing.run({ uid: 'abc', headroomBytes: mi(64), stopAsked: true });
  assert.equal(freeze(), '1');
  b.release('abc', 'agent-stop');
  assert.equal(freeze(), '0', 'thawed with the release, before the wait looks again');
  await again;
  b.apply(apply, e.podPath, 1n);
  // A run that died while the pod was frozen: the next start thaws it.
  fs.writeFileSync(path.join(e.dir, 'cgroup.freeze'), '1');
  const next = new MemoryBrakes({ stateDir: e.stateDir, cgroups, clock: systemClock, marginBytes: mi(8), logger: e.logger, metrics: e.metrics });
  next.restoreRecord(next.readRecord());
  assert.equal(freeze(), '0');
  // No process left (the pod exited at once): the wait ends.
  const f = setup();
  const fb = new MemoryBrakes({
    stateDir: f.stateDir,
    cgroups: { ...hostCgroups({ memoryMount: f.mount, memoryVersion: 2, unifiedMount: null }), sigtermPending: () => false },
    clock: systemClock,
    marginBytes: mi(8),
    logger: f.logger,
    metrics: f.metrics,
  });
  fb.apply(apply, f.podPath, 1n);
  const t0 = Date.now();
  await fb.easing.run({ uid: 'abc', headroomBytes: mi(64), stopAsked: true });
  assert.ok(Date.now() - t0 < EASE_SIGNAL_WAIT_MS / 2, 'not the whole wait');
  assert.equal(f.lines.find((l) => /held still until its SIGTERM/.test(String(l.msg)))?.waited, 'no-process-left');
});

test('SIGTERM pending is read from /proc/PID/status: the thread queue (SigPnd) or the process queue (ShdPnd), bit 15', () => {
  const status = (sig: string, shd: string) => `Name:\thog\nSigQ:\t1/7823\nSigPnd:\t${sig}\nShdPnd:\t${shd}\nSigBlk:\t0000000000000000\n`;
  assert.equal(signalPendingIn(status('0000000000000000', '0000000000004000'), SIGTERM_NUMBER), true, 'SIGTERM on the process');
  assert.equal(signalPendingIn(status('0000000000004000', '0000000000000000'), SIGTERM_NUMBER), true, 'SIGTERM on the thread');
  assert.equal(signalPendingIn(status('0000000000000100', '0000000000000002'), SIGTERM_NUMBER), false, 'SIGKILL and SIGINT are not');
  assert.equal(signalPendingIn('Name:\thog\n', SIGTERM_NUMBER), false, 'no such lines');
});
