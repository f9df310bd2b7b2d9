/**
 * Kernel and /proc readers: what a negative, garbage or impossible number becomes (refused,
 * left out or clamped), one case per rule.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseKeyValues, readCgroupNumber } from '../../src/node/cgroups';
import { parseCounters } from '../../src/kernel/counters';
import { containerIdFromDirName, readContainerPressure } from '../../src/node/container-pressure';
import { readHugePagesBytes } from '../../src/node/hugepages';
import { readMeminfo } from '../../src/node/memory';
import { tempDir } from '../support/temp-dir';

test('memory.stat / memory.events / cgroup.events: only unsigned integers are kept', () => {
  const text = 'anon 4096\nfile -8192\ninactive_file 0x10\nactive_file 1e3\nshmem \nkernel 12 \nsock 18446744073709551615\n__proto__ 1\n';
  assert.deepEqual(parseKeyValues(text), { anon: 4096, kernel: 12, sock: Number('18446744073709551615') }); // u64 max: kept, as a double
});

test('PSI lines and single counters: negatives and garbage are left out, decimals kept', () => {
  assert.deepEqual(parseCounters('some avg10=0.12 avg60=-1.00 avg300=nan total=345\nfull avg10=1e2 total=7\n'), {
    some_avg10: 0.12,
    some_total: 345,
    full_total: 7,
  });
  assert.deepEqual(parseCounters('-17\n', 'usage'), {});
  assert.deepEqual(parseCounters('17301504\n', 'usage'), { usage: 17301504 });
  assert.deepEqual(parseCounters('populated 1\nfrozen -1\n'), { populated: 1 });
});

test('a single-number cgroup file with a negative or garbage value is refused, naming the file', () => {
  const dir = tempDir('cg');
  const file = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };
  assert.equal(readCgroupNumber(file('ok', '9223372036854771712\n')), 9223372036854771712);
  assert.equal(readCgroupNumber(file('max', 'max\n')), Infinity);
  assert.equal(readCgroupNumber(path.join(dir, 'absent')), null);
  for (const bad of ['-1', '1.5', '', 'x']) {
    const f = file(`bad${bad}`, `${bad}\n`);
    assert.throws(() => readCgroupNumber(f), new RegExp(`^Error: ${f.replace(/[.\\/]/g, '\\$&')}: unexpected content`), bad);
  }
});

test('/proc/meminfo: MemFree or Inactive(file) above MemTotal is clamped to MemTotal', () => {
  const m = readMeminfo('MemTotal:       1000 kB\nMemFree:        5000 kB\nInactive(file):  7000 kB\n');
  assert.deepEqual(m, { totalBytes: 1000 * 1024, freeBytes: 1000 * 1024, inactiveFileBytes: 1000 * 1024 });
  assert.deepEqual(readMeminfo('MemTotal: 1000 kB\nMemFree: 10 kB\nInactive(file): 20 kB\n'), {
    totalBytes: 1024000,
    freeBytes: 10240,
    inactiveFileBytes: 20480,
  });
  assert.throws(() => readMeminfo('MemTotal: 1000 kB\n'), /^Error: \/proc\/meminfo: no MemFree line$/);
});

test('huge page capacity: every page size, nr_hugepages pages of it; garbage and other entries count 0', () => {
  const dir = tempDir('hugepages-');
  const size = (name: string, count: string) => {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, 'nr_hugepages'), count);
  };
  assert.equal(readHugePagesBytes(dir), 0);
  size('hugepages-2048kB', '512\n');
  size('hugepages-1048576kB', '2\n');
  size('hugepages-64kB', '-3\n');
  size('hugepages-32kB', 'x\n');
  fs.mkdirSync(path.join(dir, 'other'));
  assert.equal(readHugePagesBytes(dir), 512 * 2 * 1024 * 1024 + 2 * 1024 * 1024 * 1024);
  assert.equal(readHugePagesBytes(path.join(dir, 'absent')), 0);
});

test('container cgroups under a pod cgroup: each driver and runtime naming; memory.events high/max and PSI some avg10', () => {
  const id = 'ab'.repeat(32);
  assert.equal(containerIdFromDirName(id), id);
  assert.equal(containerIdFromDirName(`cri-containerd-${id}.scope`), id);
  assert.equal(containerIdFromDirName(`crio-${id}.scope`), id);
  assert.equal(containerIdFromDirName(`crio-conmon-${id}.scope`), null);
  assert.equal(containerIdFromDirName('ab'.repeat(31)), null);
  const pod = tempDir('pod-cgroup-');
  const ctr = (name: string, files: Record<string, string>) => {
    fs.mkdirSync(path.join(pod, name));
    for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(pod, name, f), text);
  };
  ctr(`cri-containerd-${id}.scope`, {
    'memory.events': 'low 0\nhigh 1234\nmax 5\noom 0\noom_kill 0\noom_group_kill 0\n',
    'memory.pressure': 'some avg10=12.50 avg60=3.00 avg300=0.50 total=987\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=12\n',
  });
  const other = 'cd'.repeat(32);
  ctr(other, { 'memory.events': 'high -1\nmax x\n' }); // garbage counts 0; no PSI file: none
  ctr('not-a-container', { 'memory.events': 'high 9\n' });
  fs.writeFileSync(path.join(pod, 'memory.events'), 'high 1\n');
  const readings = readContainerPressure(pod).sort((a, b) => a.containerId.localeCompare(b.containerId));
  assert.deepEqual(readings, [
    { containerId: id, dir: path.join(pod, `cri-containerd-${id}.scope`), high: 1234, max: 5, psiSomeAvg10: 12.5 },
    { containerId: other, dir: path.join(pod, other), high: 0, max: 0 },
  ]);
  assert.deepEqual(readContainerPressure(path.join(pod, 'gone')), []);
});
