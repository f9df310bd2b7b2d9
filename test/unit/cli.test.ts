import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/temp-dir';

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

test("a lab command's bad input, thrown from the lab's own bundle, is still one line and exit 2", () => {
  // main.bundle.js loads the demo and the benches from lab-commands.bundle.js, whose error classes
  // are copies: main.ts tells an error's kind by its name.
  const bundle = path.join(__dirname, '..', '..', 'src', 'cli', 'main.bundle.js');
  assert.ok(fs.existsSync(bundle), 'npm run build made the bundle');
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(bundle)}).main(['bench', 'nope'])`], { encoding: 'utf8' });
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.stderr, 'evictd: bench: unknown benchmark "nope" (one of policy, notify, cri, protect, memory-pressure)\n');
});

test('failure(): a usage error of another copy of errors.ts is a usage error; a TypeError is a bug', () => {
  const { failure } = require('../../src/cli/main') as typeof import('../../src/cli/main');
  const Copy = class UsageError extends Error {
    override readonly name = 'UsageError';
  };
  assert.deepEqual(failure(new Copy('--x: "y": no such flag')), { code: 2, text: 'evictd: --x: "y": no such flag\n' });
  const bug = failure(Object.assign(new TypeError('x is undefined'), { name: 'TypeError' }));
  assert.equal(bug.code, 1);
  assert.match(bug.text, /TypeError: x is undefined\n\s+at /);
});

test('bin/evictd.js runs the bundle; in a source checkout, the tree when it was compiled after the bundle', () => {
  // A copy of bin/evictd.js over a dist/ whose two entries say which one ran.
  const dir = tempDir('bin');
  try {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.copyFileSync(bin, path.join(dir, 'bin', 'evictd.js'));
    const cli = path.join(dir, 'dist', 'src', 'cli');
    fs.mkdirSync(cli, { recursive: true });
    for (const name of ['main.js', 'main.bundle.js']) {
      fs.writeFileSync(path.join(cli, name), `exports.main = () => process.stdout.write(${JSON.stringify(name)});\n`);
    }
    const ran = () => spawnSync(process.execPath, [path.join(dir, 'bin', 'evictd.js')], { encoding: 'utf8' }).stdout;
    const at = (name: string, s: number) => fs.utimesSync(path.join(cli, name), s, s);
    // An installed package (no src/): the bundle, whatever the unpacking left as mtimes.
    at('main.bundle.js', 1000);
    at('main.js', 3000);
    assert.equal(ran(), 'main.bundle.js', 'installed: the bundle');
    // A source checkout.
    fs.mkdirSync(path.join(dir, 'src'));
    assert.equal(ran(), 'main.js', 'the tree compiled after the bundle (tsc alone): the tree');
    at('main.bundle.js', 3000);
    assert.equal(ran(), 'main.bundle.js', 'built together: the bundle');
    at('main.bundle.js', 4000);
    assert.equal(ran(), 'main.bundle.js', 'bundled after the tree: the bundle');
    fs.rmSync(path.join(cli, 'main.bundle.js'));
    assert.equal(ran(), 'main.js', 'no bundle: the tree');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
