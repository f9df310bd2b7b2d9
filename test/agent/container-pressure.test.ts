/**
 * KEP-5986's per-container signals on real cgroup v2 files (node/container-pressure.ts): a
 * container held by its memory.high counts `high` events and stalls (PSI), one that is not
 * counts none.
 */
import path from 'node:path';
import fs from 'node:fs';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readContainerPressure } from '../../src/node/container-pressure';
import { missingRoot, needsPureV2, skipped } from '../support/environment';
import { CgroupFixture } from './cgroup-fixture';

const MiB = 1024 * 1024;
const fixtures: CgroupFixture[] = [];
after(async () => {
  for (const f of fixtures) await f.cleanup();
});

test('memory.events high and PSI of a container throttled by its memory.high; an unthrottled one counts nothing', async (t) => {
  if (skipped(t, missingRoot())) return;
  if (needsPureV2(t)) return;
  const f = new CgroupFixture('evictd-ctr-pressure');
  fixtures.push(f);
  const held = `cri-containerd-${'a1'.repeat(32)}.scope`;
  const free = 'b2'.repeat(32);
  const pod = 'kubepods/burstable/podcp1';
  f.mkdir(`${pod}/${held}`);
  f.mkdir(`${pod}/${free}`);
  fs.writeFileSync(path.join(f.memDir(`${pod}/${held}`), 'memory.high'), String(16 * MiB));
  // 24 MiB touched page by page through a 16 MiB memory.high: reclaim (and, with nothing to reclaim, a stall) on every charge past it
  const touch = (mib: number) =>
    `const b = Buffer.alloc(${mib}*1024*1024); for (let i = 0; i < b.length; i += 4096) b[i] = 1; console.log('done'); setInterval(() => {}, 1000);`;
  const hog = f.spawnIn(`${pod}/${held}`, touch(24));
  const idle = f.spawnIn(`${pod}/${free}`, touch(8));
  await CgroupFixture.waitLine(hog, /done/, 120000);
  await CgroupFixture.waitLine(idle, /done/, 120000);
  const byId = new Map(readContainerPressure(f.memDir(pod)).map((r) => [r.containerId, r]));
  const h = byId.get('a1'.repeat(32))!;
  const i = byId.get(free)!;
  assert.ok(h.high > 0, `held container: high ${h.high}`);
  assert.equal(i.high, 0);
  assert.equal(i.max, 0);
  // PSI is there on this kernel for both; the held one stalled, the free one hardly
  assert.notEqual(h.psiSomeAvg10, undefined);
  assert.notEqual(i.psiSomeAvg10, undefined);
  assert.ok(h.psiSomeAvg10! > i.psiSomeAvg10!, `psi some avg10: held ${h.psiSomeAvg10}, free ${i.psiSomeAvg10}`);
});
