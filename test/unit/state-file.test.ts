/** The state dir's one rule (src/node/state-file.ts): written through a new temp file, never read or written through a link. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { readStateFile, writeStateFile } from '../../src/node/state-file';
import { LAST_KNOWN_FILE, LastKnownPriorities } from '../../src/agent/last-known-priorities';
import { tempDir } from '../support/temp-dir';

const dir = () => tempDir('state');

test('a link where the temp file goes (a crashed run of the same pid, or planted) is replaced, not written through', () => {
  const d = dir();
  const file = path.join(d, 'journal.json');
  const target = path.join(d, 'target');
  fs.writeFileSync(target, 'theirs');
  fs.symlinkSync(target, `${file}.${process.pid}.tmp`);
  writeStateFile(file, 'ours');
  assert.equal(fs.readFileSync(target, 'utf8'), 'theirs');
  assert.equal(readStateFile(file), 'ours');
  assert.equal((fs.statSync(file).mode & 0o777).toString(8), '600');
  assert.deepEqual(fs.readdirSync(d).sort(), ['journal.json', 'target'], 'no temp file left');
});

test('a link in place of a state file is refused when read (ELOOP), and replaced by the next write', () => {
  const d = dir();
  const file = path.join(d, 'f.json');
  fs.writeFileSync(path.join(d, 'target'), 'theirs');
  fs.symlinkSync(path.join(d, 'target'), file);
  assert.throws(
    () => readStateFile(file),
    (e: NodeJS.ErrnoException) => e.code === 'ELOOP',
  );
  writeStateFile(file, 'ours');
  assert.equal(fs.lstatSync(file).isSymbolicLink(), false);
  assert.equal(fs.readFileSync(path.join(d, 'target'), 'utf8'), 'theirs');
});

test('last-known priorities: a link in place of the file is refused with a warning, and nothing is learned from it', () => {
  const d = dir();
  const target = path.join(d, 'target');
  fs.writeFileSync(target, JSON.stringify({ version: 1, pods: { u1: { namespace: 'x', name: 'y', priority: 2_000_000_000 } } }));
  fs.symlinkSync(target, path.join(d, LAST_KNOWN_FILE));
  const lines: { msg?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { msg?: string }) });
  const k = new LastKnownPriorities({ stateDir: d, logger });
  k.load();
  assert.equal(k.priorityOf('u1'), undefined);
  assert.ok(lines.some((l) => l.msg === 'last known pod priorities unreadable; ignored'));
});
