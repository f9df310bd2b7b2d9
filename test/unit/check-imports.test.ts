// scripts/check-imports.mjs (run by `npm run lint`) on trees of its own: it must refuse what the
// house forbids, or it keeps nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/temp-dir';

const script = path.join(__dirname, '..', '..', '..', 'scripts', 'check-imports.mjs');

function check(files: Record<string, string>): { code: number | null; stderr: string } {
  const dir = tempDir('imports');
  try {
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
    const r = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });
    return { code: r.status, stderr: r.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('this checkout passes', () => {
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('a type-only import cycle is refused', () => {
  const r = check({
    'src/agent/a.ts': "import type { B } from './b';\nexport type A = { b?: B };\n",
    'src/agent/b.ts': "import type { A } from './a';\nexport type B = { a?: A };\n",
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /import cycle: src\/agent\/a\.ts -> src\/agent\/b\.ts -> src\/agent\/a\.ts/);
});

test('a production room reaching the lab, even by a lazy require(), is refused; the CLI may', () => {
  const r = check({
    'src/lab/stats.ts': 'export const p = 1;\n',
    'src/cli/main.ts': "export const load = () => require('../lab/stats');\n",
    'src/kernel/x.ts': "export const f = () => require('../lab/stats');\n",
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /src\/kernel\/x\.ts imports src\/lab\/stats\.ts: src\/kernel is production/);
  assert.doesNotMatch(r.stderr, /src\/cli\/main\.ts/);
});

test('only src/cli imports src/cli', () => {
  const r = check({ 'src/cli/errors.ts': 'export class E {}\n', 'src/lab/demo.ts': "import { E } from '../cli/errors';\nexport const e = E;\n" });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /src\/lab\/demo\.ts imports src\/cli\/errors\.ts: only src\/cli\/ imports src\/cli\//);
});

test('the floors: policy importing node is refused, as is node importing cri beside it; each importing what is below is not', () => {
  const r = check({
    'src/errors.ts': 'export class UsageError extends Error {}\n',
    'src/policy/p.ts': "import { n } from '../node/n';\nexport const p = n;\n",
    'src/node/n.ts': "import { UsageError } from '../errors';\nexport const n = UsageError;\n",
    'src/node/m.ts': "import type { C } from '../cri/c';\nexport type M = C;\n",
    'src/cri/c.ts': "import type { Q } from '../policy/q';\nexport type C = Q;\n",
    'src/policy/q.ts': 'export type Q = number;\n',
    'src/agent/a.ts': "import { n } from '../node/n';\nimport type { C } from '../cri/c';\nexport const a: C | typeof n = 1;\n",
  });
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /src\/policy\/p\.ts imports src\/node\/n\.ts: src\/policy\/ may import only the floors below it \(src\/errors\.ts, src\/log\.ts\); src\/node\/ is above it/,
  );
  assert.match(r.stderr, /src\/node\/m\.ts imports src\/cri\/c\.ts: src\/node\/ may import only .*; src\/cri\/ is on its own floor/);
  assert.doesNotMatch(r.stderr, /src\/agent\/a\.ts|src\/cri\/c\.ts imports|src\/node\/n\.ts imports/);
  assert.equal(r.stderr.trim().split('\n').length, 2, r.stderr);
});

test('a room on no floor is refused until it is given one', () => {
  const r = check({ 'src/util/u.ts': 'export const u = 1;\n', 'src/agent/a.ts': "import { u } from '../util/u';\nexport const a = u;\n" });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /src\/util\/ is on no floor: give it one in FLOORS/);
});
