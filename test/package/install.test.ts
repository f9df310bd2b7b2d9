// The package as an embedder gets it: `npm pack`, `npm install` of the tarball into a fresh
// project (the addon is built there by node-gyp), then `require('evictd')` and the example of
// docs/embedding.md, run from that project exactly as printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const repo = path.resolve(__dirname, '..', '..', '..');

function sh(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 << 20 });
}

/** The first ```js block of the doc: the example the doc calls complete. */
function docExample(): string {
  const doc = fs.readFileSync(path.join(repo, 'docs', 'embedding.md'), 'utf8');
  const m = /```js\n([\s\S]*?)```/.exec(doc);
  assert.ok(m, 'docs/embedding.md has a ```js example');
  return m[1];
}

test('npm pack + npm install: require("evictd") loads and the docs/embedding.md example runs', { timeout: 600_000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-embed-'));
  try {
    const tgz = sh('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir], repo).trim().split('\n').pop()!;
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'embedder', version: '1.0.0', private: true }));
    sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', path.join(dir, tgz)], app);

    // Loads from the installed copy, not from this checkout.
    const where = sh('node', ['-e', "process.stdout.write(require.resolve('evictd'))"], app);
    assert.ok(where.startsWith(path.join(app, 'node_modules', 'evictd')), where);
    const loaded = sh('node', ['-e', "const e = require('evictd'); process.stdout.write(String(e.nativeAvailable()) + ' ' + typeof e.evaluate)"], app);
    assert.equal(loaded, 'true function', 'the addon was built on install and the policy is there');

    fs.writeFileSync(path.join(app, 'example.js'), docExample());
    const out = sh('node', ['example.js'], app);
    // What the doc says the example prints.
    assert.match(out, /^conditions: MemoryPressure$/m);
    assert.match(out, /^threshold met: memory\.available hard < 500Mi$/m);
    assert.match(out, /^threshold met: memory\.available soft < 1Gi$/m);
    assert.match(out, /^evict first: default\/batch \(grace 0s\)$/m);
    assert.match(out, /^message: The node was low on resource: memory\./m);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
