// evictd's container image (scripts/image.sh) as built: its config (the name the DaemonSet
// runs, the entrypoint), its content (Node 24 and evictd's CLI alone: no compiler, no npm, no
// shell, no lab, no tests, no node_modules) and the image's own node and bundle running
// `evictd --version`, `evictd run --help` and opening libbpf from the addon, in the unpacked
// root, read-only, with an empty environment (unshare + chroot: what a container's root is,
// without a runtime). test/agent/deployment.test.ts runs the same image on containerd.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { evictdImage } from '../support/image';
import { missingRoot, skipped } from '../support/environment';
import { tempDir } from '../support/temp-dir';
import { docs } from '../kube/manifests';
import { SHIPPED_NODE_ARGS } from '../../src/lab/shipped';

const repo = path.resolve(__dirname, '..', '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string };

interface Layout {
  name: string;
  config: { config: { Entrypoint: string[]; Env: string[] } };
  root: string;
}
let image: Layout | null = null;

before(() => {
  if (missingRoot() !== null) return;
  const { tarball } = evictdImage();
  const dir = tempDir('image');
  execFileSync('tar', ['-xf', tarball, '-C', dir]);
  const blob = (digest: string) => path.join(dir, 'blobs', ...digest.split(':'));
  const index = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));
  const manifest = JSON.parse(fs.readFileSync(blob(index.manifests[0].digest), 'utf8'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  execFileSync('tar', ['-xf', blob(manifest.layers[0].digest), '-C', root]);
  image = {
    name: index.manifests[0].annotations['io.containerd.image.name'],
    config: JSON.parse(fs.readFileSync(blob(manifest.config.digest), 'utf8')),
    root,
  };
});

/** A command of the image run in its root: read-only, its own /proc, no environment. */
function inImage(args: string[]): { status: number | null; out: string } {
  const r = spawnSync(
    'unshare',
    [
      '--mount',
      '--pid',
      '--fork',
      'sh',
      '-c',
      'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && mount -t proc proc "$0/proc" && exec chroot "$0" "$@"',
      image!.root,
      ...args,
    ],
    { env: {}, encoding: 'utf8', timeout: 60_000 },
  );
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Every path in the image, relative to its root, directories with a trailing slash. */
function files(): string[] {
  const all: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(image!.root, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      all.push(e.isDirectory() ? `${p}/` : p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk('');
  return all;
}

test("the image is the one deploy/daemonset.yaml runs, and its entrypoint is the image's node on evictd's CLI", { timeout: 300_000 }, (t) => {
  if (skipped(t, missingRoot())) return;
  const ds = docs('daemonset.yaml')[0];
  assert.equal(image!.name, `localhost/evictd/evictd:${pkg.version}`);
  assert.equal(ds.spec.template.spec.containers[0].image, image!.name);
  // node as everywhere evictd is shipped (src/lab/shipped.ts)
  assert.deepEqual(image!.config.config.Entrypoint, ['/usr/local/bin/node', ...SHIPPED_NODE_ARGS, '/opt/evictd/bin/evictd.js']);
});

test("the image holds Node 24 and evictd's CLI alone: no compiler, no npm, no shell, no lab, no tests, no node_modules", (t) => {
  if (skipped(t, missingRoot())) return;
  const all = files();
  const base = (f: string) => path.basename(f.replace(/\/$/, ''));
  const tools = ['gcc', 'cc', 'g++', 'c++', 'clang', 'ld', 'as', 'npm', 'npx', 'corepack', 'node-gyp', 'sh', 'bash', 'dash', 'busybox', 'apt', 'dpkg'];
  assert.deepEqual(
    all.filter((f) => tools.includes(base(f))),
    [],
  );
  const opt = all.filter((f) => f.startsWith('opt/evictd/') && !f.endsWith('/')).map((f) => f.slice('opt/evictd/'.length));
  // The bundle holds the product's code and its dependencies; the lab has a bundle of its own,
  // never shipped (scripts/bundle.mjs refuses a main bundle that holds lab code).
  assert.deepEqual(opt.filter((f) => !f.startsWith('proto/')).sort(), [
    'bin/evictd.js',
    'dist/src/cli/main.bundle.js',
    'package.json',
    'prebuilds/linux-x64/node.napi.glibc.node',
  ]);
  assert.ok(opt.includes('proto/runtime-v1.proto'));
  for (const lib of ['lib/x86_64-linux-gnu/libc.so.6', 'usr/lib/x86_64-linux-gnu/libstdc++.so.6', 'usr/lib/x86_64-linux-gnu/libbpf.so.1'])
    assert.ok(all.includes(lib), lib);
  const node = inImage(['/usr/local/bin/node', '--version']);
  assert.equal(node.status, 0, node.out);
  assert.match(node.out.trim(), /^v24\./);
});

test("the image's node and bundle run evictd --version and evictd run --help, and the addon opens libbpf, in the image's read-only root", (t) => {
  if (skipped(t, missingRoot())) return;
  const version = inImage(['/usr/local/bin/node', '/opt/evictd/bin/evictd.js', '--version']);
  assert.equal(version.status, 0, version.out);
  assert.equal(version.out.trim(), pkg.version);
  const help = inImage(['/usr/local/bin/node', '/opt/evictd/bin/evictd.js', 'run', '--help']);
  assert.equal(help.status, 0, help.out);
  assert.match(help.out, /^usage: evictd run/);
  // The tripwire's load opens libbpf.so.1 first (stage 'libbpf' when it cannot); the kernel may
  // then refuse the program (no BTF under this chroot's empty /sys), which is not the image's matter.
  const addon = '/opt/evictd/prebuilds/linux-x64/node.napi.glibc.node';
  const load = inImage([
    '/usr/local/bin/node',
    '-e',
    `const a = require(${JSON.stringify(addon)}); try { a.tripwireLoad(); console.log('loaded'); } catch (e) { console.log('stage', e.stage, e.message); }`,
  ]);
  assert.equal(load.status, 0, load.out);
  assert.doesNotMatch(load.out, /stage libbpf/);
});
