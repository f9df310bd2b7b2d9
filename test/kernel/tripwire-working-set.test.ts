import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { machineWorkingSetBytes } from '../../src/kernel/machine-usage';
import { tripwireUnavailable, watchTripwire } from '../../src/kernel/tripwire';
import { measureReader } from '../../src/kernel/working-set';
import { Memhog, ScratchCgroup, onRamFilesystem } from '../../src/lab/workload';
import { readCgroupMemory } from '../../src/node/memory';
import { needsPureV2, skipped } from '../support/environment';
import { MiB, missingKernel, Recorder, sleep } from './support';

// Working-set lines: the tripwire compares the kubelet's own number, computed by the BPF
// program at each charge (enum tripwire_measure, native/bpf/memcg_tripwire.h), not usage. Pure
// cgroup v2 only (the VM), as the other tripwire tests.

const V2 = '/sys/fs/cgroup';

function missingTripwire(): string | null {
  if (!fs.readFileSync(`${V2}/cgroup.subtree_control`, 'utf8').includes('memory')) return 'the memory controller is not enabled for children of the cgroup2 root';
  const why = tripwireUnavailable();
  return why === null ? null : `memcg tripwire unavailable: ${why}`;
}

/** Writes `bytes` of page cache from inside `cgroupDir` (charged there), synced so it is clean and reclaimable. */
function writePageCache(cgroupDir: string, file: string, bytes: number): void {
  const script = `echo $$ > '${path.join(cgroupDir, 'cgroup.procs')}' && exec dd if=/dev/zero of='${file}' bs=1M count=${bytes / MiB} conv=fsync status=none`;
  const r = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, `dd: ${r.stderr}`);
}

function scratchDir(): string {
  const dir = os.tmpdir();
  // tmpfs pages are shmem (anon on the LRU, never inactive_file): the test needs a disk.
  return onRamFilesystem(dir) ? '/var/tmp' : dir;
}

test("a node working-set line on the v2 root: page cache does not cross it, anonymous memory does, at the kubelet's number", async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const cg = ScratchCgroup.create(V2, 'tripwire-ws-node', 2);
  t.after(() => cg.remove());
  const file = path.join(scratchDir(), `evictd-ws-node-${process.pid}.bin`);
  t.after(() => fs.rmSync(file, { force: true }));
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());

  const ws0 = machineWorkingSetBytes();
  const line = ws0 + 96 * MiB;
  const w = watchTripwire(V2, line, 'working-set');
  t.after(() => w.close());
  assert.equal(w.measure, 'working-set');
  const rec = new Recorder(w);
  // What evictd computes for the node (src/node/memory.ts) is the same number.
  const node = readCgroupMemory(V2, 2, { root: true })!;
  assert.ok(Math.abs(node.workingSetBytes - machineWorkingSetBytes()) < 8 * MiB, 'readCgroupMemory(root) and machineWorkingSetBytes() agree');

  // 160 MiB of clean page cache: usage (MemTotal - MemFree) passes where a usage line would be,
  // the kubelet's working set does not move by much (written pages land on the inactive list).
  const usage0 = measureReader(V2, 'usage').read();
  writePageCache(cg.dir, file, 160 * MiB);
  await sleep(200);
  const usage1 = measureReader(V2, 'usage').read();
  t.diagnostic(`page cache: usage +${((usage1 - usage0) / MiB).toFixed(1)} MiB, working set +${((machineWorkingSetBytes() - ws0) / MiB).toFixed(1)} MiB`);
  assert.ok(usage1 - usage0 > 96 * MiB, 'usage passed a line 96 MiB up');
  assert.equal(rec.events.filter((e) => e.counters?.above === 1).length, 0, 'page cache alone does not cross a working-set line');

  // Anonymous memory does.
  await hog.alloc(160 * MiB);
  const up = await rec.waitEvent((e) => e.counters?.above === 1, 10_000);
  const at = up.counters!.usage_bytes;
  const now = machineWorkingSetBytes();
  t.diagnostic(`crossing: the program computed ${(at / MiB).toFixed(2)} MiB, line ${(line / MiB).toFixed(2)} MiB (${((at - line) / MiB).toFixed(2)} MiB past); /proc/meminfo right after: ${(now / MiB).toFixed(2)} MiB`);
  assert.ok(at >= line, 'fired at or past the line');
  // One anonymous charge batch (64 pages per CPU, 2 MiB for a huge page) plus the per-CPU
  // vmstat deltas not yet folded into the global counters (/proc/meminfo has the same lag).
  assert.ok(at - line < 8 * MiB, `fired ${(at - line) / MiB} MiB past the line`);
  assert.ok(now >= line - 8 * MiB, '/proc/meminfo agrees the working set is at the line');
});

test("a cgroup working-set line fires when its working set crosses, while usage sits flat at the cgroup's limit", async (t) => {
  if (skipped(t, missingKernel()) || needsPureV2(t) || skipped(t, missingTripwire())) return;
  const cg = ScratchCgroup.create(V2, 'tripwire-ws-pod', 2);
  t.after(() => cg.remove());
  cg.write('memory.max', 256 * MiB);
  const file = path.join(scratchDir(), `evictd-ws-pod-${process.pid}.bin`);
  t.after(() => fs.rmSync(file, { force: true }));
  // Page cache fills the cgroup up to near its limit.
  writePageCache(cg.dir, file, 224 * MiB);
  const hog = await Memhog.start([cg.dir]);
  t.after(() => hog.kill());
  const read = measureReader(cg.dir, 'working-set').read;
  const ws0 = read();
  const line = ws0 + 96 * MiB;
  const w = watchTripwire(cg.dir, line, 'working-set');
  t.after(() => w.close());
  const rec = new Recorder(w);
  const usageBefore = Number(cg.read('memory.current'));

  // Anonymous memory replaces the page cache: the counter stays at the limit (the cgroup reclaims
  // its own cache), the working set climbs through the line.
  await hog.alloc(160 * MiB);
  const up = await rec.waitEvent((e) => e.counters?.above === 1, 10_000);
  const at = up.counters!.usage_bytes;
  // memory.stat read now folds the kernel's statistics: the fresh working set.
  const fresh = read();
  const usageAfter = Number(cg.read('memory.current'));
  t.diagnostic(
    `usage ${(usageBefore / MiB).toFixed(1)} -> ${(usageAfter / MiB).toFixed(1)} MiB; the program computed ${(at / MiB).toFixed(2)} MiB at the crossing, line ${(line / MiB).toFixed(2)}; fresh working set after ${(fresh / MiB).toFixed(2)} MiB`,
  );
  assert.ok(usageBefore > 200 * MiB, 'the cgroup was near its limit before');
  assert.ok(at >= line, 'fired at or past the line');
  // inactive_file as last folded lags the truth: the program's working set is at most that lag
  // ahead of or behind the kubelet's; the event still fires within a few MiB of the line.
  assert.ok(at - line < 8 * MiB, `fired ${(at - line) / MiB} MiB past the line`);
  assert.ok(fresh >= line - 8 * MiB, `the kubelet's working set ${fresh / MiB} MiB is at the line when it fired`);
});
