/**
 * HugepageAwareEviction as the node's kubelet has it (policy/kubelet-release.ts, agent/hugepage-gate.ts):
 * the operator's value when set; else the default of the kubelet release the Node names (on from
 * v1.37, kubernetes PR #138127; absent before); else off, the side that never evicts a pod the
 * kubelet spares. The release is read again on a timer the test steps: a kubelet upgraded in
 * place turns the gate on without a restart of evictd, a failed read keeps what was known.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HugepageGate, REFRESH_MS } from '../../src/agent/hugepage-gate';
import { gateDefaultIn, parseKubeletVersion, resolveGate } from '../../src/policy/kubelet-release';
import { FakeClock } from '../support/fake-node';

test('a kubelet version as Nodes carry it: vendor suffixes read, anything else refused', () => {
  assert.deepEqual(parseKubeletVersion('v1.36.2'), { major: 1, minor: 36, version: 'v1.36.2' });
  assert.equal(parseKubeletVersion('v1.37.0-rc.1')?.minor, 37);
  assert.equal(parseKubeletVersion('v1.35.4+k3s1')?.minor, 35);
  assert.equal(parseKubeletVersion('v1.34.1-eks-113cf36')?.minor, 34);
  for (const bad of ['', 'v1', 'v1.36', 'latest', '1.x.0', 42, undefined]) assert.equal(parseKubeletVersion(bad), null, String(bad));
});

test('HugepageAwareEviction is on by default from v1.37 and off before; a set value wins; unknown: off', () => {
  const r = (v: string) => parseKubeletVersion(v)!;
  assert.equal(gateDefaultIn('HugepageAwareEviction', r('v1.36.9')), false);
  assert.equal(gateDefaultIn('HugepageAwareEviction', r('v1.37.0')), true);
  assert.equal(gateDefaultIn('HugepageAwareEviction', r('v1.40.1')), true);
  assert.equal(gateDefaultIn('HugepageAwareEviction', r('v2.0.0')), true);
  assert.throws(() => gateDefaultIn('NoSuchGate', r('v1.37.0')), /NoSuchGate/);
  assert.deepEqual(resolveGate('HugepageAwareEviction', false, r('v1.37.0')), { on: false, source: 'set' });
  assert.deepEqual(resolveGate('HugepageAwareEviction', true, r('v1.36.0')), { on: true, source: 'set' });
  assert.deepEqual(resolveGate('HugepageAwareEviction', undefined, r('v1.36.0')), { on: false, source: 'kubelet-release', version: 'v1.36.0' });
  assert.deepEqual(resolveGate('HugepageAwareEviction', undefined, null), { on: false, source: 'release-unknown' });
});

interface Logged {
  level: string;
  fields: Record<string, unknown>;
  msg: string;
}

function gate(o: { set?: boolean; versions?: (string | Error)[]; reserved?: number }) {
  const clock = new FakeClock();
  const logged: Logged[] = [];
  const log = (level: string) => (fields: Record<string, unknown>, msg: string) => void logged.push({ level, fields, msg });
  const logger = { info: log('info'), warn: log('warn'), debug: log('debug') } as never;
  const versions = [...(o.versions ?? [])];
  let reads = 0;
  const g = new HugepageGate({
    set: o.set,
    ...(o.versions
      ? {
          kubeletVersion: () => {
            reads++;
            const v = versions.length > 1 ? versions.shift()! : versions[0]!;
            return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
          },
        }
      : {}),
    hugePagesBytes: () => o.reserved ?? 2 ** 30,
    clock,
    logger,
  });
  return { g, clock, logged, reads: () => reads };
}

test('from the Node: a v1.36 kubelet leaves huge pages in memory.available, v1.37 takes them out', async () => {
  const old = gate({ versions: ['v1.36.3'] });
  await old.g.start();
  assert.equal(old.g.hugePagesBytes(), 0);
  assert.deepEqual(old.g.state, { on: false, source: 'kubelet-release', version: 'v1.36.3' });
  assert.match(old.logged[0]!.msg, /kubelet v1\.36\.3 has it by default: huge pages left in memory\.available/);
  const current = gate({ versions: ['v1.37.1'] });
  await current.g.start();
  assert.equal(current.g.hugePagesBytes(), 2 ** 30);
  old.g.stop();
  current.g.stop();
});

test('a kubelet upgraded in place turns the gate on at the next read; a failed read keeps what was known', async () => {
  const t = gate({ versions: ['v1.36.3', new Error('connect ECONNREFUSED'), 'v1.37.0'] });
  await t.g.start();
  assert.equal(t.g.on, false);
  await t.clock.step(REFRESH_MS);
  assert.equal(t.reads(), 2);
  assert.equal(t.g.on, false, 'the API gone: the v1.36 kubelet is still what is known');
  assert.equal(t.g.state.version, 'v1.36.3');
  await t.clock.step(REFRESH_MS);
  assert.equal(t.reads(), 3);
  assert.deepEqual(t.g.state, { on: true, source: 'kubelet-release', version: 'v1.37.0' });
  assert.match(t.logged.at(-1)!.msg, /kubelet v1\.37\.0 .*huge pages out of memory\.available/);
  t.g.stop();
  await t.clock.step(REFRESH_MS);
  assert.equal(t.reads(), 3, 'stopped: no more reads');
  assert.deepEqual(t.clock.pending(), []);
});

test('set by the operator: the Node is never asked, and its value stands', async () => {
  const t = gate({ set: true, versions: ['v1.36.0'] });
  await t.g.start();
  assert.equal(t.reads(), 0);
  assert.equal(t.g.hugePagesBytes(), 2 ** 30);
  assert.deepEqual(t.clock.pending(), []);
  assert.match(t.logged[0]!.msg, /as set: huge pages out/);
});

test('the release unknown (no API, a 403, a Node without a version): off, and a warning only when huge pages are reserved', async () => {
  const none = gate({});
  await none.g.start();
  assert.equal(none.g.hugePagesBytes(), 0);
  assert.equal(none.logged[0]!.level, 'warn');
  assert.match(none.logged[0]!.msg, /--feature-gates=HugepageAwareEviction=true/);
  const forbidden = gate({ versions: [new Error('nodes "n" is forbidden')] });
  await forbidden.g.start();
  assert.deepEqual(forbidden.g.state, { on: false, source: 'release-unknown' });
  assert.equal(forbidden.logged[0]!.fields.err, 'nodes "n" is forbidden');
  const garbage = gate({ versions: ['latest'], reserved: 0 });
  await garbage.g.start();
  assert.equal(garbage.logged[0]!.level, 'info', 'no huge pages: the same number either way');
  assert.match(String(garbage.logged[0]!.fields.err), /not a kubelet version: "latest"/);
  await forbidden.clock.step(REFRESH_MS);
  assert.equal(forbidden.g.state.source, 'release-unknown', 'still forbidden: still off');
  for (const x of [none, forbidden, garbage]) x.g.stop();
  // Unknown at start, then read: the next read settles it.
  const late = gate({ versions: [new Error('connect ECONNREFUSED'), 'v1.37.2'] });
  await late.g.start();
  assert.equal(late.g.on, false);
  await late.clock.step(REFRESH_MS);
  assert.deepEqual(late.g.state, { on: true, source: 'kubelet-release', version: 'v1.37.2' });
  late.g.stop();
});
