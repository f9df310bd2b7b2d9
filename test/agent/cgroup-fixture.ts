/**
 * Real cgroups for agent tests: a "node" cgroup with a memory limit (and a pids cgroup of the
 * same path), created in every hierarchy the tests use and removed afterwards (processes
 * killed first, children before parents).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { detectCgroups, type CgroupLayout } from '../../src/node/cgroups';

let counter = 0;

/**
 * On cgroup2 a child has a controller's files (memory.max, pids.max) only when its parent
 * enables that controller in cgroup.subtree_control, as systemd and the kubelet do down to the
 * pods on a v2 node. A hybrid host's controller-less cgroup2 has nothing to enable.
 */
function delegate(parent: string): void {
  const control = path.join(parent, 'cgroup.subtree_control');
  if (!fs.existsSync(control)) return;
  const enabled = fs.readFileSync(control, 'utf8').split(/\s+/);
  const available = fs.readFileSync(path.join(parent, 'cgroup.controllers'), 'utf8').split(/\s+/);
  const wanted = ['memory', 'pids'].filter((c) => available.includes(c) && !enabled.includes(c));
  if (wanted.length > 0) fs.writeFileSync(control, wanted.map((c) => `+${c}`).join(' '));
}

export class CgroupFixture {
  readonly layout: CgroupLayout;
  /** the node cgroup path inside the hierarchies, e.g. "/evictd-agent-test-123-1" */
  readonly root: string;
  private readonly made: string[] = [];
  private readonly children: ChildProcess[] = [];

  constructor(prefix = 'evictd-agent-test') {
    this.layout = detectCgroups();
    this.root = `/${prefix}-${process.pid}-${++counter}`;
  }

  mounts(): string[] {
    const m = [this.layout.memoryMount];
    if (this.layout.pidsMount && this.layout.pidsMount !== this.layout.memoryMount) m.push(this.layout.pidsMount);
    if (this.layout.unifiedMount && !m.includes(this.layout.unifiedMount)) m.push(this.layout.unifiedMount);
    return m;
  }

  /** Creates `rel` (relative to the node root) in every hierarchy; returns its cgroup path. */
  mkdir(rel = ''): string {
    const p = path.posix.join(this.root, rel);
    for (const mount of this.mounts()) {
      const parts = p.split('/').filter(Boolean);
      let d = mount;
      for (const part of parts) {
        delegate(d);
        d = path.join(d, part);
        if (!fs.existsSync(d)) {
          fs.mkdirSync(d);
          this.made.push(d);
        }
      }
    }
    return p;
  }

  memDir(rel = ''): string {
    return path.join(this.layout.memoryMount, this.root, rel);
  }

  setMemoryLimit(bytes: number, rel = ''): void {
    const file = this.layout.memoryVersion === 1 ? 'memory.limit_in_bytes' : 'memory.max';
    fs.writeFileSync(path.join(this.memDir(rel), file), String(bytes));
  }

  setPidsMax(n: number, rel = ''): void {
    if (!this.layout.pidsMount) throw new Error('no pids controller');
    fs.writeFileSync(path.join(this.layout.pidsMount, this.root, rel, 'pids.max'), String(n));
  }

  /**
   * Starts `node -e script` inside cgroup `rel` in every hierarchy: a shell writes its own pid
   * to each cgroup.procs, then execs node, so the allocation is charged from the first byte.
   */
  spawnIn(rel: string, script: string): ChildProcess {
    const files = this.mounts().map((m) => path.join(m, this.root, rel, 'cgroup.procs'));
    const sh = files.map((f) => `echo $$ > ${f}`).join(' && ') + ' && exec "$0" -e "$1"';
    const child = spawn('/bin/sh', ['-c', sh, process.execPath, script], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.children.push(child);
    return child;
  }

  /** Resolves on the first stdout line of `child` that matches `re`. */
  static waitLine(child: ChildProcess, re: RegExp, timeoutMs = 15000): Promise<string> {
    return new Promise((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error(`timeout waiting for ${re}`)), timeoutMs);
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        for (const line of buf.split('\n')) {
          if (re.test(line)) {
            clearTimeout(timer);
            resolve(line);
            return;
          }
        }
      });
      child.once('exit', () => {
        clearTimeout(timer);
        reject(new Error(`child exited before ${re}`));
      });
    });
  }

  async cleanup(): Promise<void> {
    for (const c of this.children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await new Promise((r) => c.once('exit', r));
      }
    }
    // Deepest first. rmdir of a v1 cgroup can give EBUSY for a moment after its last task died.
    for (const d of [...this.made].sort((a, b) => b.length - a.length)) {
      for (let i = 0; i < 50; i++) {
        try {
          if (fs.existsSync(d)) fs.rmdirSync(d);
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    }
  }
}
