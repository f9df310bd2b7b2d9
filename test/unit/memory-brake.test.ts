/**
 * The memory brake's decision (pure, src/policy/brake.ts) and its settings: which pod is braked
 * and when, when a brake ends, when a braked pod is stopped, and which inputs are refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brakeValue, decideBrakes, killedAtOnce, nextBrakeDeadline, type ActiveBrake } from '../../src/policy/brake';
import {
  compileConfig,
  configFromFlags,
  configFromKubeletConfiguration,
  ConfigError,
  MEMORY_BRAKE_MARGIN_BYTES,
  type EvictionConfig,
} from '../../src/policy/config';
import { assess, initialState, planEvictions, type PolicyState } from '../../src/policy/evaluate';
import type { ActivePod } from '../../src/policy/types';
import { checkMemoryBrake, parseFlags, settingsFromFlags } from '../../src/cli/run';
import type { CgroupLayout } from '../../src/node/cgroups';
import { UsageError } from '../../src/errors';
import { detectCgroups } from '../../src/node/cgroups';
import { skipped } from '../support/environment';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { memoryPod as pod, mi } from '../support/pods';

const S = 1e9;

/** Soft memory.available<1Gi with a 5 s grace, minimum reclaim 256Mi, a hard line far below; the brake on. */
const SOFT: EvictionConfig = {
  evictionSoft: { 'memory.available': '1Gi' },
  evictionSoftGracePeriod: { 'memory.available': '5s' },
  evictionMaxPodGracePeriod: 30,
  evictionMinimumReclaim: { 'memory.available': '256Mi' },
  evictionHard: { 'memory.available': '64Mi' },
  memoryBrake: true,
};
const config = compileConfig(SOFT);
const pods = [pod('within', 100, 200), pod('critical', 2000, 1, { priority: 2000000000 }), pod('over', 300, 100), pod('far-over', 900, 100)];
const present = new Set(pods.map((p) => p.spec.uid));

function pass(state: PolicyState, now: number, availableMi: number, active: ActiveBrake[] = [], podsNow: ActivePod[] = pods) {
  const input = { now, layout: 'single' as const, node: { memory: { availableBytes: mi(availableMi), workingSetBytes: mi(4096) } } };
  const a = assess(config, state, input);
  const ev = planEvictions(config, a, podsNow, 'single');
  const brakeInput = { now, layout: 'single' as const, pods: podsNow, present: new Set(podsNow.map((p) => p.spec.uid)), active };
  const d = decideBrakes(config, a, { ...brakeInput, killing: killedAtOnce(ev) });
  return { a, ev, d, brakeInput };
}

test('a soft memory threshold just met: the top-ranked pod is braked at once, before its grace period lets the plan exist', () => {
  const { ev, d } = pass(initialState(), 0, 900);
  assert.equal(ev.plan, null, 'the soft threshold is still in its grace period: no eviction yet');
  assert.ok(d.apply);
  // The ranking's first pod (critical pods are never candidates): far-over, 800Mi above its request.
  assert.deepEqual(d.apply.pod, { namespace: 'ns', name: 'far-over', uid: 'uid-far-over' });
  assert.equal(d.apply.threshold.signal, 'memory.available');
  assert.equal(d.apply.threshold.kind, 'soft');
  assert.equal(d.apply.threshold.gracePeriodMet, false);
  assert.match(d.apply.reasons[0]!, /memory usage 900Mi exceeds request 100Mi/);
  assert.deepEqual(d.release, []);
  assert.deepEqual(d.stop, []);
});

test('the braked pod is the one the plan evicts when the grace period ends', () => {
  const first = pass(initialState(), 0, 900);
  const later = pass(first.a.state, 5 * S, 900, [{ uid: 'uid-far-over', since: 0 }]);
  assert.ok(later.ev.plan);
  assert.equal(later.ev.plan.candidates[0]!.pod.uid, first.d.apply!.pod.uid);
  assert.equal(later.ev.plan.candidates[0]!.gracePeriodSeconds, 30, 'soft: the pod gets its termination grace');
  assert.equal(later.d.apply, null, 'already braked: nothing new');
});

test('a hard threshold: the pod this pass kills at once is not braked; if the kill does not happen, the next pass brakes it', () => {
  const { a, ev, d, brakeInput } = pass(initialState(), 0, 32);
  assert.equal(ev.plan?.hard, true);
  assert.equal(ev.plan.candidates[0]!.pod.name, 'far-over');
  assert.equal(ev.plan.candidates[0]!.gracePeriodSeconds, 0);
  assert.deepEqual([...killedAtOnce(ev)], ['uid-far-over']);
  assert.equal(d.apply, null, 'the kill is sooner than a brake; no other pod is braked in its place');
  // The same numbers on a pass that kills nothing (the pod is in flight, the runtime refused): braked.
  const next = decideBrakes(config, a, { ...brakeInput, killing: new Set() });
  assert.equal(next.apply?.pod.name, 'far-over');
  assert.equal(next.apply?.threshold.kind, 'hard');
});

test('no memory threshold met: no brake; the brake off: no decision at all', () => {
  assert.deepEqual(pass(initialState(), 0, 2048).d, { apply: null, release: [], stop: [] });
  const off = compileConfig({ ...SOFT, memoryBrake: false });
  assert.equal(off.memoryBrake, undefined);
  const a = assess(off, initialState(), { now: 0, layout: 'single', node: { memory: { availableBytes: mi(32), workingSetBytes: mi(4096) } } });
  assert.deepEqual(decideBrakes(off, a, { now: 0, layout: 'single', pods, present, active: [{ uid: 'uid-over', since: 0 }] }), {
    apply: null,
    release: [],
    stop: [],
  });
});

test('a brake holds above the line until the signal clears line plus minimum reclaim, then is released', () => {
  const active = [{ uid: 'uid-far-over', since: 0 }];
  // 1100Mi: above the 1Gi line, below 1Gi + 256Mi: still held, nobody new braked.
  const held = pass(initialState(), S, 1100, active);
  assert.deepEqual(held.d, { apply: null, release: [], stop: [] });
  // 1300Mi: clear of 1280Mi.
  const clear = pass(initialState(), 2 * S, 1300, active);
  assert.deepEqual(clear.d.release, [{ uid: 'uid-far-over', why: 'recovered' }]);
  assert.equal(clear.d.apply, null);
});

test('a braked pod that is gone is released and the next pod of the ranking braked; a new top pod is braked beside an older brake', () => {
  const d = pass(
    initialState(),
    S,
    900,
    [{ uid: 'uid-far-over', since: 0 }],
    pods.filter((p) => p.spec.name !== 'far-over'),
  ).d;
  assert.deepEqual(d.release, [{ uid: 'uid-far-over', why: 'pod-gone' }]);
  assert.equal(d.apply?.pod.uid, 'uid-over');
  const beside = pass(initialState(), S, 900, [{ uid: 'uid-over', since: 0 }]);
  assert.equal(beside.d.apply?.pod.uid, 'uid-far-over', 'the top pod is braked even when another pod is braked already');
  assert.deepEqual(beside.d.release, []);
});

test('a pod braked for the bound (default 2m) is stopped; one braked a moment less is not', () => {
  assert.equal(config.memoryBrake?.maxDurationNs, 120 * S);
  const active = [{ uid: 'uid-far-over', since: 10 * S }];
  assert.deepEqual(pass(initialState(), 130 * S - 1, 900, active).d.stop, []);
  assert.deepEqual(pass(initialState(), 130 * S, 900, active).d.stop, [{ uid: 'uid-far-over', brakedNs: 120 * S }]);
  assert.equal(nextBrakeDeadline(config, [...active, { uid: 'uid-over', since: 5 * S }]), 125 * S);
  assert.equal(nextBrakeDeadline(config, []), null);
});

test('only critical pods: nothing to brake', () => {
  const only = [pod('critical', 2000, 1, { priority: 2000000000 })];
  const a = assess(config, initialState(), { now: 0, layout: 'single', node: { memory: { availableBytes: mi(900), workingSetBytes: mi(4096) } } });
  assert.equal(decideBrakes(config, a, { now: 0, layout: 'single', pods: only, present, active: [] }).apply, null);
});

test('the brake value: usage plus the margin, rounded up to a page', () => {
  assert.equal(MEMORY_BRAKE_MARGIN_BYTES, mi(8));
  assert.equal(brakeValue(mi(100), mi(8)), mi(108));
  assert.equal(brakeValue(mi(100) + 1, mi(8)), mi(108) + 4096);
  assert.equal(brakeValue(0, 0), 0);
});

test('config: the flag and the file field turn it on; the bound is read and checked', () => {
  const fromFlag = compileConfig(configFromFlags({ memoryBrake: true, memoryBrakeMaxDuration: '90s' }));
  assert.deepEqual(fromFlag.memoryBrake, { maxDurationNs: 90 * S, marginBytes: mi(8), field: '--memory-brake' });
  const fromFile = compileConfig(
    configFromKubeletConfiguration({ kind: 'KubeletConfiguration', memoryBrake: true, memoryBrakeMaxDuration: '3m' }, 'node.yaml: '),
  );
  assert.equal(fromFile.memoryBrake?.field, 'node.yaml: memoryBrake');
  assert.equal(fromFile.memoryBrake?.maxDurationNs, 180 * S);
  // The flag wins over the file, as in the kubelet.
  const overridden = compileConfig(configFromFlags({ memoryBrake: false }, configFromKubeletConfiguration({ memoryBrake: true })));
  assert.equal(overridden.memoryBrake, undefined);
  assert.equal(compileConfig({}).memoryBrake, undefined, 'off by default');
});

test('config refusals name the field and the value', () => {
  const refuses = (cfg: () => unknown, field: RegExp) =>
    assert.throws(cfg, (e: unknown) => e instanceof ConfigError && field.test(e.message) && !e.message.includes('\n'), `expected ${field}`);
  refuses(() => configFromKubeletConfiguration({ memoryBrake: 'yes' }, 'f: '), /^f: memoryBrake: "yes": must be true or false$/);
  refuses(() => configFromKubeletConfiguration({ memoryBrakeMaxDuration: 120 }, 'f: '), /^f: memoryBrakeMaxDuration: 120: must be a duration string/);
  refuses(() => configFromKubeletConfiguration({ memoryBrakes: true }, 'f: '), /^f: memoryBrakes: true: unknown eviction field/);
  refuses(() => compileConfig(configFromFlags({ memoryBrake: true, memoryBrakeMaxDuration: '0s' })), /^--memory-brake-max-duration: "0s": must be positive$/);
  refuses(() => compileConfig(configFromFlags({ memoryBrake: true, memoryBrakeMaxDuration: '2 minutes' })), /^--memory-brake-max-duration: "2 minutes": /);
  refuses(
    () => compileConfig(configFromFlags({ memoryBrake: true, memoryBrakeMaxDuration: '600h' })),
    /^--memory-brake-max-duration: "600h": must be at most 596h31m23.647s/,
  );
});

test('config warnings: a bound shorter than the soft grace plus pod grace; a bound without the brake', () => {
  const short = compileConfig({ ...SOFT, memoryBrakeMaxDuration: '20s' });
  assert.ok(
    short.warnings.some((w) => /memoryBrakeMaxDuration: "20s": shorter than the memory.available soft grace period plus evictionMaxPodGracePeriod/.test(w)),
    short.warnings.join('\n'),
  );
  assert.ok(!compileConfig(SOFT).warnings.some((w) => /shorter than/.test(w)), 'the default bound (2m) covers 5s + 30s');
  const unused = compileConfig(configFromFlags({ memoryBrakeMaxDuration: '1m' }));
  assert.ok(
    unused.warnings.some((w) => /^--memory-brake-max-duration: "1m": ignored: memoryBrake is off$/.test(w)),
    unused.warnings.join('\n'),
  );
});

const layout = (mode: CgroupLayout['mode'], memoryVersion: 1 | 2): CgroupLayout => ({
  mode,
  memoryVersion,
  memoryMount: memoryVersion === 1 ? '/sys/fs/cgroup/memory' : '/sys/fs/cgroup',
  unifiedMount: mode === 'v1' ? null : mode === 'hybrid' ? '/sys/fs/cgroup/unified' : '/sys/fs/cgroup',
  pidsMount: null,
});

test('cgroup v1 (or hybrid): --memory-brake is refused at start, in one line that says why', () => {
  const s = settingsFromFlags(parseFlags(['--memory-brake', '--state-dir', '/run/evictd-test']));
  assert.equal(s.stateDir, '/run/evictd-test');
  for (const l of [layout('v1', 1), layout('hybrid', 1)]) {
    assert.throws(
      () => checkMemoryBrake(s.policy, l),
      (e: unknown) =>
        e instanceof UsageError &&
        /^--memory-brake: true: needs cgroup v2 \(memory.high on the pod cgroup\); this node's memory controller is on cgroup v1 \((v1|hybrid) cgroups at \/sys\/fs\/cgroup\/memory\)$/.test(
          e.message,
        ),
    );
  }
  checkMemoryBrake(s.policy, layout('v2', 2));
  // Off: nothing to refuse on v1.
  checkMemoryBrake(settingsFromFlags(parseFlags([])).policy, layout('v1', 1));
  assert.throws(() => settingsFromFlags(parseFlags(['--state-dir', 'run/evictd'])), /^UsageError: --state-dir: "run\/evictd": must be an absolute path$/);
});

test('evictd run --memory-brake on a node whose memory controller is cgroup v1: exit 2, one line', (t) => {
  if (skipped(t, detectCgroups().memoryVersion === 1 ? null : 'the memory controller here is on cgroup v2: nothing to refuse', { onlyIn: 'v2vm' })) return;
  const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');
  const r = spawnSync(process.execPath, [bin, 'run', '--memory-brake', '--cgroup-root', '/evictd-no-such-node'], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 2, r.stderr);
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /^evictd: --memory-brake: true: needs cgroup v2 \(memory.high on the pod cgroup\); this node's memory controller is on cgroup v1/);
  assert.equal(r.stdout, '');
});
