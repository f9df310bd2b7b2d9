import fs from 'node:fs';

/**
 * Tests that need root, cgroups or containerd call `needs(reason-or-null)`.
 * Elsewhere they skip with the reason; under EVICTD_REQUIRE_KERNEL=1 (set by .ci/run) a missing
 * prerequisite is a failure, so CI can never go green by skipping.
 *
 * Usage: test('x', { skip: needs(missingRoot()) }, ...) does not work for the CI rule, so use
 *   test('x', (t) => { if (skipped(t, missingRoot())) return; ... })
 */
export const requireKernel = process.env.EVICTD_REQUIRE_KERNEL === '1';

interface Skippable {
  skip(message?: string): void;
}

/** Returns true (after marking the test skipped) when `missing` names a missing prerequisite. */
export function skipped(t: Skippable, missing: string | null): boolean {
  if (missing === null) return false;
  if (requireKernel) throw new Error(`EVICTD_REQUIRE_KERNEL=1 but this test cannot run: ${missing}`);
  t.skip(missing);
  return true;
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
