import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');
const evictd = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });

test('--help lists the commands and exits 0', () => {
  const r = evictd('--help');
  assert.equal(r.status, 0);
  for (const c of ['run', 'simulate', 'bench', 'demo']) assert.match(r.stdout, new RegExp(`\\b${c}\\b`));
});

test('an unknown command is one line on stderr, exit 2, no stack', () => {
  const r = evictd('frobnicate');
  assert.equal(r.status, 2);
  assert.equal(r.stderr.trim().split('\n').length, 1);
  assert.match(r.stderr, /frobnicate/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});
