// The CLI in one file: dist/src/cli/main.bundle.js, beside the compiled main.js, so every
// __dirname-relative path in the sources (the package root, the proto, the lab) resolves the
// same from the bundle as from the tree. Loading one file instead of ~400 modules is what it
// is for: `evictd run` starts faster where the CPU is slow (measured in the lab's emulated VM:
// 5.4 s of module loading -> 1.6 s), so a restarted agent is back on watch sooner.
// bin/evictd.js runs the bundle, except in a source checkout whose tree was compiled after it.
//
// Inputs are the compiled tree (tsc's output), so the bundle runs exactly the code the tests
// import. The addon (a .node file, required by a computed path) stays outside.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'src', 'cli');

const result = await build({
  entryPoints: [path.join(cli, 'main.js')],
  outfile: path.join(cli, 'main.bundle.js'),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Names kept and nothing minified: a bug's stack (main.ts `failure`) stays readable.
  minify: false,
  keepNames: true,
  logLevel: 'warning',
  metafile: true,
});
const inputs = Object.keys(result.metafile.inputs).length;
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(`bundle: dist/src/cli/main.bundle.js, ${inputs} modules, ${(bytes / 2 ** 20).toFixed(1)} MiB\n`);
