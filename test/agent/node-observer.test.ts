import os from 'node:os';
import path from 'node:path';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { detectCgroups } from '../../src/node/cgroups';
import { readCgroupMemory, readMeminfo } from '../../src/node/memory';
import { listPodCgroups, podUidFromDirName, qosFromCgroupPath } from '../../src/node/pod-cgroups';
import { kernelPidStats } from '../../src/node/pids';
import { NodeObserver } from '../../src/node/observer';
import { HUGEPAGES_SYSFS, readHugePagesBytes } from '../../src/node/hugepages';
import { workingSetLines } from '../../src/agent/memory-lines';
import { compileConfig } from '../../src/policy/config';
import { missingRoot, skipped, memcgV1Root, cgroup2Root } from '../support/environment';
import { CgroupFixture } from './cgroup-fixture';

const MiB = 1024 * 1024;
const fixtures: CgroupFixture[] = [];
after(async () => {
  for (const f of fixtures) await f.cleanup();
});

function missingCgroups(): string | null {
  return missingRoot() ?? (memcgV1Root() || cgroup2Root() ? null : 'needs a cgroup memory controller');
}

test('detects the layout of this machine from mountinfo', (t) => {
  if (skipped(t, missingCgroups())) return;
  const l = detectCgroups();
  assert.ok(fs.existsSync(l.memoryMount));
  if (memcgV1Root()) {
    assert.equal(l.memoryVersion, 1);
    assert.equal(l.mode, cgroup2Root() ? 'hybrid' : 'v1');
  } else {
    assert.equal(l.mode, 'v2');
  }
});

test('hybrid text: v1 memory plus a controller-less cgroup2 mount', () => {
  const l = detectCgroups(
    [
      '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
      '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    ].join('\n'),
  );
  assert.deepEqual(l, {
    mode: 'hybrid',
    memoryMount: '/sys/fs/cgroup/memory',
    memoryVersion: 1,
    unifiedMount: '/sys/fs/cgroup/unified',
    pidsMount: '/sys/fs/cgroup/pids',
  });
  const v1 = detectCgroups('35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n');
  assert.equal(v1.mode, 'v1');
  assert.equal(v1.unifiedMount, null);
  assert.throws(() => detectCgroups('1 1 0:1 / / rw - ext4 /dev/vda rw\n'), /no cgroup memory controller/);
});

test('pod cgroup names and QoS, both cgroup drivers', () => {
  assert.equal(podUidFromDirName('pod0a1b-22'), '0a1b-22');
  assert.equal(podUidFromDirName('kubepods-burstable-pod0a1b_22.slice'), '0a1b-22');
  assert.equal(podUidFromDirName('kubepods-pod0a1b_22.slice'), '0a1b-22');
  assert.equal(podUidFromDirName('burstable'), null);
  assert.equal(podUidFromDirName('cri-containerd-abc.scope'), null);
  assert.equal(qosFromCgroupPath('/kubepods/burstable/podx'), 'Burstable');
  assert.equal(qosFromCgroupPath('/kubepods/besteffort/podx'), 'BestEffort');
  assert.equal(qosFromCgroupPath('/kubepods/podx'), 'Guaranteed');
  assert.equal(qosFromCgroupPath('/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podx.slice'), 'BestEffort');
});

test('memory.available of a limited cgroup follows a real allocation: working set = usage - inactive_file, with page cache in the cgroup', async (t) => {
  if (skipped(t, missingCgroups())) return;
  const f = new CgroupFixture();
  fixtures.push(f);
  f.mkdir();
  f.setMemoryLimit(256 * MiB);
  const before = readCgroupMemory(f.memDir(), f.layout.memoryVersion)!;
  assert.equal(before.capacityBytes, 256 * MiB);
  assert.equal(before.limited, true);
  // 96 MiB of anonymous memory and 64 MiB of page cache (a file on disk, written once: it sits
  // on the inactive file list), so a reading that confused the counters would be off by tens
  // of MiB.
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-ws-')), 'cache');
  t.after(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  const child = f.spawnIn(
    '',
    `const fs = require('node:fs'); const b = Buffer.alloc(96*1024*1024, 1); const fd = fs.openSync(${JSON.stringify(file)}, 'w'); ` +
      `const chunk = Buffer.alloc(1024*1024, 7); for (let i = 0; i < 64; i++) fs.writeSync(fd, chunk); fs.fsyncSync(fd); fs.closeSync(fd); ` +
      `console.log('ready'); setInterval(() => b[0]++, 1000);`,
  );
  await CgroupFixture.waitLine(child, /ready/);
  const during = readCgroupMemory(f.memDir(), f.layout.memoryVersion)!;
  // The kernel's own files, read here apart from the code under test.
  const v1 = f.layout.memoryVersion === 1;
  const usage = Number(fs.readFileSync(path.join(f.memDir(), v1 ? 'memory.usage_in_bytes' : 'memory.current'), 'utf8'));
  const stat = fs.readFileSync(path.join(f.memDir(), 'memory.stat'), 'utf8');
  const inactiveFile = Number(new RegExp(`^${v1 ? 'total_inactive_file' : 'inactive_file'} (\\d+)$`, 'm').exec(stat)?.[1]);
  assert.ok(inactiveFile >= 32 * MiB, `the file's page cache is on the inactive list: ${inactiveFile / MiB} MiB`);
  assert.ok(Math.abs(during.inactiveFileBytes - inactiveFile) < 2 * MiB, `inactive_file ${during.inactiveFileBytes} against ${inactiveFile}`);
  assert.ok(Math.abs(during.usageBytes - usage) < 4 * MiB, `usage ${during.usageBytes} against ${usage}`);
  assert.equal(during.workingSetBytes, Math.max(0, during.usageBytes - during.inactiveFileBytes));
  // The working set holds the anonymous memory and not the page cache.
  assert.ok(during.workingSetBytes >= 96 * MiB, `working set ${during.workingSetBytes / MiB} MiB`);
  assert.ok(during.workingSetBytes <= during.usageBytes - 32 * MiB, `working set ${during.workingSetBytes / MiB} MiB of usage ${during.usageBytes / MiB} MiB`);
  assert.equal(during.availableBytes, 256 * MiB - during.workingSetBytes);
  assert.ok(during.availableBytes < before.availableBytes - 90 * MiB);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const afterKill = readCgroupMemory(f.memDir(), f.layout.memoryVersion)!;
  assert.ok(afterKill.availableBytes > during.availableBytes + 90 * MiB);
});

test('an unlimited cgroup has the machine RAM as capacity; a removed one reads as null', (t) => {
  if (skipped(t, missingCgroups())) return;
  const f = new CgroupFixture();
  fixtures.push(f);
  f.mkdir();
  const r = readCgroupMemory(f.memDir(), f.layout.memoryVersion)!;
  assert.equal(r.limited, false);
  assert.equal(r.capacityBytes, readMeminfo().totalBytes);
  assert.equal(readCgroupMemory(f.memDir('no-such-cgroup'), f.layout.memoryVersion), null);
});

test('the observer: node memory, allocatable, pids from a pids.max node, pods with QoS and usage', async (t) => {
  if (skipped(t, missingCgroups())) return;
  const f = new CgroupFixture();
  fixtures.push(f);
  f.mkdir();
  f.setMemoryLimit(512 * MiB);
  f.mkdir('kubepods');
  f.setMemoryLimit(400 * MiB, 'kubepods');
  f.mkdir('kubepods/podaaaa-1');
  f.mkdir('kubepods/burstable/podbbbb-2');
  f.mkdir('kubepods/besteffort/podcccc-3');
  f.mkdir('kubepods/besteffort/podcccc-3/ctr');
  const hasPids = f.layout.pidsMount !== null;
  if (hasPids) f.setPidsMax(300);
  const child = f.spawnIn(
    'kubepods/besteffort/podcccc-3/ctr',
    "const b = Buffer.alloc(64*1024*1024, 1); console.log('ready'); setInterval(() => b[0]++, 1000);",
  );
  await CgroupFixture.waitLine(child, /ready/);

  const obs = new NodeObserver({ layout: f.layout, cgroupRoot: f.root, podCgroupRoot: `${f.root}/kubepods`, nodefsPath: '/' }).observe();
  assert.ok(obs.node.memory!.workingSetBytes >= 64 * MiB);
  assert.equal(obs.memory.capacityBytes, 512 * MiB);
  assert.equal(obs.node.memory!.availableBytes, 512 * MiB - obs.node.memory!.workingSetBytes);
  assert.equal(obs.allocatable!.capacityBytes, 400 * MiB);
  assert.equal(obs.node.allocatableMemory!.availableBytes, 400 * MiB - obs.node.allocatableMemory!.workingSetBytes);
  const st = fs.statfsSync('/');
  assert.equal(obs.node.nodefs!.capacityBytes, st.blocks * st.bsize);
  if (hasPids) {
    assert.equal(obs.node.pid!.maxPID, 300);
    assert.ok(obs.node.pid!.running >= 1);
  }
  assert.deepEqual([...obs.pods.values()].map((p) => [p.uid, p.qos]).sort(), [
    ['aaaa-1', 'Guaranteed'],
    ['bbbb-2', 'Burstable'],
    ['cccc-3', 'BestEffort'],
  ]);
  const hog = obs.pods.get('cccc-3')!;
  assert.ok(hog.usage.memoryWorkingSetBytes >= 64 * MiB, `pod working set ${hog.usage.memoryWorkingSetBytes}`);
  assert.ok(hog.usage.processes! >= 1);
  assert.ok(obs.pods.get('aaaa-1')!.usage.memoryWorkingSetBytes < 8 * MiB);
  assert.deepEqual(listPodCgroups(f.layout.memoryMount, `${f.root}/none`), []);
});

// HugepageAwareEviction (the kubelet's summary adjustForHugePages, v1.37): huge pages reserved on
// the machine come out of the node's memory.available and its capacity, and so move the memory
// lines; the pods cgroup keeps its own numbers. Real sysfs: 16 pages of 2 MiB reserved for the test.
test('huge pages reserved: out of the node memory.available and its lines, not the pods cgroup', async (t) => {
  if (skipped(t, missingCgroups())) return;
  const nr = path.join(HUGEPAGES_SYSFS, 'hugepages-2048kB', 'nr_hugepages');
  if (skipped(t, fs.existsSync(nr) ? null : 'needs 2 MiB huge pages')) return;
  const before = fs.readFileSync(nr, 'utf8').trim();
  t.after(() => fs.writeFileSync(nr, before));
  fs.writeFileSync(nr, String(Number(before) + 16));
  const reserved = readHugePagesBytes();
  assert.ok(reserved >= 2 * MiB, `the kernel reserved ${reserved} bytes of huge pages`);
  assert.equal(reserved % (2 * MiB), 0);
  const f = new CgroupFixture();
  fixtures.push(f);
  f.mkdir();
  f.setMemoryLimit(512 * MiB);
  f.mkdir('kubepods');
  f.setMemoryLimit(400 * MiB, 'kubepods');
  const opts = { layout: f.layout, cgroupRoot: f.root, podCgroupRoot: `${f.root}/kubepods`, nodefsPath: '/' };
  const plain = new NodeObserver(opts).observeMemory();
  const aware = new NodeObserver({ ...opts, hugePagesBytes: () => readHugePagesBytes() }).observeMemory();
  assert.equal(plain.memory.capacityBytes, 512 * MiB);
  assert.equal(aware.memory.hugePagesBytes, reserved);
  // the working sets of two reads of an idle cgroup agree within a few pages
  assert.ok(Math.abs(aware.memory.workingSetBytes - plain.memory.workingSetBytes) < MiB);
  assert.equal(aware.memory.availableBytes, Math.max(0, 512 * MiB - aware.memory.workingSetBytes - reserved));
  assert.equal(aware.memory.capacityBytes, aware.memory.availableBytes + aware.memory.workingSetBytes);
  assert.equal(aware.allocatable!.capacityBytes, 400 * MiB);
  const policy = compileConfig({ evictionHard: { 'memory.available': '100Mi' } });
  assert.deepEqual(workingSetLines(policy, 'memory.available', aware.memory), [512 * MiB - reserved - 100 * MiB + 1]);
});

test('kernel pid stats: a limit and a live count', () => {
  const s = kernelPidStats();
  assert.ok(s.maxPID >= 301);
  assert.ok(s.running > 1 && s.running < s.maxPID);
});
