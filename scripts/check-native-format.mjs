#!/usr/bin/env node
// The native sources in the format .clang-format gives (part of `npm run lint`; `npm run format`
// writes it). native/bpf/ is not formatted: its committed object is rebuilt from those sources
// bit for bit, line info included. clang-format comes from Debian's package of that name (.ci/run
// installs it); without it the check is skipped with a note, except in CI, where that is a failure.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.join(path.dirname(new URL(import.meta.url).pathname), '..');
const write = process.argv.includes('--write');
const dirs = ['native', 'native/tools'];
const files = dirs.flatMap((d) =>
  fs
    .readdirSync(path.join(root, d))
    .filter((f) => /\.(cc|h|c)$/.test(f))
    .map((f) => path.join(d, f)),
);

const probe = spawnSync('clang-format', ['--version'], { encoding: 'utf8' });
if (probe.error) {
  const inCi = process.env.CI === 'true' || process.env.EVICTD_REQUIRE_KERNEL === '1';
  process.stderr.write(`check-native-format: clang-format not found (Debian's package clang-format)${inCi ? '' : ': native format not checked'}\n`);
  process.exit(inCi ? 1 : 0);
}
const r = spawnSync('clang-format', write ? ['-i', ...files] : ['--dry-run', '--Werror', ...files], { cwd: root, encoding: 'utf8' });
if (r.status !== 0) {
  process.stderr.write(r.stderr);
  process.stderr.write(`check-native-format: ${write ? 'clang-format failed' : "native sources not in .clang-format's format: run npm run format"}\n`);
  process.exit(1);
}
if (!write) process.stdout.write(`check-native-format: ${files.length} files in .clang-format's format (${probe.stdout.trim()})\n`);
