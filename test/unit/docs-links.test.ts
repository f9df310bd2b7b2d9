/** Links in the repository's Markdown stay inside the repository and point at files that exist. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..', '..');

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (['node_modules', 'dist', 'build', '.git'].includes(e.name)) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...markdownFiles(p));
    else if (e.name.endsWith('.md')) out.push(p);
  }
  return out;
}

test('every relative Markdown link resolves to a file inside the repository', () => {
  const files = markdownFiles(root);
  assert.ok(files.some((f) => f.endsWith(path.join('docs', 'scenarios.md'))));
  const bad: string[] = [];
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!.split('#')[0]!;
      if (target === '' || /^[a-z]+:/i.test(target)) continue; // anchors and URLs
      const resolved = path.resolve(path.dirname(file), target);
      const where = `${path.relative(root, file)}: ${m[1]}`;
      if (!resolved.startsWith(root + path.sep)) bad.push(`${where} leaves the repository`);
      else if (!fs.existsSync(resolved)) bad.push(`${where} does not exist`);
    }
  }
  assert.deepEqual(bad, []);
});

test('evictd simulate --help points at docs/scenarios.md, inside the repository', () => {
  const r = spawnSync(process.execPath, [path.join(root, 'bin', 'evictd.js'), 'simulate', '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /docs\/scenarios\.md/);
  assert.doesNotMatch(r.stdout, /\.\.\/|shared\/spec/);
  assert.ok(fs.existsSync(path.join(root, 'docs', 'scenarios.md')));
});

test('docs/kill-path.svg is what scripts/draw-kill-path.mjs draws (edit the script, then run it)', () => {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'draw-kill-path.mjs'), '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
