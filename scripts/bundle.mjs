// The CLI in two files beside the compiled tree, in dist/src/cli/ (so every __dirname-relative
// path in the sources, the package root, the proto, the lab, resolves the same from a bundle as
// from the tree):
// - main.bundle.js: the product's commands (run, record, simulate). Loading one file instead of
//   ~400 modules is what it is for: `evictd run` starts faster where the CPU is slow (measured in
//   the lab's emulated VM: 5.4 s of module loading -> 1.6 s), so a restarted agent is back on
//   watch sooner. It leaves the lab out: `./lab-commands` stays a require of the file below.
// - lab-commands.bundle.js: the demo and the benches (a source checkout only), loaded by
//   main.bundle.js when one of them is asked for. Not in the package (package.json "files").
// bin/evictd.js runs main.bundle.js, except in a source checkout whose tree was compiled after it.
//
// Inputs are the compiled tree (tsc's output), so the bundles run exactly the code the tests
// import. The addon (a .node file, required by a computed path) stays outside.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'src', 'cli');

// main.js's require('./lab-commands') becomes a require of the lab's bundle.
const labApart = {
  name: 'lab-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\/lab-commands$/ }, () => ({ path: './lab-commands.bundle.js', external: true }));
  },
};

async function bundle(entry, out, plugins) {
  const result = await build({
    entryPoints: [path.join(cli, entry)],
    outfile: path.join(cli, out),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // Minified: V8 keeps a script's whole source in the heap to compile its functions lazily
    // (main.bundle.js 2.1 MiB -> 1.0 MiB). Names kept, so a bug's stack (main.ts `failure`)
    // still names its functions and classes, and errors keep their names (main.ts `isA`).
    minify: true,
    keepNames: true,
    logLevel: 'warning',
    metafile: true,
    plugins,
  });
  const inputs = Object.keys(result.metafile.inputs).length;
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  process.stdout.write(`bundle: dist/src/cli/${out}, ${inputs} modules, ${(bytes / 2 ** 20).toFixed(1)} MiB\n`);
  return result.metafile;
}

const main = await bundle('main.js', 'main.bundle.js', [labApart]);
await bundle('lab-commands.js', 'lab-commands.bundle.js', []);
// The product's bundle must hold no lab code (issue: `evictd run` parsed the demo at each start).
const labInMain = Object.keys(main.inputs).filter((f) => f.includes('dist/src/lab/'));
if (labInMain.length > 0) {
  process.stderr.write(`bundle: main.bundle.js holds lab code: ${labInMain.slice(0, 3).join(', ')}\n`);
  process.exit(1);
}
