import fs from 'node:fs';
import os from 'node:os';

/**
 * The one place tests decide whether they can run here.
 *
 * A test whose prerequisite is missing calls `skipped(t, reason)`, which skips it with the
 * reason; under EVICTD_REQUIRE_KERNEL=1 (set by .ci/run) a skip is a failure, so CI can never go
 * green by skipping. CI runs the suites in two configurations, this host (hybrid cgroups) and
 * the project's pure cgroup v2 VM (scripts/v2vm), and some tests can exist in only one of them:
 * a cgroup v1 mechanism cannot run on pure v2, a pure-v2 behaviour cannot run on a hybrid host.
 * Those say so with `needsV1(t)` / `needsPureV2(t)` (or `skipped(t, reason, { onlyIn })`), and
 * may skip in that one configuration even under EVICTD_REQUIRE_KERNEL=1. Nothing else may.
 *
 * Usage: test('x', { skip: ... }) cannot apply the CI rule, so write
 *   test('x', (t) => { if (skipped(t, missingRoot())) return; ... })
 */
export const requireKernel = process.env.EVICTD_REQUIRE_KERNEL === '1';

/** Where the tests run: inside the pure cgroup v2 lab, or anywhere else. */
export type Setting = 'v2vm' | 'host';

interface Skippable {
  skip(message?: string): void;
}

/**
 * Returns true (after marking the test skipped) when `missing` names a missing prerequisite.
 * With `onlyIn`, the prerequisite is one that setting cannot have: the skip is allowed there
 * under EVICTD_REQUIRE_KERNEL=1, and fails everywhere else.
 */
export function skipped(t: Skippable, missing: string | null, opts: { onlyIn?: Setting } = {}): boolean {
  if (missing === null) return false;
  const here = setting();
  if (requireKernel && opts.onlyIn !== here) {
    throw new Error(`EVICTD_REQUIRE_KERNEL=1 but this test cannot run (${configuration()}): ${missing}`);
  }
  t.skip(opts.onlyIn === undefined ? missing : `${missing} [allowed: ${here === 'v2vm' ? 'pure cgroup v2 VM' : 'host'}]`);
  return true;
}

/** For a test of a cgroup v1 mechanism: skips, even in CI, only inside the pure cgroup v2 VM. */
export function needsV1(t: Skippable): boolean {
  return skipped(t, memcgV1Root() === null ? 'needs the cgroup v1 memory controller (this kernel runs cgroup v2 only)' : null, { onlyIn: 'v2vm' });
}

/** For a test of what only pure cgroup v2 has: skips, even in CI, only outside the VM. */
export function needsPureV2(t: Skippable): boolean {
  return skipped(t, cgroupMode() === 'v2' ? null : `needs pure cgroup v2 (cgroups here: ${cgroupMode()})`, { onlyIn: 'host' });
}

export function missingRoot(): string | null {
  return process.getuid?.() === 0 ? null : 'needs root (cgroup and runtime access)';
}

/** The cgroup v1 memory controller mount, or null. */
export function memcgV1Root(): string | null {
  const p = '/sys/fs/cgroup/memory';
  return fs.existsSync(`${p}/cgroup.event_control`) ? p : null;
}

/** The cgroup2 mount (pure v2 at /sys/fs/cgroup, hybrid at /sys/fs/cgroup/unified), or null. */
export function cgroup2Root(): string | null {
  for (const p of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup']) {
    if (fs.existsSync(`${p}/cgroup.procs`) && fs.existsSync(`${p}/cgroup.subtree_control`)) return p;
  }
  return null;
}

/**
 * The machine's cgroup mode, from the mount table: 'v2' when cgroup2 is mounted on
 * /sys/fs/cgroup and no v1 hierarchy is mounted anywhere; 'hybrid' with both; 'v1'; 'none'.
 */
export function cgroupMode(mounts = readMounts()): 'v2' | 'hybrid' | 'v1' | 'none' {
  const types = mounts.split('\n').map((l) => l.split(' '));
  const v1 = types.some((f) => f[2] === 'cgroup');
  const v2 = types.some((f) => f[2] === 'cgroup2');
  const pure = types.some((f) => f[2] === 'cgroup2' && f[1] === '/sys/fs/cgroup');
  if (pure && !v1) return 'v2';
  if (v1) return v2 ? 'hybrid' : 'v1';
  return v2 ? 'hybrid' : 'none';
}

/**
 * 'v2vm' inside the lab: its init sets EVICTD_LAB=v2vm, and the kernel must really be pure
 * cgroup v2 (the variable alone, set on a hybrid host, excuses no skip).
 */
export function setting(): Setting {
  return process.env.EVICTD_LAB === 'v2vm' && cgroupMode() === 'v2' ? 'v2vm' : 'host';
}

/** One line naming the configuration the tests run in, for suite banners and failures. */
export function configuration(): string {
  const kernel = os.release();
  if (setting() === 'v2vm') return `pure cgroup v2 VM (scripts/v2vm), kernel ${kernel}`;
  const mode = cgroupMode();
  const detail =
    mode === 'hybrid' ? `hybrid cgroups (v1 controllers, cgroup2 at ${cgroup2Root() ?? '?'})` : mode === 'v2' ? 'pure cgroup v2' : `cgroups ${mode}`;
  return `host, ${detail}, kernel ${kernel}`;
}

/**
 * How much slower than this host the code runs (EVICTD_SLOW; the VM sets 10, since TCG
 * emulates every instruction). Only waits for something that must happen scale with it: a
 * test that asserts something does not happen keeps its window, or grows it, never shrinks it.
 */
export const slowFactor = Math.max(1, Number(process.env.EVICTD_SLOW) || 1);

/** `ms` scaled by the slowness of the machine. */
export function slow(ms: number): number {
  return Math.round(ms * slowFactor);
}

function readMounts(): string {
  try {
    return fs.readFileSync('/proc/mounts', 'utf8');
  } catch {
    return '';
  }
}
