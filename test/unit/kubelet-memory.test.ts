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
import { kubeletMemory, statValue } from '../../src/kernel/kubelet-memory';

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
  assert.deepEqual(kubeletMemory('v2', 'anon 10\ninactive_file 4096\n', '8192\n'), { usageBytes: 8192, inactiveFileBytes: 4096, workingSetBytes: 4096 });
  assert.equal(kubeletMemory('v2', 'inactive_file 9000\n', '8192').workingSetBytes, 0);
  assert.equal(kubeletMemory('v2', 'anon 1\n', '8192').inactiveFileBytes, 0);
  // "inactive_file" must not match a key that merely contains it.
  assert.equal(kubeletMemory('v2', 'total_inactive_file 4096\n', '8192').inactiveFileBytes, 0);
  assert.throws(() => kubeletMemory('v2', 'inactive_file 1\n', 'max'), /not a number of bytes/);
  assert.throws(() => kubeletMemory('v1', 'total_inactive_file 1\n', ''), /not a number of bytes/);
});
