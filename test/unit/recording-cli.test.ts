/**
 * Recordings as a user meets them: examples/demo-recording.jsonl (a real `evictd demo` run,
 * recorded by `evictd run --record`) replayed, cut, tampered with and asked "what if"; and
 * `--record` refusing a path it cannot write.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/temp-dir';

const root = path.join(__dirname, '..', '..', '..');
const bin = path.join(root, 'bin', 'evictd.js');
const example = path.join(root, 'examples', 'demo-recording.jsonl');
const evictd = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });
const dir = tempDir('rec');

test('the demo recording replays to the live decisions: both hogs, in order, by their standing orders', () => {
  const r = evictd('simulate', example, '--json');
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout) as { passes: number; differences: unknown[]; recorded: { pod: string }[]; replayed: { pod: string; how: string }[] };
  assert.deepEqual(out.differences, []);
  assert.deepEqual(
    out.replayed.map((e) => `${e.pod} ${e.how}`),
    ['demo/hog-1 confirm', 'demo/hog-2 confirm'],
  );
  assert.deepEqual(out.replayed, out.recorded);
});

test('a recording cut mid-line replays up to its last whole pass, with a warning', () => {
  const text = fs.readFileSync(example, 'utf8');
  const cut = path.join(dir, 'cut.jsonl');
  fs.writeFileSync(cut, text.slice(0, text.lastIndexOf('\n', text.length - 2) + 40));
  const r = evictd('simulate', cut, '--json');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /last line is cut/);
  const full = text.trim().split('\n').length - 1;
  assert.equal((JSON.parse(r.stdout) as { passes: number }).passes, full - 1);
});

test('a decision the policy would not take is a difference: the pass, the signal, the two decisions', () => {
  const lines = fs.readFileSync(example, 'utf8').trim().split('\n');
  const i = lines.findIndex((l) => l.includes('"orders":["memory.available[0] demo/hog-1"'));
  assert.ok(i > 0);
  lines[i] = lines[i]!.replace('"orders":["memory.available[0] demo/hog-1"', '"orders":["memory.available[0] demo/web-guaranteed"');
  const f = path.join(dir, 'tampered.jsonl');
  fs.writeFileSync(f, lines.join('\n') + '\n');
  const r = evictd('simulate', f);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(
    r.stdout,
    new RegExp(
      `^pass ${i} \\(at [^)]+\\), memory\\.available: orders: recorded memory\\.available\\[0\\] demo/web-guaranteed.*; replayed memory\\.available\\[0\\] demo/hog-1`,
      'm',
    ),
  );
});

test('what if: a higher line evicts the hogs earlier; a much lower one leaves the fast ramp to the OOM killer', () => {
  const hi = evictd('simulate', example, '--eviction-hard', 'memory.available<200Mi', '--json');
  assert.equal(hi.status, 0, hi.stderr);
  const h = JSON.parse(hi.stdout) as { evictions: { pod: string; change: string; byMs: number }[]; cost: { threshold: string; pods: string[] }[] };
  assert.deepEqual(
    h.evictions.map((e) => `${e.pod} ${e.change}`),
    ['demo/hog-1 earlier', 'demo/hog-2 earlier'],
  );
  assert.ok(h.evictions.every((e) => e.byMs < 0));
  assert.deepEqual(h.cost.flatMap((c) => c.pods).sort(), ['demo/hog-1', 'demo/hog-2']);
  const lo = evictd('simulate', example, '--eviction-hard', 'memory.available<1Mi');
  assert.equal(lo.status, 0, lo.stderr);
  assert.match(lo.stdout, /demo\/hog-2: not at all/);
  assert.match(lo.stdout, /demo\/hog-2: \d+ MiB\/s.*the kernel OOM killer would have ended it first/);
  // the recorded line itself changes nothing
  const same = JSON.parse(evictd('simulate', example, '--eviction-hard', 'memory.available<100Mi', '--json').stdout) as { evictions: { change: string }[] };
  assert.ok(same.evictions.every((e) => e.change === 'same'));
});

test('--record refuses a path it cannot write, at start: one line naming flag and value, exit 2', () => {
  const bad = path.join(dir, 'no-such-dir', 'rec.jsonl');
  const r = evictd('run', '--record', bad);
  assert.equal(r.status, 2, r.stdout + r.stderr);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`^evictd: --record: "${bad.replace(/[/.]/g, '\\$&')}": cannot be written: no such file \\(ENOENT\\)`));
});

test('what-if flags on a plain scenario are refused (it carries its own config)', () => {
  const r = evictd('simulate', path.join(root, 'examples', 'memory-pressure.yaml'), '--eviction-hard', 'memory.available<1Gi');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^evictd: --eviction-hard: .*works on a recording/);
});

test('evictd record refuses --record and --dry-run (it sets both itself), and wants FILE first: one line, exit 2', () => {
  const given = evictd('record', path.join(dir, 'r.jsonl'), '--dry-run');
  assert.equal(given.status, 2, given.stdout + given.stderr);
  assert.equal(given.stderr, 'evictd: --dry-run: "true": is set by evictd record itself (it records to FILE and acts on nothing)\n');
  const twice = evictd('record', path.join(dir, 'r.jsonl'), '--record=other.jsonl');
  assert.equal(twice.status, 2);
  assert.match(twice.stderr, /^evictd: --record: "other\.jsonl": is set by evictd record itself/);
  const none = evictd('record', '--eviction-hard', 'memory.available<1Gi');
  assert.equal(none.status, 2);
  assert.equal(none.stderr.trim().split('\n').length, 1, none.stderr);
  assert.match(none.stderr, /^evictd: record: expected the recording FILE first/);
});

test('an empty recording (the agent stopped before its first pass) is no passes recorded, exit 0', () => {
  const f = path.join(dir, 'empty.jsonl');
  fs.writeFileSync(f, '');
  const r = evictd('simulate', f);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${f}: empty: no passes recorded (the agent stopped before its first pass)\n`);
  const j = evictd('simulate', f, '--json');
  assert.deepEqual(JSON.parse(j.stdout), { passes: 0, admissions: 0, recorded: [], replayed: [], differences: [] });
});

test('a kill the next pass confirms again is one crossing: at the recorded line the what-if changes nothing and costs only the hogs', () => {
  // A real demo recording (test/unit/fixtures/demo-reconfirmed.jsonl) whose passes 4 and 7
  // confirm the kills of passes 3 and 6 again, their stops not yet done. Taken as a second
  // crossing, the re-confirmation drew the line crossed anew, and the what-if "evicted" the
  // Burstable and the Guaranteed pods after each hog.
  const fixture = path.join(root, 'test', 'unit', 'fixtures', 'demo-reconfirmed.jsonl');
  const replayed = JSON.parse(evictd('simulate', fixture, '--json').stdout) as { differences: unknown[]; recorded: { pod: string }[] };
  assert.deepEqual(replayed.differences, []);
  assert.deepEqual(
    replayed.recorded.map((e) => e.pod),
    ['demo/hog-1', 'demo/hog-2'],
  );
  for (const line of ['100Mi', '200Mi']) {
    const r = evictd('simulate', fixture, '--eviction-hard', `memory.available<${line}`, '--json');
    assert.equal(r.status, 0, r.stderr);
    const w = JSON.parse(r.stdout) as { evictions: { pod: string; change: string }[]; cost: { pods: string[] }[] };
    assert.deepEqual(
      w.evictions.map((e) => e.pod),
      ['demo/hog-1', 'demo/hog-2'],
      `${line}: ${r.stdout}`,
    );
    assert.deepEqual(w.cost.flatMap((c) => c.pods).sort(), ['demo/hog-1', 'demo/hog-2']);
    if (line === '100Mi')
      assert.ok(
        w.evictions.every((e) => e.change === 'same'),
        r.stdout,
      );
  }
});
