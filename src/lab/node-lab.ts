/**
 * A small "node" on a big machine, for the demo, `bench protect` and the agent's e2e tests:
 * a cgroup with a memory limit (its limit is the node's capacity for `evictd run
 * --cgroup-root`), pods started through the real CRI runtime with their cgroup_parent under it
 * (<node>/kubepods/{,burstable/,besteffort/}pod<uid>, as the kubelet lays them out), and a
 * teardown that leaves nothing behind: sandboxes stopped and removed, leftover processes
 * killed, cgroups removed deepest first in every hierarchy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { CriClient } from '../cri';
import { containerConfig, sandboxConfig, type ContainerRunSpec, type SandboxSpec } from './sandbox-config';
import { allCgroupMounts, cgroupPids, detectCgroups, parseKeyValues, type CgroupLayout } from '../node/cgroups';
import type { QosClass } from '../node/pod-cgroups';

export const LAB_LABEL = 'evictd.io/lab';

export interface LabPod {
  name: string;
  namespace: string;
  uid: string;
  qos: QosClass;
  sandboxId: string;
  containers: Record<string, string>;
  /** the pod cgroup path inside the hierarchies */
  cgroupPath: string;
  logDirectory: string;
}

export interface LabPodOptions {
  name: string;
  namespace?: string;
  qos: QosClass;
  containers: ContainerRunSpec[];
  annotations?: Record<string, string>;
  /** the pod's uid: absent, a fresh one; a uid given again is the pod restarted in place */
  uid?: string;
  /** the sandbox attempt (count up for a pod restarted in place) */
  attempt?: number;
}

export interface NodeLabOptions {
  /** cgroup name, e.g. "evictd-demo" (made unique with the pid) */
  name: string;
  /** the node's capacity; null leaves the node cgroup unlimited (the whole machine is the node) */
  memoryLimitBytes: number | null;
  /** the pod cgroup root's own limit (allocatable), if any */
  podsMemoryLimitBytes?: number;
  /** pids.max of the node cgroup, if any */
  pidsMax?: number;
  /** where pod logs go */
  logRoot: string;
}

export class NodeLab {
  readonly layout: CgroupLayout;
  /** the node cgroup path, e.g. "/evictd-demo-1234" */
  readonly root: string;
  readonly podRoot: string;
  readonly labId = randomUUID().slice(0, 8);
  /** pod creations under way: destroy() waits for them, so that nothing lands after its sweep */
  private readonly creating = new Set<Promise<LabPod>>();
  private destroying = false;
  readonly pods: LabPod[] = [];
  private readonly made: string[] = [];

  private constructor(
    private readonly client: CriClient,
    readonly opts: NodeLabOptions,
  ) {
    this.layout = detectCgroups();
    this.root = `/${opts.name}-${process.pid}`;
    this.podRoot = `${this.root}/kubepods`;
  }

  static create(client: CriClient, opts: NodeLabOptions): NodeLab {
    const lab = new NodeLab(client, opts);
    for (const rel of ['', '/kubepods', '/kubepods/burstable', '/kubepods/besteffort']) lab.mkdir(lab.root + rel);
    if (opts.memoryLimitBytes !== null) lab.writeMemoryLimit(lab.root, opts.memoryLimitBytes);
    if (opts.podsMemoryLimitBytes !== undefined) lab.writeMemoryLimit(lab.podRoot, opts.podsMemoryLimitBytes);
    if (opts.pidsMax !== undefined) lab.setPidsMax(opts.pidsMax);
    fs.mkdirSync(opts.logRoot, { recursive: true });
    return lab;
  }

  private hierarchies(): string[] {
    const l = this.layout;
    const out = [l.memoryMount];
    for (const m of [l.pidsMount, l.unifiedMount]) if (m && !out.includes(m)) out.push(m);
    return out;
  }

  private mkdir(cgroupPath: string): void {
    for (const h of this.hierarchies()) {
      const d = path.join(h, cgroupPath);
      if (!fs.existsSync(d)) {
        fs.mkdirSync(d);
        this.made.push(d);
      }
      // cgroup v2: children get memory.* and pids.* files only where the parent delegates them.
      if (this.layout.memoryVersion === 2 && h === this.layout.memoryMount) {
        try {
          fs.writeFileSync(path.join(d, 'cgroup.subtree_control'), '+memory +pids');
        } catch {
          // controllers not available to delegate: the limits below will say so
        }
      }
    }
  }

  memoryDir(cgroupPath = this.root): string {
    return path.join(this.layout.memoryMount, cgroupPath);
  }

  private writeMemoryLimit(cgroupPath: string, bytes: number): void {
    const file = this.layout.memoryVersion === 1 ? 'memory.limit_in_bytes' : 'memory.max';
    fs.writeFileSync(path.join(this.memoryDir(cgroupPath), file), String(bytes));
  }

  setPidsMax(n: number | 'max'): void {
    if (!this.layout.pidsMount) throw new Error('no pids controller on this machine');
    fs.writeFileSync(path.join(this.layout.pidsMount, this.root, 'pids.max'), String(n));
  }

  /**
   * A child cgroup of a running pod, in every hierarchy the lab uses (a leaf, so cgroup v2 lets a
   * process join it): a process started there (`Memhog.start(dirs)`) is charged to the pod and
   * killed with it, without the runtime. `remove()` takes it away once it is empty, so the
   * runtime can remove the pod's cgroup.
   */
  podChildCgroup(pod: LabPod, name: string): { dirs: string[]; remove: () => void } {
    const dirs = this.hierarchies().map((h) => path.join(h, pod.cgroupPath, name));
    for (const d of dirs) fs.mkdirSync(d, { recursive: true });
    return {
      dirs,
      remove: () => {
        for (const d of dirs) {
          try {
            fs.rmdirSync(d);
          } catch {
            // gone already (the pod's cgroup removed), or still busy: the lab's destroy sweeps it
          }
        }
      },
    };
  }

  podCgroupPath(qos: QosClass, uid: string): string {
    const tier = qos === 'Guaranteed' ? '' : qos === 'Burstable' ? '/burstable' : '/besteffort';
    return `${this.podRoot}${tier}/pod${uid}`;
  }

  /**
   * Creates a pod (its sandbox, then each container, started). While destroy() runs, none is
   * begun, and one under way stops at its next step with an error: destroy() waits for those, so
   * that no sandbox and no container lands after its sweep (a bench stopped by a signal mid-trial
   * was creating a pod: a container started in a sandbox the sweep had stopped kept it from being
   * removed).
   */
  async runPod(p: LabPodOptions): Promise<LabPod> {
    if (this.destroying) throw new Error(`lab ${this.opts.name}: being destroyed, no new pod`);
    const run = this.createPod(p);
    this.creating.add(run);
    try {
      return await run;
    } finally {
      this.creating.delete(run);
    }
  }

  private async createPod(p: LabPodOptions): Promise<LabPod> {
    const uid = p.uid ?? `${this.labId}-${p.name}-${randomUUID().slice(0, 8)}`;
    const namespace = p.namespace ?? 'evictd-lab';
    const logDirectory = path.join(this.opts.logRoot, uid);
    fs.mkdirSync(logDirectory, { recursive: true });
    const cgroupPath = this.podCgroupPath(p.qos, uid);
    const spec: SandboxSpec = {
      name: p.name,
      uid,
      namespace,
      cgroupParent: cgroupPath,
      labels: { [LAB_LABEL]: this.labId },
      annotations: { 'kubernetes.io/config.source': 'api', ...p.annotations },
      logDirectory,
      ...(p.attempt !== undefined ? { attempt: p.attempt } : {}),
    };
    const going = () => {
      if (this.destroying) throw new Error(`lab ${this.opts.name}: destroyed while pod ${p.name} was created`);
    };
    const sandboxId = await this.client.runPodSandbox(sandboxConfig(spec));
    going();
    const pod: LabPod = { name: p.name, namespace, uid, qos: p.qos, sandboxId, containers: {}, cgroupPath, logDirectory };
    this.pods.push(pod);
    // The kubelet gives Guaranteed and Burstable pods whose containers all have a memory limit a
    // pod-level limit of their sum; runc only limits the containers, so write it as the kubelet would.
    if (p.qos !== 'BestEffort' && p.containers.every((c) => (c.memoryLimitBytes ?? 0) > 0)) {
      this.writeMemoryLimit(
        cgroupPath,
        p.containers.reduce((sum, c) => sum + (c.memoryLimitBytes ?? 0), 0),
      );
    }
    for (const c of p.containers) {
      const id = await this.client.createContainer(sandboxId, containerConfig(spec, { logPath: `${c.name}.log`, ...c }), sandboxConfig(spec));
      going();
      await this.client.startContainer(id);
      going();
      pod.containers[c.name] = id;
    }
    return pod;
  }

  /** The container's log lines (the CRI log format's message part). */
  podLog(pod: LabPod, container: string): string[] {
    const file = path.join(pod.logDirectory, `${container}.log`);
    if (!fs.existsSync(file)) return [];
    const out: string[] = [];
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      // "<RFC3339Nano> stdout F <message>"
      const m = /^\S+ (?:stdout|stderr) [FP] (.*)$/.exec(line);
      if (m) out.push(m[1]!);
    }
    return out;
  }

  /** Is the pod's sandbox still ready in the runtime? */
  async sandboxReady(pod: LabPod): Promise<boolean> {
    const list = await this.client.listPodSandbox({ id: pod.sandboxId });
    return list.some((s) => s.state === 'SANDBOX_READY');
  }

  /** Is any process of the pod still alive (from its memory cgroup)? */
  podAlive(pod: LabPod): boolean {
    return cgroupPids(this.memoryDir(pod.cgroupPath)).length > 0;
  }

  /** Is this container's process still alive? (runc puts it in <pod cgroup>/<container id>.) */
  containerAlive(pod: LabPod, container: string): boolean {
    const id = pod.containers[container];
    if (!id) return false;
    return cgroupPids(path.join(this.memoryDir(pod.cgroupPath), id)).length > 0;
  }

  /**
   * Did the kernel OOM-kill this container? containerd records an OOM event of the task as the
   * container's exit reason "OOMKilled" (the container's own cgroup, where cgroup v1 counts the
   * kill, is removed with the container).
   */
  async containerOomKilled(pod: LabPod, container: string): Promise<boolean> {
    const id = pod.containers[container];
    if (!id) return false;
    const st = await this.client.containerStatus(id).catch(() => null);
    return st?.status?.reason === 'OOMKilled';
  }

  /** How a container ended: its state, exit code and reason (containerd: "OOMKilled", "Completed", "Error"), or null. */
  async containerExit(pod: LabPod, container: string): Promise<{ state: string; exitCode: number; reason: string } | null> {
    const id = pod.containers[container];
    if (!id) return null;
    const st = await this.client.containerStatus(id).catch(() => null);
    return st?.status ? { state: String(st.status.state), exitCode: st.status.exitCode, reason: st.status.reason } : null;
  }

  /**
   * How a container ended, once the runtime has seen it end: its processes can be gone a moment
   * before containerd records the exit (until then it reports RUNNING with exit code 0).
   */
  async containerExited(pod: LabPod, container: string, timeoutMs: number): Promise<{ state: string; exitCode: number; reason: string } | null> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const st = await this.containerExit(pod, container);
      if (st?.state === 'CONTAINER_EXITED' || Date.now() > end) return st;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Kernel OOM kills so far, machine-wide (/proc/vmstat oom_kill: v1 counts per leaf memcg only). */
  static oomKills(): number {
    return parseKeyValues(fs.readFileSync('/proc/vmstat', 'utf8'))['oom_kill'] ?? 0;
  }

  /** Stops and removes one pod's sandbox (best effort). */
  async removePod(pod: LabPod): Promise<void> {
    await this.client.stopPodSandbox(pod.sandboxId).catch(() => undefined);
    await this.client.removePodSandbox(pod.sandboxId).catch(() => undefined);
    const i = this.pods.indexOf(pod);
    if (i >= 0) this.pods.splice(i, 1);
  }

  /**
   * Stops and removes the lab's sandboxes (best effort, each step bounded by the client's
   * deadlines), listing again after each round: a removal the runtime refused (a container of
   * the pod still starting, or stopped by another caller meanwhile) is tried again, three rounds at most.
   */
  async removePods(): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const list = await this.client.listPodSandbox({ labelSelector: { [LAB_LABEL]: this.labId } }).catch(() => []);
      if (list.length === 0) return;
      await Promise.all(
        list.map(async (s) => {
          await this.client.stopPodSandbox(s.id).catch(() => undefined);
          await this.client.removePodSandbox(s.id).catch(() => undefined);
        }),
      );
    }
  }

  /** Removes pods, kills what is left in the node cgroup, removes every cgroup under it. */
  async destroy(): Promise<void> {
    // A pod still being created would land after the list the sweep removes.
    this.destroying = true;
    await Promise.allSettled([...this.creating]);
    await this.removePods();
    for (let round = 0; round < 50; round++) {
      const pids = cgroupPids(this.memoryDir());
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      if (this.removeCgroups()) break;
      await new Promise((r) => setTimeout(r, 40));
    }
    fs.rmSync(this.opts.logRoot, { recursive: true, force: true });
  }

  /**
   * rmdir every cgroup under the node root, deepest first, in every hierarchy (runc creates a
   * pod's cgroup_parent in all of them, not only those the lab made); true when all are gone.
   */
  private removeCgroups(): boolean {
    let ok = true;
    for (const h of allCgroupMounts()) {
      const top = path.join(h, this.root);
      if (!fs.existsSync(top)) continue;
      const dirs: string[] = [];
      const walk = (d: string): void => {
        dirs.push(d);
        for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
      };
      try {
        walk(top);
      } catch {
        ok = false;
        continue;
      }
      for (const d of dirs.sort((a, b) => b.length - a.length)) {
        try {
          fs.rmdirSync(d);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') ok = false;
        }
      }
    }
    return ok;
  }
}

/** What the hog read in /proc/meminfo right after a MiB, or a chunk of one (HOG_METER, HOG_METER_FINE), kB as the file prints them. */
export interface HogReading {
  /** when the MiB's (chunk's) touch began: the crossing, if this reading is the first below a line, lies between this and `ns` */
  touchNs: bigint;
  availableKb: number;
  freeKb: number;
  inactiveFileKb: number;
  /** the kubelet's node memory.available on cgroup v2 (MemTotal - (anon + file - inactive_file)), when the hog read it */
  kubeletKb?: number;
}

/**
 * The hog's stdout lines "<CLOCK_MONOTONIC ns> <MiB held>" as numbers; with HOG_METER the line
 * goes on with "<touch ns> <MemAvailable> <MemFree> <Inactive(file)> [<kubelet>]", returned as `reading`.
 * With HOG_METER_FINE, MiB held is a fraction after a chunk of a MiB ("412.0625").
 */
export function hogSteps(lines: string[]): { ns: bigint; mib: number; reading?: HogReading }[] {
  const out: { ns: bigint; mib: number; reading?: HogReading }[] = [];
  for (const l of lines) {
    const m = /^(\d+) (\d+(?:\.\d+)?)(?: (\d+) (-?\d+) (-?\d+) (-?\d+)(?: (-?\d+))?)?$/.exec(l.trim());
    if (!m) continue;
    const step: { ns: bigint; mib: number; reading?: HogReading } = { ns: BigInt(m[1]!), mib: Number(m[2]) };
    // A field the kernel did not print reads -1: such a reading is no reading.
    if (m[3] !== undefined && Number(m[4]) >= 0 && Number(m[5]) >= 0 && Number(m[6]) >= 0)
      step.reading = {
        touchNs: BigInt(m[3]),
        availableKb: Number(m[4]),
        freeKb: Number(m[5]),
        inactiveFileKb: Number(m[6]),
        ...(m[7] !== undefined && Number(m[7]) >= 0 ? { kubeletKb: Number(m[7]) } : {}),
      };
    out.push(step);
  }
  return out;
}
