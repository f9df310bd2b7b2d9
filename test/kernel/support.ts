import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nativeAvailable, nativeLoadError } from '../../src/kernel/addon';
import type { KernelEvent, Watcher } from '../../src/kernel/types';
import { onRamFilesystem, ScratchCgroup } from '../../src/lab/workload';
import { cgroup2Root, memcgV1Root, missingRoot } from '../support/environment';

export const MiB = 1024 * 1024;

/**
 * Why the kernel tests cannot run here (root, addon, cgroup mounts), or null. A test of a
 * cgroup v1 mechanism adds `needsV1(t)` (allowed to skip only in the pure v2 VM).
 */
export function missingKernel(needs: { cgroup2?: boolean; memory?: boolean } = {}): string | null {
  const root = missingRoot();
  if (root !== null) return root;
  if (!nativeAvailable()) return `native addon not built: ${nativeLoadError()?.message}`;
  if (needs.cgroup2 && cgroup2Root() === null) return 'no cgroup2 mount';
  if (needs.memory && memoryHierarchy() === null) return 'no memory controller (neither cgroup v1 memory nor cgroup2 with memory enabled)';
  return null;
}

/**
 * Where the memory controller is, with the file names that differ: the v1 hierarchy on hybrid
 * hosts, cgroup2 on pure v2 nodes (where the root must delegate memory to its children).
 */
export interface MemoryHierarchy {
  version: 1 | 2;
  root: string;
  /** memory.usage_in_bytes (v1) or memory.current (v2). */
  usage: string;
  /** memory.limit_in_bytes (v1) or memory.max (v2). */
  limit: string;
}

export function memoryHierarchy(): MemoryHierarchy | null {
  const v1 = memcgV1Root();
  if (v1 !== null) return { version: 1, root: v1, usage: 'memory.usage_in_bytes', limit: 'memory.limit_in_bytes' };
  const v2 = cgroup2Root();
  if (v2 === null) return null;
  const delegated = fs.readFileSync(`${v2}/cgroup.subtree_control`, 'utf8').split(/\s+/);
  return delegated.includes('memory') ? { version: 2, root: v2, usage: 'memory.current', limit: 'memory.max' } : null;
}

export function memory(): MemoryHierarchy {
  const m = memoryHierarchy();
  if (m === null) throw new Error('no memory controller');
  return m;
}

export function v1Root(): string {
  const r = memcgV1Root();
  if (r === null) throw new Error('no cgroup v1 memory controller');
  return r;
}

export function v2Root(): string {
  const r = cgroup2Root();
  if (r === null) throw new Error('no cgroup2 mount');
  return r;
}

/** Open fds of this process, by number, from /proc/self/fd. */
export function openFds(): string[] {
  return fs.readdirSync('/proc/self/fd').sort();
}

/** Records a watcher's events and errors, and lets a test wait for the next matching one. */
export class Recorder {
  readonly events: KernelEvent[] = [];
  readonly errors: Error[] = [];
  private wake: (() => void) | undefined;

  constructor(readonly watcher: Watcher) {
    watcher.on('event', (e: KernelEvent) => {
      this.events.push(e);
      this.wake?.();
    });
    watcher.on('error', (e: Error) => {
      this.errors.push(e);
      this.wake?.();
    });
  }

  /** Waits until an event at index >= `from` satisfies `match`; returns it. */
  async waitEvent(match: (e: KernelEvent) => boolean, timeoutMs: number, from = 0): Promise<KernelEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(match);
      if (found) return found;
      if (this.errors.length > 0) throw new Error(`watcher on ${this.watcher.source} failed: ${this.errors[0].message}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching ${this.watcher.kind} event on ${this.watcher.source} within ${timeoutMs} ms (${this.events.length} events)`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  async waitError(timeoutMs: number): Promise<Error> {
    const deadline = Date.now() + timeoutMs;
    while (this.errors.length === 0) {
      if (Date.now() > deadline) throw new Error(`no error from ${this.watcher.source} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.errors[0];
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A process alone in a new cgroup2 directory (on a hybrid host, in the unified mount, which has
 * cgroup.kill), as the pod a standing order names; removed after the test.
 */
export function victimPod(t: { after(fn: () => Promise<void> | void): void }, tag: string) {
  const cg = ScratchCgroup.create(v2Root(), tag, 2);
  const child = spawn('/bin/sh', ['-c', `echo $$ > '${path.join(cg.dir, 'cgroup.procs')}' && exec sleep 1000`], { stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  t.after(async () => {
    child.kill('SIGKILL');
    await exited;
    await cg.remove();
  });
  return { cg, child, exited };
}

/** Writes `bytes` of page cache from inside `cgroupDir` (charged there), synced so it is clean and reclaimable. */
export function writePageCache(cgroupDir: string, file: string, bytes: number): void {
  const script = `echo $$ > '${path.join(cgroupDir, 'cgroup.procs')}' && exec dd if=/dev/zero of='${file}' bs=1M count=${bytes / MiB} conv=fsync status=none`;
  const r = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, `dd: ${r.stderr}`);
}

/** A directory on a disk filesystem: tmpfs pages are shmem (anon on the LRU, never inactive_file). */
export function scratchDir(): string {
  const dir = os.tmpdir();
  return onRamFilesystem(dir) ? '/var/tmp' : dir;
}
