// The emptyDir reader measures what du measures, on real files in a temporary directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { diskUsage, emptyDirPath, readEmptyDirUsage } from '../../src/node/volumes';
import { tempDir } from '../support/temp-dir';

const MiB = 1024 * 1024;

function scratch(t: { after(fn: () => void): void }): string {
  const dir = tempDir('volumes');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('diskUsage counts allocated blocks and inodes of the whole tree, like du -x -s', async (t) => {
  const dir = scratch(t);
  fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'a', 'b', 'data'), Buffer.alloc(3 * MiB, 1));
  // Sparse: 64 MiB long, one page written. du counts the page, not the length.
  const fd = fs.openSync(path.join(dir, 'sparse'), 'w');
  fs.writeSync(fd, Buffer.alloc(4096, 1), 0, 4096, 64 * MiB - 4096);
  fs.closeSync(fd);
  // A hard link is the same blocks: counted once.
  fs.linkSync(path.join(dir, 'a', 'b', 'data'), path.join(dir, 'link'));
  const u = await diskUsage(dir);
  assert.ok(u);
  assert.equal(u.inodes, 5, 'the dir, a, b, data and sparse (the link is data again)');
  assert.ok(u.bytes >= 3 * MiB + 4096, `${u.bytes} bytes hold the written data`);
  assert.ok(u.bytes < 4 * MiB, `${u.bytes} bytes: the sparse file's hole and the link are not counted`);
  // Agrees with du itself.
  const du = Number(execFileSync('du', ['-x', '-s', '-B1', dir], { encoding: 'utf8' }).split('\t')[0]);
  assert.equal(u.bytes, du);
});

test('diskUsage of a path that does not exist is null; emptyDir paths follow the kubelet layout', async (t) => {
  const root = scratch(t);
  assert.equal(await diskUsage(path.join(root, 'nope')), null);
  assert.equal(emptyDirPath('/var/lib/kubelet', 'u-1', 'cache'), '/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~empty-dir/cache');
  fs.mkdirSync(emptyDirPath(root, 'u-1', 'cache'), { recursive: true });
  fs.writeFileSync(path.join(emptyDirPath(root, 'u-1', 'cache'), 'f'), Buffer.alloc(MiB, 1));
  const used = await readEmptyDirUsage(root, 'u-1', ['cache', 'not-yet-created']);
  assert.equal(used.length, 1, 'a volume not on disk is left out');
  assert.equal(used[0].name, 'cache');
  assert.ok(used[0].usedBytes >= MiB);
  assert.equal(used[0].inodesUsed, 2);
});

// The tenant decides what its emptyDir holds: the walk stops at its bounds and says so, and what
// it counted is then never more than du's count (a lower bound: late, never a wrong eviction).
const tight = { entries: 1_000_000, timeMs: 60_000, depth: 128, linkedInodes: 262_144 };

test('diskUsage within its bounds: entries, time, depth and remembered links each stop it with a lower bound', async (t) => {
  const dir = scratch(t);
  for (let i = 0; i < 40; i++) fs.writeFileSync(path.join(dir, `f${i}`), Buffer.alloc(8192, 1));
  for (let i = 0; i < 4; i++) fs.linkSync(path.join(dir, `f${i}`), path.join(dir, `l${i}`));
  let deep = dir;
  for (let i = 0; i < 6; i++) fs.mkdirSync((deep = path.join(deep, `d${i}`)));
  fs.writeFileSync(path.join(deep, 'bottom'), Buffer.alloc(8192, 1));
  const du = Number(execFileSync('du', ['-x', '-s', '-B1', dir], { encoding: 'utf8' }).split('\t')[0]);

  const whole = await diskUsage(dir, tight);
  assert.equal(whole!.partial, undefined);
  assert.equal(whole!.bytes, du);
  assert.equal(whole!.inodes, 1 + 40 + 6 + 1, 'the dir, 40 files (4 linked twice), 6 nested dirs, the bottom file');

  const entries = await diskUsage(dir, { ...tight, entries: 10 });
  assert.equal(entries!.partial, 'entries');
  assert.ok(entries!.inodes <= 11 && entries!.bytes < du, JSON.stringify(entries));

  // A clock that jumps past the deadline at the first entry.
  let calls = 0;
  const time = await diskUsage(dir, { ...tight, timeMs: 1000 }, () => (calls++ === 0 ? 0 : 5000));
  assert.equal(time!.partial, 'time');
  assert.equal(time!.inodes, 1);

  const depth = await diskUsage(dir, { ...tight, depth: 3 });
  assert.equal(depth!.partial, 'depth');
  assert.equal(depth!.inodes, 1 + 40 + 3, 'd0 and d1 entered, d2 counted but not entered');

  const links = await diskUsage(dir, { ...tight, linkedInodes: 2 });
  assert.equal(links!.partial, 'links');
  assert.ok(links!.bytes <= du - 2 * 8192, `two linked files not remembered are not counted: ${links!.bytes} of ${du}`);
});

test('readEmptyDirUsage passes a walk cut short on as partial', async (t) => {
  const root = scratch(t);
  const vol = emptyDirPath(root, 'u-2', 'cache');
  fs.mkdirSync(vol, { recursive: true });
  fs.writeFileSync(path.join(vol, 'f'), Buffer.alloc(MiB, 1));
  fs.writeFileSync(path.join(vol, 'g'), Buffer.alloc(MiB, 1));
  const [whole] = await readEmptyDirUsage(root, 'u-2', ['cache']);
  assert.equal(whole!.partial, undefined);
  assert.equal(whole!.inodesUsed, 3);
  const [cut] = await readEmptyDirUsage(root, 'u-2', ['cache'], { ...tight, entries: 1 });
  assert.equal(cut!.partial, 'entries');
  assert.equal(cut!.inodesUsed, 2);
});
