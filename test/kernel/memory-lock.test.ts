/** The agent's code locked in RAM: every mapped file, a V8 that still frees its heap, and a refusal that leaves nothing locked. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { missingRoot, skipped } from '../support/environment';
import { nativeAvailable } from '../../src/kernel/addon';

const memoryLock = path.join(__dirname, '../../src/kernel/memory-lock');

/** Runs `body` in a fresh node (so this process stays unlocked), under `wrap`; its JSON output. */
function inChild(body: string, wrap: string[] = []): { status: number | null; out: unknown; stderr: string } {
  const script = `const m = require(${JSON.stringify(memoryLock)}); ${body}`;
  const argv = [...wrap, process.execPath, '--expose-gc', '-e', script];
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  let out: unknown;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    out = r.stdout;
  }
  return { status: r.status, out, stderr: r.stderr };
}

test('every file the process maps is locked; V8 frees its heap afterwards and the process exits 0', (t) => {
  if (skipped(t, missingRoot() ?? (nativeAvailable() ? null : 'native addon not built'))) return;
  const r = inChild(`
    const before = m.lockedFileMappings();
    const bytes = m.lockCode();
    const after = m.lockedFileMappings();
    // Heap grown, dropped and collected: V8 gives the pages back (madvise), which an mlockall'd
    // process fails at and aborts on.
    let keep = [];
    for (let i = 0; i < 64; i++) keep.push(Buffer.alloc(4 << 20, 1), new Array(1 << 16).fill({ i }));
    keep = null;
    global.gc();
    console.log(JSON.stringify({ before, bytes, after }));
  `);
  assert.equal(r.status, 0, r.stderr);
  const { before, bytes, after } = r.out as { before: { locked: number }; bytes: number; after: { files: number; locked: number } };
  assert.equal(before.locked, 0);
  assert.ok(bytes > 1024 * 1024, `${bytes} bytes of mappings`);
  assert.ok(after.files > 0 && after.locked === after.files, JSON.stringify(after));
});

test('without CAP_IPC_LOCK and past RLIMIT_MEMLOCK the lock is refused with its errno, and nothing stays locked', (t) => {
  if (skipped(t, missingRoot() ?? (nativeAvailable() ? null : 'native addon not built'))) return;
  const r = inChild(
    `let code = null;
    try { m.lockCode(); } catch (e) { code = e.code; }
    console.log(JSON.stringify({ code, after: m.lockedFileMappings() }));`,
    ['setpriv', '--bounding-set=-ipc_lock', '--inh-caps=-ipc_lock', 'prlimit', '--memlock=65536'],
  );
  assert.equal(r.status, 0, r.stderr);
  const { code, after } = r.out as { code: string | null; after: { files: number; locked: number } };
  assert.ok(code === 'EPERM' || code === 'ENOMEM', `errno ${code}`);
  assert.equal(after.locked, 0);
});

test("giving back the start's code pages keeps the kill path's own code resident, and every file locked again", (t) => {
  if (skipped(t, missingRoot() ?? (nativeAvailable() ? null : 'native addon not built'))) return;
  const addon = path.join(__dirname, '../../src/kernel/addon');
  const r = inChild(`
    const fs = require('node:fs');
    const file = fs.realpathSync(require(${JSON.stringify(addon)}).addonFile());
    // The resident KiB of the addon's own mappings (smaps: a header line, then its fields).
    const residentKiB = () => {
      let mine = false, kib = 0;
      for (const l of fs.readFileSync('/proc/self/smaps', 'utf8').split('\\n')) {
        if (/^[0-9a-f]+-[0-9a-f]+ /.test(l)) mine = l.endsWith(' ' + file);
        else if (mine && l.startsWith('Rss:')) kib += Number(l.split(/\\s+/)[1]);
      }
      return kib;
    };
    m.lockCode();
    const before = residentKiB();
    const shed = m.shedCodePages(true);
    console.log(JSON.stringify({ before, after: residentKiB(), shed, locked: m.lockedFileMappings() }));
  `);
  assert.equal(r.status, 0, r.stderr);
  const { before, after, shed, locked } = r.out as { before: number; after: number; shed: unknown; locked: { files: number; locked: number } };
  assert.ok(shed !== null, 'this build gives pages back');
  assert.ok(before > 0, `the addon is resident: ${before} KiB`);
  assert.equal(after, before, "the addon's pages stay");
  assert.ok(locked.files > 0 && locked.locked === locked.files, JSON.stringify(locked));
});
