// The package as an embedder gets it: `npm pack`, `npm install` of the tarball into a fresh
// project with no compiler on the PATH (the prebuilt addon loads: node-gyp-build), then
// `require('evictd')` and the example of docs/embedding.md, run from that project exactly as
// printed. The tarball holds the product alone (no lab, no tests, no VM scripts, no native test
// tool), and the CLI installed from it says in one line that the demo and the benches need a
// source checkout. Then an install that compiles the addon (node-gyp, as where no prebuilt one
// loads) on a machine without the BPF toolchain: the tripwire is built in all the same.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { documentedNames } from './documented-api';

const repo = path.resolve(__dirname, '..', '..', '..');

function sh(cmd: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): string {
  return execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 << 20 });
}

let dir = '';
let tarball = '';
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-embed-'));
  // What prepack does (the pack below skips scripts: prepare would rebuild all of dist/).
  sh('node', ['scripts/prebuilds.mjs'], repo);
  tarball = path.join(dir, sh('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir], repo).trim().split('\n').pop()!);
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A fresh project with the tarball installed into it; returns the project dir and the install's output. */
function install(name: string, env?: NodeJS.ProcessEnv, opts?: { hide: string[] }): { app: string; output: string } {
  const app = path.join(dir, name);
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }));
  // --foreground-scripts: the addon build's own lines (node-gyp) reach the output.
  const npm = ['npm', 'install', '--no-audit', '--no-fund', '--prefer-offline', '--foreground-scripts', tarball];
  // `hide`: directories covered by an empty one for this install only (a private mount namespace).
  const empty = path.join(dir, 'empty');
  if (opts) fs.mkdirSync(empty, { recursive: true });
  const hiding = opts ? opts.hide.map((d) => `mount --bind ${empty} ${d} && `).join('') : '';
  const [cmd, ...args] = opts ? ['unshare', '-m', 'sh', '-c', `${hiding}exec "$@"`, 'sh', ...npm] : npm;
  const r = spawnSync(cmd, args, {
    cwd: app,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 << 20,
  });
  const output = `${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, `npm install of the tarball failed:\n${output.slice(-4000)}`);
  return { app, output };
}

/** The first ```js block of the doc: the example the doc calls complete. */
function docExample(): string {
  const doc = fs.readFileSync(path.join(repo, 'docs', 'embedding.md'), 'utf8');
  const m = /```js\n([\s\S]*?)```/.exec(doc);
  assert.ok(m, 'docs/embedding.md has a ```js example');
  return m[1];
}

/**
 * An environment with no compiler: PATH holds node, npm and sh alone (no cc, g++, make, python3),
 * and nothing asks for a build from source.
 */
function noCompiler(): NodeJS.ProcessEnv {
  const bin = path.join(dir, 'no-compiler-bin');
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(bin);
    const npmCli = fs.realpathSync(sh('sh', ['-c', 'command -v npm'], dir).trim());
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    fs.symlinkSync(npmCli, path.join(bin, 'npm'));
    fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));
  }
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: bin };
  for (const k of Object.keys(env)) if (/^npm_config_build_from_source$/i.test(k)) delete env[k];
  return env;
}

let embedderApp = '';
/** The one install the embedder's tests share. */
let embedderOutput = '';
function embedder(): string {
  if (!embedderApp) ({ app: embedderApp, output: embedderOutput } = install('embedder', noCompiler()));
  return embedderApp;
}

test('the tarball holds the product: no lab, no tests, no VM or harness scripts, no native test tool', () => {
  const files = sh('tar', ['-tzf', tarball], dir)
    .split('\n')
    .filter((f) => f !== '')
    .map((f) => f.replace(/^package\//, ''));
  const refused = files.filter(
    (f) =>
      f.startsWith('dist/src/lab/') ||
      f === 'dist/src/cli/lab-commands.bundle.js' ||
      f.startsWith('dist/test/') ||
      f.startsWith('test/') ||
      f.startsWith('scripts/') ||
      f.startsWith('native/tools/') ||
      f.startsWith('src/'),
  );
  assert.deepEqual(refused, []);
  // What an install needs: the CLI, the compiled product, and what node-gyp builds the addon from.
  for (const f of [
    'package.json',
    'bin/evictd.js',
    'dist/src/index.js',
    'dist/src/index.d.ts',
    'dist/src/cli/main.js',
    'dist/src/cli/main.bundle.js',
    'prebuilds/linux-x64/node.napi.glibc.node',
    'binding.gyp',
    'native/addon.cc',
    'native/bpf/build.sh',
    'native/bpf/embed.js',
    'native/bpf/memcg_tripwire.bpf.c',
    'native/bpf/memcg_tripwire.bpf.o',
    'docs/embedding.md',
  ]) {
    assert.ok(files.includes(f), `${f} is in the tarball`);
  }
  assert.ok(
    files.some((f) => f.startsWith('proto/')),
    'the CRI protos are in the tarball',
  );
});

test('npm pack + npm install: require("evictd") loads and the docs/embedding.md example runs', { timeout: 600_000 }, () => {
  const app = embedder();
  // Loads from the installed copy, not from this checkout.
  const where = sh('node', ['-e', "process.stdout.write(require.resolve('evictd'))"], app);
  assert.ok(where.startsWith(path.join(app, 'node_modules', 'evictd')), where);
  const loaded = sh('node', ['-e', "const e = require('evictd'); process.stdout.write(String(e.nativeAvailable()) + ' ' + typeof e.evaluate)"], app);
  assert.equal(loaded, 'true function', 'the addon loads and the policy is there');
  // Installed with no compiler on the PATH: nothing was built, the prebuilt addon is what loads.
  const installed = path.join(app, 'node_modules', 'evictd');
  assert.equal(fs.existsSync(path.join(installed, 'build')), false, `nothing compiled:\n${embedderOutput.slice(-2000)}`);
  const file = sh(
    'node',
    ['-e', `process.stdout.write(require(${JSON.stringify(path.join(installed, 'dist', 'src', 'kernel', 'addon.js'))}).addonFile())`],
    app,
  );
  assert.equal(file, path.join(installed, 'prebuilds', 'linux-x64', 'node.napi.glibc.node'));

  fs.writeFileSync(path.join(app, 'example.js'), docExample());
  const out = sh('node', ['example.js'], app);
  // What the doc says the example prints.
  assert.match(out, /^conditions: MemoryPressure$/m);
  assert.match(out, /^threshold met: memory\.available hard < 500Mi$/m);
  assert.match(out, /^threshold met: memory\.available soft < 1Gi$/m);
  assert.match(out, /^evict first: default\/batch \(grace 0s\)$/m);
  assert.match(out, /^message: The node was low on resource: memory\./m);
});

test('require("evictd") from the installed package is exactly the API docs/embedding.md lists', { timeout: 600_000 }, () => {
  const keys = JSON.parse(sh('node', ['-e', "process.stdout.write(JSON.stringify(Object.keys(require('evictd')).sort()))"], embedder())) as string[];
  assert.deepEqual(keys, documentedNames());
});

test('the installed CLI runs; demo and bench say in one line (exit 2) that they need a source checkout', { timeout: 600_000 }, () => {
  const bin = path.join(embedder(), 'node_modules', '.bin', 'evictd');
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout.trim(), (JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string }).version);
  // The bundle is what runs (an installed package has no src/); Node's own module log says
  // which file was loaded.
  const help = spawnSync(bin, ['run', '--help'], { encoding: 'utf8', env: { ...process.env, NODE_DEBUG: 'module' } });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^usage: evictd run \[flags\]/);
  const loaded = [...help.stderr.matchAll(/^MODULE \d+: load "([^"]+)"/gm)].map((m) => path.relative(embedder(), m[1]!));
  assert.ok(loaded.includes(path.join('node_modules', 'evictd', 'dist', 'src', 'cli', 'main.bundle.js')), `the bundle ran: ${loaded.join(', ')}`);
  assert.ok(!loaded.some((f) => f.endsWith(path.join('cli', 'main.js'))), `not the tree: ${loaded.join(', ')}`);
  for (const [command, args] of [
    ['demo', ['demo']],
    ['bench', ['bench', 'policy']],
    ['bench', ['bench']],
  ] as const) {
    const r = spawnSync(bin, [...args], { encoding: 'utf8' });
    assert.equal(r.status, 2, `evictd ${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`^evictd: evictd ${command} needs a source checkout of evictd .*\n$`));
    assert.equal(r.stderr.split('\n').length, 2, `one line: ${r.stderr}`);
  }
});

test(
  'npm install with no BPF toolchain: the tripwire is built in from the committed object, and a node without libbpf.so.1 says so in one line',
  { timeout: 600_000 },
  () => {
    // The toolchain the tripwire once needed, made unusable: clang, llvm-strip, bpftool and
    // pkg-config first on PATH as stubs that leave a mark if anything runs them, and, as root,
    // libbpf's headers hidden under an empty directory in a private mount namespace. Everything
    // else (make, g++, python3) is the machine's, as on a fresh one.
    const bin = path.join(dir, 'no-bpf-bin');
    const marks = path.join(dir, 'no-bpf-called');
    fs.mkdirSync(bin);
    for (const tool of ['clang', 'llvm-strip', 'bpftool', 'pkg-config']) {
      fs.writeFileSync(path.join(bin, tool), `#!/bin/sh\necho ${tool} >> ${marks}\nexit 127\n`, { mode: 0o755 });
    }
    // Compiled as where the prebuilt addon does not load (node-gyp-build's fallback, asked for).
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, EVICTD_TRIPWIRE: '', npm_config_build_from_source: 'true' };
    const hide = process.getuid?.() === 0 && fs.existsSync('/usr/include/bpf') && spawnSync('unshare', ['--version']).status === 0;
    const result = install('no-bpf', env, hide ? { hide: ['/usr/include/bpf'] } : undefined);
    // Built by and for the Node that runs this suite (the machine's, or the LTS of npm run test:lts).
    assert.ok(result.output.includes(`using node@${process.versions.node} `), `node-gyp built for another Node:\n${result.output.slice(-2000)}`);
    assert.equal(fs.existsSync(marks) ? fs.readFileSync(marks, 'utf8') : '', '', 'the build ran none of the BPF tools');
    const addon = path.join(result.app, 'node_modules', 'evictd', 'build', 'Release', 'evictd_kernel.node');
    assert.doesNotMatch(sh('ldd', [addon], result.app), /libbpf/, 'libbpf is opened at run time, not linked');

    const probe =
      "const e = require('evictd'); process.stdout.write(JSON.stringify({ native: e.nativeAvailable(), status: e.tripwireStatus(), why: e.tripwireUnavailable() }))";
    type Got = { native: boolean; status: { built: boolean }; why: string | null };
    const here = JSON.parse(sh('node', ['-e', probe], result.app)) as Got;
    assert.equal(here.native, true);
    assert.equal(here.status.built, true, 'the tripwire is in the addon');
    // Where the kernel takes it (the pure cgroup v2 lab) it loads; this host's kernel refuses it
    // (symbols it cannot resolve): either way it is not for want of anything at build time.
    assert.doesNotMatch(here.why ?? '', /left out|not found|too old/, `why: ${here.why}`);

    const gone = JSON.parse(sh('node', ['-e', probe], result.app, { ...process.env, EVICTD_LIBBPF: '/nonexistent/libbpf.so.1' })) as Got;
    assert.equal(gone.status.built, true);
    assert.match(gone.why ?? '', /^\/nonexistent\/libbpf\.so\.1 not found \(Debian: apt-get install libbpf1\): [^\n]+$/, 'one line naming what is missing');
  },
);
