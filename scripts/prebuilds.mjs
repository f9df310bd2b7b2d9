// The prebuilt addon the package ships (package.json "files"), so that `npm install evictd` on
// linux-x64 needs no compiler: this tree's build (build/Release/evictd_kernel.node, made by
// node-gyp at `npm ci`) as prebuilds/linux-x64/node.napi.glibc.node, the name
// node-gyp-build looks for (N-API: one file for every Node with N-API 8; glibc: not musl).
// The install runs node-gyp-build, which loads it and compiles only where it does not load
// (another architecture, a glibc older than the build machine's symbols need: 2.34 for
// Debian 12's build).
//
//   node scripts/prebuilds.mjs     (npm run build and prepack run it; no build/: nothing to do)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const built = path.join(root, 'build', 'Release', 'evictd_kernel.node');
const dir = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
const out = path.join(dir, 'node.napi.glibc.node');

if (!fs.existsSync(built)) {
  process.stdout.write('prebuilds: no build/Release/evictd_kernel.node (node-gyp has not built the addon): none made\n');
  process.exit(0);
}
fs.mkdirSync(dir, { recursive: true });
// Written aside, then renamed: a reader never loads half a file.
const tmp = `${out}.${process.pid}`;
fs.copyFileSync(built, tmp);
fs.renameSync(tmp, out);
process.stdout.write(`prebuilds: ${path.relative(root, out)}, ${(fs.statSync(out).size / 1024).toFixed(0)} KiB\n`);
