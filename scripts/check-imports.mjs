#!/usr/bin/env node
// The house's import rules on the resolved module graph of src/ (part of `npm run lint`):
//   1. no import cycle, type-only imports and lazy require()s included;
//   2. a production room (policy, kernel, node, cri, kube, agent, sim) never reaches into the
//      lab (src/lab/) or the CLI (src/cli/);
//   3. nothing outside src/cli/ imports src/cli/.
// TypeScript's own scanner finds the imports (ts.preProcessFile) and its resolver resolves them,
// so the graph is the compiler's, not a regex's.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The project root: this checkout, or the one given (the test runs it on a tree of its own).
const root = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const src = path.join(root, 'src');
const PRODUCTION = ['policy', 'kernel', 'node', 'cri', 'kube', 'agent', 'sim'];
const options = { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 };

function sourceFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The files of src/ that `file` imports (static, type-only, export-from, require()). */
function importsOf(file) {
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  const out = [];
  for (const ref of info.importedFiles) {
    const r = ts.resolveModuleName(ref.fileName, file, options, ts.sys).resolvedModule;
    if (r && !r.isExternalLibraryImport && r.resolvedFileName.startsWith(src + path.sep)) out.push(r.resolvedFileName);
  }
  return out;
}

const rel = (f) => path.relative(root, f);
const room = (f) => path.relative(src, f).split(path.sep)[0];
const files = sourceFiles(src);
const graph = new Map(files.map((f) => [f, importsOf(f)]));
const problems = [];

for (const [from, tos] of graph) {
  for (const to of tos) {
    const a = room(from);
    const b = room(to);
    if (PRODUCTION.includes(a) && (b === 'lab' || b === 'cli')) problems.push(`${rel(from)} imports ${rel(to)}: src/${a} is production and never imports src/${b}/`);
    else if (b === 'cli' && a !== 'cli') problems.push(`${rel(from)} imports ${rel(to)}: only src/cli/ imports src/cli/`);
  }
}

// Cycles: a depth-first search that reports each cycle once, as the path that closes it.
const state = new Map(); // file -> 'open' | 'done'
const stack = [];
const seen = new Set();
function visit(f) {
  state.set(f, 'open');
  stack.push(f);
  for (const g of graph.get(f) ?? []) {
    if (state.get(g) === 'open') {
      const cycle = stack.slice(stack.indexOf(g)).concat(g).map(rel);
      const key = [...cycle.slice(0, -1)].sort().join(' ');
      if (!seen.has(key)) {
        seen.add(key);
        problems.push(`import cycle: ${cycle.join(' -> ')}`);
      }
    } else if (!state.has(g)) visit(g);
  }
  stack.pop();
  state.set(f, 'done');
}
for (const f of files) if (!state.has(f)) visit(f);

if (problems.length > 0) {
  for (const p of problems) process.stderr.write(`check-imports: ${p}\n`);
  process.exit(1);
}
process.stdout.write(`check-imports: ${files.length} files, no cycle, rooms respected\n`);
