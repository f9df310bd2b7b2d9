// scripts/v2vm/plan.mjs (scripts/v2vm/suites, with more than one lab): the test files split over
// the labs, on trees of its own. Every file runs exactly once, each suite's files in that suite,
// the longest first to the least loaded lab.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/temp-dir';

const script = path.join(__dirname, '..', '..', '..', 'scripts', 'v2vm', 'plan.mjs');

/** A tree holding these built test files (paths under dist/test/). */
function tree(files: string[]): string {
  const dir = tempDir('lab-plan');
  for (const f of files) {
    fs.mkdirSync(path.join(dir, 'dist/test', path.dirname(f)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'dist/test', f), '');
  }
  return dir;
}

/** Runs the planner in that tree: its lines, each lab as [suite, file names][]. */
function plan(files: string[], ...args: string[]): { code: number | null; labs: [string, string[]][][]; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [script, ...args], { cwd: tree(files), encoding: 'utf8' });
  const labs = r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) =>
      l.split(' ').map((part): [string, string[]] => {
        const [suite, list] = part.split('=') as [string, string];
        return [suite, list.split(',').map((p) => path.relative(path.join('dist/test', suite), p))];
      }),
    );
  return { code: r.status, labs, stdout: r.stdout, stderr: r.stderr };
}

const FILES = [
  'kernel/tripwire.test.js',
  'kernel/psi.test.js',
  'e2e/containerd.test.js',
  'agent/bench-peers.test.js',
  'agent/deployment.test.js',
  'agent/demo.test.js',
  'agent/brake.test.js',
  'agent/a-new-one.test.js',
];

test('lab plan: every file once, in its own suite, suites in the order given; the longest file alone against the rest', () => {
  const r = plan([...FILES, 'agent/helper.js'], '2', 'kernel', 'e2e', 'agent');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.labs.length, 2);
  const ran = r.labs.flatMap((lab) => lab.flatMap(([suite, files]) => files.map((f) => `${suite}/${f}`)));
  assert.deepEqual([...ran].sort(), [...FILES].sort(), 'each test file once, and nothing that is not a test file');
  for (const lab of r.labs) {
    const suites = lab.map(([suite]) => suite);
    assert.deepEqual(
      suites,
      ['kernel', 'e2e', 'agent'].filter((s) => suites.includes(s)),
    );
  }
  // The peers' bench (286 s) outweighs the others but the deployment and demo together: it goes
  // first to one lab, the deployment (106 s) and the demo (67 s) to the other.
  const withPeers = r.labs.find((lab) => lab.some(([, files]) => files.includes('bench-peers.test.js')))!;
  const other = r.labs.find((lab) => lab !== withPeers)!;
  const agentOf = (lab: [string, string[]][]) => lab.find(([s]) => s === 'agent')?.[1] ?? [];
  assert.ok(agentOf(other).includes('deployment.test.js') && agentOf(other).includes('demo.test.js'), JSON.stringify(r.labs));
});

test('lab plan: one lab runs everything; a lab with no work prints an empty line; bad arguments, one line and exit 2', () => {
  const one = plan(FILES, '1', 'agent');
  assert.equal(one.code, 0, one.stderr);
  assert.deepEqual(one.labs, [
    [
      [
        'agent',
        FILES.filter((f) => f.startsWith('agent/'))
          .map((f) => path.basename(f))
          .sort(),
      ],
    ],
  ]);
  const many = plan(['e2e/x.test.js'], '3', 'e2e');
  assert.deepEqual(many.stdout.split('\n'), ['e2e=dist/test/e2e/x.test.js', '', '', '']);
  for (const args of [['two', 'agent'], ['2'], ['2', 'kube']]) {
    const bad = plan(FILES, ...args);
    assert.equal(bad.code, 2, args.join(' '));
    assert.equal(bad.stderr.trim().split('\n').length, 1, `one line: ${bad.stderr}`);
  }
});
