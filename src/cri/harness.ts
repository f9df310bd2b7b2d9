import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Drives scripts/harness.sh (the offline containerd used by e2e tests, `evictd bench cri` and
 * the demo). `ensureHarness` starts it only when it is not already answering, and `release`
 * tears it down only if this process started it, so concurrent users keep their runtime.
 */
export const HARNESS_DIR = process.env.EVICTD_HARNESS_DIR ?? '/run/evictd-harness';
export const HARNESS_ENDPOINT = `unix://${HARNESS_DIR}/containerd.sock`;
export const HARNESS_CGROUP = process.env.EVICTD_HARNESS_CGROUP ?? '/kubepods';
export const IMAGES = { pause: 'localhost/evictd/pause:1', busybox: 'localhost/evictd/busybox:1', hog: 'localhost/evictd/hog:1', filler: 'localhost/evictd/filler:1' } as const;

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

export function runHarness(args: string[], timeoutMs = 300_000): Promise<HarnessRun> {
  return new Promise((resolve) => {
    execFile('bash', [harnessScript(), ...args], { timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface Harness {
  endpoint: string;
  /** True when this process brought containerd up (and so `release` takes it down). */
  startedHere: boolean;
  release(): Promise<void>;
}

/** Why the harness cannot run here, or null. */
export function harnessMissing(): string | null {
  if (process.getuid?.() !== 0) return 'needs root to run containerd';
  if (process.platform !== 'linux') return 'needs Linux';
  return null;
}

export async function ensureHarness(): Promise<Harness> {
  const status = await runHarness(['status']);
  let startedHere = false;
  if (status.code !== 0) {
    const up = await runHarness(['up']);
    if (up.code !== 0) throw new Error(`scripts/harness.sh up failed (exit ${up.code}): ${up.stderr.trim().split('\n').slice(-5).join(' | ')}`);
    startedHere = true;
  }
  return {
    endpoint: HARNESS_ENDPOINT,
    startedHere,
    async release() {
      if (!startedHere) return;
      const down = await runHarness(['down']);
      if (down.code !== 0) throw new Error(`scripts/harness.sh down failed (exit ${down.code}): ${down.stderr.trim()}`);
    },
  };
}

/** The PID of the harness's containerd, or null when it is not running. */
export function harnessContainerdPid(): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(HARNESS_DIR, 'containerd.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && fs.existsSync(`/proc/${pid}`) ? pid : null;
  } catch {
    return null;
  }
}
