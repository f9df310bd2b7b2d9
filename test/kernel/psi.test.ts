import assert from 'node:assert/strict';
import os from 'node:os';
import { test } from 'node:test';
import { addon } from '../../src/kernel/addon';
import { watchCgroupEvents } from '../../src/kernel/cgroup-events';
import { hasCapSysResource, psiWindowInForce, watchPsi } from '../../src/kernel/psi';
import type { KernelError } from '../../src/kernel/types';
import { memhogPath } from '../../src/lab/workload';
import { onRamFilesystem, ScratchCgroup, spawnInCgroups, thrashFile } from '../../src/lab/workload';
import { skipped, slow } from '../support/environment';
import { memory, MiB, missingKernel, Recorder, v2Root } from './support';

test('the unprivileged PSI window rule: multiples of 2 s without CAP_SYS_RESOURCE', () => {
  assert.equal(psiWindowInForce(1_000_000, false), 2_000_000);
  assert.equal(psiWindowInForce(2_000_000, false), 2_000_000);
  assert.equal(psiWindowInForce(2_000_001, false), 4_000_000);
  assert.equal(psiWindowInForce(1_000_000, true), 1_000_000);
  assert.equal(hasCapSysResource('CapEff:\t000001fffeffffff\n'), false);
  assert.equal(hasCapSysResource('CapEff:\t000001ffffffffff\n'), true);
});

test('a PSI trigger reports the window in force; the kernel rejects what the rule forbids', (t) => {
  if (skipped(t, missingKernel())) return;
  const privileged = hasCapSysResource();
  const w = watchPsi('/proc/pressure/memory', { kind: 'some', stallUs: 150_000, windowUs: 1_000_000 });
  t.after(() => w.close());
  assert.equal(w.windowUs, privileged ? 1_000_000 : 2_000_000);
  assert.equal(w.trigger, `some 150000 ${w.windowUs}`);
  if (!privileged) {
    // Without the rounding, the kernel answers EINVAL: the rule is real on this host.
    assert.throws(
      () => addon().openPsiTrigger('/proc/pressure/memory', 'some 150000 1000000', () => undefined),
      (err: KernelError) => err.code === 'EINVAL' && err.syscall === 'write' && err.path === '/proc/pressure/memory' && err.errno === -22,
    );
  }
  assert.throws(() => watchPsi('/proc/pressure/memory', { kind: 'some', stallUs: 3_000_000, windowUs: 2_000_000 }), /stallUs/);
});

test('PSI triggers (and on cgroup v2 memory.events) fire under real page-cache thrash in a 64 MiB memcg', async (t) => {
  if (skipped(t, missingKernel({ memory: true, cgroup2: true }))) return;
  const dir = os.tmpdir();
  if (skipped(t, onRamFilesystem(dir) ? `${dir} is on tmpfs: page-cache thrash needs a disk filesystem` : null)) return;
  const file = thrashFile(dir, 256 * MiB);
  // The 64 MiB limit: the v1 memory controller on a hybrid host (PSI then comes from a second,
  // controller-less cgroup2 group), or one cgroup2 group on pure v2.
  const mem = memory();
  const memcg = ScratchCgroup.create(mem.root, 'test', mem.version);
  t.after(() => memcg.remove());
  memcg.write(mem.limit, 64 * MiB);
  const unified = mem.version === 2 ? memcg : ScratchCgroup.create(v2Root(), 'test', 2);
  t.after(() => unified.remove());

  // With CAP_SYS_RESOURCE (root in the VM) the kernel takes a 500 ms window; without it the
  // window must be a multiple of 2 s.
  const trigger = hasCapSysResource()
    ? { kind: 'some' as const, stallUs: 50_000, windowUs: 500_000 }
    : { kind: 'some' as const, stallUs: 20_000, windowUs: 2_000_000 };
  const cgroupPsi = new Recorder(watchPsi(unified.file('memory.pressure'), trigger));
  const systemPsi = new Recorder(watchPsi('/proc/pressure/memory', trigger));
  // The memory controller's own word on v2: memory.events, whose "max" counter grows each time
  // the group runs into memory.max and reclaims.
  const controller = mem.version === 2 ? new Recorder(watchCgroupEvents(memcg.file('memory.events'))) : null;
  const recorders = controller ? [cgroupPsi, systemPsi, controller] : [cgroupPsi, systemPsi];
  t.after(() => Promise.all(recorders.map((r) => r.watcher.close())).then(() => undefined));
  await controller?.watcher.ready();

  const child = spawnInCgroups(mem.version === 1 ? [memcg.dir, unified.dir] : [memcg.dir], [memhogPath, 'thrash', file, '40']);
  t.after(() => child.kill('SIGKILL'));

  const psi = await cgroupPsi.waitEvent(() => true, slow(30_000));
  assert.equal(psi.kind, 'psi');
  assert.equal(psi.source, unified.file('memory.pressure'));
  assert.ok((psi.counters?.some_total ?? 0) > 0, 'the cgroup recorded stall time');
  await systemPsi.waitEvent(() => true, slow(30_000));
  if (controller) {
    const max = await controller.waitEvent((e) => (e.counters?.max ?? 0) > 0, slow(30_000));
    assert.equal(max.kind, 'memory-events');
    assert.equal(max.counters?.oom_kill, 0, 'page cache is reclaimed, nothing is OOM-killed');
  }
  for (const r of recorders) assert.equal(r.errors.length, 0);
});
