#!/usr/bin/env node
// The house's import rules on the resolved module graph of src/ (part of `npm run lint`):
//   1. no import cycle, type-only imports and lazy require()s included;
//   2. a production room (policy, kernel, node, cri, kube, agent, sim) never reaches into the
//      lab (src/lab/) or the CLI (src/cli/);
//   3. nothing outside src/cli/ imports src/cli/;
//   4. the floors (FLOORS): a room imports itself and the floors below it, never a room on its
//      own floor (except the edges in SIDEWAYS) nor one above. A room on no floor is refused
//      until it is given one.
// TypeScript's own scanner finds the imports (ts.preProcessFile) and its resolver resolves them,
// so the graph is the compiler's, not a regex's.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

// The project root: this checkout, or the one given (the test runs it on a tree of its own).
const root = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const src = path.join(root, 'src');
const PRODUCTION = ['policy', 'kernel', 'net', 'node', 'cri', 'kube', 'agent', 'sim'];
// Bottom first. policy is pure, kernel is mechanism and net bounds the HTTP endpoints: none knows
// any other room. node,
// cri, kube and sim each build on those alone, so any of them can change without the others.
// The agent joins them; the CLI, the lab and the embedder's entry point sit on top.
const FLOORS = [['errors.ts', 'log.ts'], ['policy', 'kernel', 'net'], ['node', 'cri', 'kube', 'sim'], ['agent'], ['cli', 'lab', 'index.ts']];
// Edges between rooms of one floor, each judged right: the CLI dispatches to the lab's demo and
// benches (lazily; rule 3 keeps the lab from importing the CLI back).
const SIDEWAYS = new Set(['cli -> lab']);
const floorOf = new Map(FLOORS.flatMap((rooms, i) => rooms.map((r) => [r, i])));
/** How a room is named in messages: src/policy/, src/errors.ts. */
const where = (r) => (r.endsWith('.ts') ? `src/${r}` : `src/${r}/`);
const floorText = (i) => FLOORS.slice(0, i).flat().map(where).join(', ') || 'nothing';
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

const unplaced = new Set();
for (const [from, tos] of graph) {
  const a = room(from);
  if (!floorOf.has(a) && !unplaced.has(a)) {
    unplaced.add(a);
    problems.push(`${where(a)} is on no floor: give it one in FLOORS (scripts/check-imports.mjs)`);
  }
  for (const to of tos) {
    const b = room(to);
    if (PRODUCTION.includes(a) && (b === 'lab' || b === 'cli'))
      problems.push(`${rel(from)} imports ${rel(to)}: src/${a} is production and never imports src/${b}/`);
    else if (b === 'cli' && a !== 'cli') problems.push(`${rel(from)} imports ${rel(to)}: only src/cli/ imports src/cli/`);
    else if (a !== b && floorOf.has(a) && floorOf.has(b) && floorOf.get(b) >= floorOf.get(a) && !SIDEWAYS.has(`${a} -> ${b}`)) {
      const fa = floorOf.get(a);
      problems.push(
        `${rel(from)} imports ${rel(to)}: ${where(a)} may import only the floors below it (${floorText(fa)}); ${where(b)} is ${floorOf.get(b) === fa ? 'on its own floor' : 'above it'}`,
      );
    }
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
process.stdout.write(`check-imports: ${files.length} files, no cycle, rooms and floors respected\n`);
