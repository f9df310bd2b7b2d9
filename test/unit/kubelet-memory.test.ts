/**
 * The kubelet's memory numbers (src/kernel/kubelet-memory.ts), pinned on real files:
 * - the pure cgroup v2 lab's root memory.stat and /proc/meminfo, read together at idle
 *   (test/unit/fixtures/v2-root-*): cAdvisor's root working set there is runc's
 *   rootStatsFromMeminfo usage (anon + file) minus inactive_file, 7,512,064 bytes, where
 *   MemTotal - MemFree - Inactive(file) (evictd's formula before issue 31) says 47.4 MiB: kernel
 *   memory the kubelet does not count;
 * - this host's cgroup v1 root memcg (test/unit/fixtures/v1-root-*): usage_in_bytes minus
 *   total_inactive_file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { foldSlackBytes, kubeletMemory, statValue, unlistedBytes } from '../../src/kernel/kubelet-memory';
import { readCgroupMemory } from '../../src/node/memory';
import os from 'node:os';

const fixtures = path.join(__dirname, '..', '..', '..', 'test', 'unit', 'fixtures');
const read = (name: string) => fs.readFileSync(path.join(fixtures, name), 'utf8');
const MiB = 1024 * 1024;

test('the v2 root: anon + file - inactive_file of its memory.stat, the number cAdvisor gives the kubelet', () => {
  const m = kubeletMemory('v2-root', read('v2-root-memory.stat'));
  // anon 344064 + file 10129408 = 10473472; minus inactive_file 2961408.
  assert.deepEqual(m, { usageBytes: 10_473_472, inactiveFileBytes: 2_961_408, workingSetBytes: 7_512_064 });
  // The same instant's /proc/meminfo: the formula evictd used before counts 40 MiB more.
  const meminfo = read('v2-root-meminfo');
  const kb = (key: string) => Number(new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+) kB`, 'm').exec(meminfo)![1]) * 1024;
  const old = kb('MemTotal') - kb('MemFree') - kb('Inactive(file)');
  assert.equal(old, 49_664_000);
  assert.ok(old - m.workingSetBytes > 40 * MiB, `${((old - m.workingSetBytes) / MiB).toFixed(1)} MiB apart`);
});

test('a v1 memcg: usage_in_bytes - total_inactive_file (the hierarchical one)', () => {
  const stat = read('v1-root-memory.stat');
  const m = kubeletMemory('v1', stat, read('v1-root-memory.usage_in_bytes'));
  assert.equal(m.usageBytes, 1_009_999_872);
  assert.equal(m.inactiveFileBytes, 351_666_176);
  assert.equal(m.workingSetBytes, 1_009_999_872 - 351_666_176);
  assert.notEqual(statValue(stat, 'inactive_file'), m.inactiveFileBytes, 'the local inactive_file is not the one the kubelet subtracts');
});

test('a v2 cgroup: memory.current - inactive_file, never below 0; a missing key is 0, a usage that is no number is refused', () => {
  assert.deepEqual(kubeletMemory('v2', 'anon 10\ninactive_file 4096\n', '8192\n'), {
    usageBytes: 8192,
    inactiveFileBytes: 4096,
    workingSetBytes: 4096,
  });
  assert.equal(kubeletMemory('v2', 'inactive_file 9000\n', '8192').workingSetBytes, 0);
  assert.equal(kubeletMemory('v2', 'anon 1\n', '8192').inactiveFileBytes, 0);
  // "inactive_file" must not match a key that merely contains it.
  assert.equal(kubeletMemory('v2', 'total_inactive_file 4096\n', '8192').inactiveFileBytes, 0);
  assert.throws(() => kubeletMemory('v2', 'inactive_file 1\n', 'max'), /not a number of bytes/);
  assert.throws(() => kubeletMemory('v1', 'total_inactive_file 1\n', ''), /not a number of bytes/);
});

// Numbers of a v1 node memcg on this host (kernel 6.18) while a pod beside a 296 MiB ballast
// wrote synced page cache: its memory.stat was 58 MiB behind the usage, for most of a second.
const staleV1 = [
  'total_cache 150994944', // 144 MiB
  'total_rss 317718528', // 303 MiB
  'total_inactive_anon 0',
  'total_active_anon 317718528',
  'total_inactive_file 150994944',
  'total_active_file 0',
  'total_unevictable 0',
].join('\n');

test("unlisted usage: what memory.stat cannot account for yet, the usage less every LRU list and the kernel's memory", () => {
  const usage = 536_870_912; // 512 MiB, the node at its limit
  const kmem = 6_815_744; // 6.5 MiB, memory.kmem.usage_in_bytes
  const m = kubeletMemory('v1', staleV1, `${usage}\n`, { kmemText: `${kmem}\n` });
  assert.equal(m.unlistedBytes, usage - 317_718_528 - 150_994_944 - kmem, '58 MiB the statistics had not folded');
  assert.equal(m.workingSetBytes, usage - 150_994_944, "the kubelet's formula itself is unchanged: 368 MiB, 58 MiB of them page cache");
  // Folded, the same node's lists and kernel memory make up the usage: nothing unlisted.
  assert.equal(unlistedBytes('v1', staleV1.replace('total_inactive_file 150994944', 'total_inactive_file 212336640'), usage, kmem), 0);
  // Without memory.kmem.usage_in_bytes (a kernel without it) the kernel's share counts as unlisted: the pod's side.
  assert.equal(kubeletMemory('v1', staleV1, `${usage}`, {}).unlistedBytes, m.unlistedBytes! + kmem);
  assert.equal(kubeletMemory('v1', staleV1, `${usage}`).unlistedBytes, undefined, 'not asked for, not given');
  // v2: the "kernel" key and sock; before "kernel" existed, its parts.
  const v2 = 'anon 100\ninactive_anon 0\nactive_anon 100\ninactive_file 50\nactive_file 10\nunevictable 0\nsock 5\n';
  assert.equal(unlistedBytes('v2', `${v2}kernel 20\nslab 7\n`, 200), 200 - 160 - 20 - 5);
  assert.equal(unlistedBytes('v2', `${v2}slab 7\nkernel_stack 3\npagetables 2\npercpu 1\nvmalloc 1\n`, 200), 200 - 160 - 14 - 5);
  assert.equal(unlistedBytes('v2', v2, 100), 0, 'never below 0 (statistics ahead of the usage: memory freed since the fold)');
  // The v2 root's usage is memory.stat's own anon + file: nothing can be unlisted there.
  assert.equal(kubeletMemory('v2-root', 'anon 100\nfile 60\ninactive_file 50\n', undefined, {}).unlistedBytes, 0);
});

test("the node's reading counts the unlisted usage out of its working set when asked; unasked, the kubelet's formula as it is", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-unlisted-'));
  try {
    const usage = 536_870_912;
    fs.writeFileSync(path.join(dir, 'memory.usage_in_bytes'), `${usage}\n`);
    fs.writeFileSync(path.join(dir, 'memory.kmem.usage_in_bytes'), '6815744\n');
    fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), `${usage}\n`);
    fs.writeFileSync(path.join(dir, 'memory.stat'), `${staleV1}\n`);
    const machine = { totalBytes: 8 * 1024 * MiB, freeBytes: 4 * 1024 * MiB, inactiveFileBytes: 0 };
    const plain = readCgroupMemory(dir, 1, { machine })!;
    const node = readCgroupMemory(dir, 1, { machine, countUnlisted: true })!;
    const unlisted = usage - 317_718_528 - 150_994_944 - 6_815_744;
    assert.equal(plain.workingSetBytes, usage - 150_994_944);
    assert.equal(plain.unlistedBytes, undefined, 'a pod reading (unasked) reads no kernel memory counter');
    assert.equal(plain.availableBytes, 150_994_944, '144 MiB: under a 160 MiB line, the pass would evict on page cache');
    const slack = foldSlackBytes();
    assert.equal(node.workingSetBytes, plain.workingSetBytes - (unlisted - slack));
    assert.equal(node.availableBytes, plain.availableBytes + unlisted - slack, '202 MiB less the slack: what the statistics say once folded');
    assert.equal(node.unlistedBytes, unlisted);
    // Within the slack (statistics as folded as the kernel keeps them): the kubelet's number as it is.
    fs.writeFileSync(path.join(dir, 'memory.usage_in_bytes'), `${usage - unlisted + slack}\n`);
    const folded = readCgroupMemory(dir, 1, { machine, countUnlisted: true })!;
    assert.equal(folded.unlistedBytes, slack);
    assert.equal(folded.workingSetBytes, usage - unlisted + slack - 150_994_944);
    assert.equal(foldSlackBytes(4), 2 * MiB, '512 KiB per online CPU');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
