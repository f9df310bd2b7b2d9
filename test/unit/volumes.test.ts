// The emptyDir reader measures what du measures, on real files in a temporary directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { diskUsage, emptyDirPath, readEmptyDirUsage } from '../../src/node/volumes';

const MiB = 1024 * 1024;

function scratch(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-volumes-'));
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
