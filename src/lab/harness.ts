import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EnvironmentError } from '../errors';

/**
 * Drives scripts/harness.sh (the offline containerd used by e2e tests, `evictd bench cri` and
 * the demo). `ensureHarness` starts it only when it is not already answering, and `release`
 * tears it down only if this process started it, so concurrent users keep their runtime.
 * A test that kills containerd on purpose passes its own `dir` to get a private instance.
 */
export const HARNESS_DIR = process.env.EVICTD_HARNESS_DIR ?? '/run/evictd-harness';
export const HARNESS_ENDPOINT = `unix://${HARNESS_DIR}/containerd.sock`;
export const HARNESS_CGROUP = process.env.EVICTD_HARNESS_CGROUP ?? '/kubepods';
export const IMAGES = {
  pause: 'localhost/evictd/pause:1',
  busybox: 'localhost/evictd/busybox:1',
  hog: 'localhost/evictd/hog:1',
  filler: 'localhost/evictd/filler:1',
} as const;

export function harnessScript(): string {
  for (const up of ['../../../scripts', '../../scripts']) {
    const p = path.resolve(__dirname, up, 'harness.sh');
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`scripts/harness.sh not found above ${__dirname}`);
}

export interface HarnessRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runHarness(args: string[], dir = HARNESS_DIR, cgroup = HARNESS_CGROUP, timeoutMs = 300_000): Promise<HarnessRun> {
  return new Promise((resolve) => {
    const env = { ...process.env, EVICTD_HARNESS_DIR: dir, EVICTD_HARNESS_CGROUP: cgroup };
    execFile('bash', [harnessScript(), ...args], { env, timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface Harness {
  dir: string;
  endpoint: string;
  /** The cgroup pods should use as parent (their cgroup_parent under it); `down` removes it. */
  cgroup: string;
  /** True when this process brought containerd up (and so `release` takes it down). */
  startedHere: boolean;
  run(args: string[]): Promise<HarnessRun>;
  /** The PID of this harness's containerd, or null when it is not running. */
  containerdPid(): number | null;
  release(): Promise<void>;
}

/** Why the harness cannot run here, or null. */
export function harnessMissing(): string | null {
  if (process.platform !== 'linux') return 'needs Linux';
  if (process.getuid?.() !== 0) return 'needs root to run containerd';
  return null;
}

export async function ensureHarness(dir = HARNESS_DIR, cgroup = HARNESS_CGROUP): Promise<Harness> {
  const status = await runHarness(['status'], dir, cgroup);
  let startedHere = false;
  if (status.code !== 0) {
    const up = await runHarness(['up'], dir, cgroup);
    if (up.code !== 0) throw new EnvironmentError(`scripts/harness.sh up failed (exit ${up.code}): ${up.stderr.trim().split('\n').slice(-5).join(' | ')}`);
    startedHere = true;
  }
  return {
    dir,
    endpoint: `unix://${dir}/containerd.sock`,
    cgroup,
    startedHere,
    run: (args) => runHarness(args, dir, cgroup),
    containerdPid: () => containerdPid(dir),
    async release() {
      if (!startedHere) return;
      const down = await runHarness(['down'], dir, cgroup);
      if (down.code !== 0) throw new Error(`scripts/harness.sh down failed (exit ${down.code}): ${down.stderr.trim()}`);
    },
  };
}

function containerdPid(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'containerd.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && fs.existsSync(`/proc/${pid}`) ? pid : null;
  } catch {
    return null;
  }
}
