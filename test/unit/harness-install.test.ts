// scripts/harness.sh when it cannot install its packages (another package manager holds the dpkg
// lock past the wait, or no mirror): one line that says what and why, exit 1, no stack; and
// `evictd demo` passes such a failure on as one line. apt-get and dpkg are stand-ins on PATH here:
// what is under test is the script's and the CLI's handling, not apt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { failure } from '../../src/cli/main';
import { EnvironmentError } from '../../src/errors';
import { missingRoot, skipped } from '../support/environment';
import { tempDir } from '../support/temp-dir';

const script = path.join(__dirname, '..', '..', '..', 'scripts', 'harness.sh');

test('harness.sh: packages it cannot install end it with one line naming them and the dpkg lock wait', (t) => {
  if (skipped(t, missingRoot())) return;
  const dir = tempDir('apt');
  try {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // dpkg -s: nothing installed; apt-get: the lock stays held (apt's exit status is 100).
    fs.writeFileSync(path.join(bin, 'dpkg'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    fs.writeFileSync(path.join(bin, 'apt-get'), '#!/bin/sh\necho "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2\nexit 100\n', { mode: 0o755 });
    const r = spawnSync('bash', [script, 'up'], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, EVICTD_HARNESS_DIR: path.join(dir, 'h'), EVICTD_APT_LOCK_TIMEOUT: '1' },
    });
    assert.equal(r.status, 1);
    // Its progress line, then the one line that says why it stopped: no stack, no apt noise.
    const lines = r.stderr.trim().split('\n');
    assert.deepEqual(
      lines.slice(0, -1).filter((l) => !l.startsWith('harness: installing')),
      [],
      r.stderr,
    );
    assert.match(lines[lines.length - 1], /^harness: could not install containerd runc .*dpkg lock held for more than 1 s/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the CLI prints what the machine lacks as one line, exit 1; a bad input exit 2; a bug with its stack', () => {
  const env = failure(new EnvironmentError('scripts/harness.sh up failed (exit 1): harness: could not install containerd\nmore'));
  assert.equal(env.code, 1);
  assert.equal(env.text.trimEnd().split('\n').length, 1);
  assert.doesNotMatch(env.text, /\bat /);
  const bug = failure(new TypeError('x is undefined'));
  assert.equal(bug.code, 1);
  assert.match(bug.text, /\n\s+at /);
});
