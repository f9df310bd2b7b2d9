/**
 * promtool, from Debian's prometheus package unpacked (never installed: its service must not run
 * on a test machine). .ci/run unpacks it into the cache and names it in EVICTD_PROMTOOL; one on
 * the PATH is taken too.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The promtool to run, or null (say so: the caller skips, which fails in CI). */
export function promtoolPath(): string | null {
  const candidates = [
    process.env.EVICTD_PROMTOOL,
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'evictd-promtool', 'usr', 'bin', 'promtool'),
  ];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  return spawnSync('promtool', ['--version']).error ? null : 'promtool';
}

export const PROMTOOL_MISSING = "promtool not found (Debian's prometheus package unpacked: .ci/run does it; or set EVICTD_PROMTOOL)";

/** Runs promtool; its status and what it printed. */
export function promtool(bin: string, args: string[], input?: string): { status: number | null; out: string } {
  const r = spawnSync(bin, args, { encoding: 'utf8', input, timeout: 60_000 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}
