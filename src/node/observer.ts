/**
 * One fresh observation of the node, read in every pass (never cached: a notification only
 * wakes the loop, the decision uses numbers read now — kubernetes issue 51745).
 */
import fs from 'node:fs';
import { adjustForHugePages } from '../policy/hugepages';
import type { FilesystemLayout, NodeStats } from '../policy/types';
import { cgroupDir, type CgroupLayout } from './cgroups';
import { statfsStats } from './fs-stats';
import { readCgroupMemory, readMemAvailable, readMeminfo, type MachineMemory, type MemoryReading } from './memory';
import { listPodCgroups, readPodCgroupUsage, type PodCgroup, type PodCgroupUsage } from './pod-cgroups';
import { readPidStats } from './pids';

export interface NodeObserverOptions {
  layout: CgroupLayout;
  /** the node's cgroup inside the hierarchy ("/" = the whole machine) */
  cgroupRoot: string;
  /** the pod cgroup root inside the hierarchy, e.g. "/kubepods" */
  podCgroupRoot: string;
  /** where nodefs is measured (the kubelet's root dir) */
  nodefsPath: string;
  /**
   * The node's huge page capacity in bytes, read now (node/hugepages.ts), taken out of the node's
   * memory.available as the kubelet's HugepageAwareEviction does; absent: the gate is off.
   */
  hugePagesBytes?: () => number;
}

export interface ObservedPodCgroup extends PodCgroup {
  usage: PodCgroupUsage;
}

/** What one pass read from the node: its stats, its layout, the raw memory numbers and the pod cgroups. */
export interface NodeReading {
  node: NodeStats;
  layout: FilesystemLayout;
  /** the node memory cgroup's raw numbers (for arming thresholds) */
  memory: MemoryReading;
  /** the pod cgroup root's raw numbers, when its memory cgroup exists */
  allocatable: MemoryReading | null;
  /** pod cgroups found this pass, by pod uid */
  pods: Map<string, ObservedPodCgroup>;
}

export class NodeObserver {
  readonly memoryDir: string;
  readonly podRootMemoryDir: string;
  readonly pidsDir: string | null;

  constructor(readonly opts: NodeObserverOptions) {
    const { layout } = opts;
    this.memoryDir = cgroupDir(layout.memoryMount, opts.cgroupRoot);
    this.podRootMemoryDir = cgroupDir(layout.memoryMount, opts.podCgroupRoot);
    // The kernel-wide pid limit applies unless the node is a cgroup with its own pids.max.
    this.pidsDir = layout.pidsMount && isRoot(opts.cgroupRoot) === false ? cgroupDir(layout.pidsMount, opts.cgroupRoot) : null;
  }

  /**
   * Reads everything. `imagefsPath` is the runtime's image filesystem mountpoint (from
   * ImageFsInfo) when known; on the same device as nodefs the layout is 'single'.
   */
  /** The node's and the pod root's memory numbers alone (cheap: a few small cgroup files). */
  observeMemory(machine: MachineMemory = readMeminfo()): { memory: MemoryReading; allocatable: MemoryReading | null } {
    const { layout } = this.opts;
    const memory = readCgroupMemory(this.memoryDir, layout.memoryVersion, { root: isRoot(this.opts.cgroupRoot), machine });
    if (!memory) throw new Error(`the node memory cgroup ${this.memoryDir} does not exist`);
    const allocatable = readCgroupMemory(this.podRootMemoryDir, layout.memoryVersion, { machine });
    if (allocatable) {
      // Pods may use at most what the node has: the pod root's own limit, capped by the node's.
      const capacity = Math.min(allocatable.capacityBytes, memory.capacityBytes);
      allocatable.capacityBytes = capacity;
      allocatable.availableBytes = capacity - allocatable.workingSetBytes;
    }
    // After the pod root's cap above, which is the machine's memory: the adjustment is the node's alone.
    const hugePages = this.opts.hugePagesBytes?.() ?? 0;
    if (hugePages > 0) {
      const { availableBytes } = adjustForHugePages(memory, hugePages);
      Object.assign(memory, { availableBytes, capacityBytes: availableBytes + memory.workingSetBytes, hugePagesBytes: hugePages });
    }
    return { memory, allocatable };
  }

  /** What the node has left before the kernel's OOM killer, read now (memory.ts readMemAvailable). */
  memAvailableBytes(): number | null {
    try {
      return readMemAvailable();
    } catch {
      return null;
    }
  }

  observe(imagefsPath?: string): NodeReading {
    const { layout } = this.opts;
    const machine = readMeminfo();
    const { memory, allocatable } = this.observeMemory(machine);
    const node: NodeStats = {
      memory: { availableBytes: memory.availableBytes, workingSetBytes: memory.workingSetBytes },
      pid: readPidStats(this.pidsDir),
    };
    if (allocatable) node.allocatableMemory = { availableBytes: allocatable.availableBytes, workingSetBytes: allocatable.workingSetBytes };
    node.nodefs = statfsStats(this.opts.nodefsPath);
    let fsLayout: FilesystemLayout = 'single';
    if (imagefsPath && fs.existsSync(imagefsPath)) {
      if (fs.statSync(imagefsPath).dev !== fs.statSync(this.opts.nodefsPath).dev) {
        node.imagefs = statfsStats(imagefsPath);
        fsLayout = 'dedicated-imagefs';
      } else {
        node.imagefs = node.nodefs;
      }
    }
    const pods = new Map<string, ObservedPodCgroup>();
    for (const pc of listPodCgroups(layout.memoryMount, this.opts.podCgroupRoot)) {
      const usage = readPodCgroupUsage(layout.memoryMount, layout.memoryVersion, layout.pidsMount, pc.path, machine);
      // A pod cgroup that vanished between the listing and the read is simply not there.
      if (usage) pods.set(pc.uid, { ...pc, usage });
    }
    return { node, layout: fsLayout, memory, allocatable, pods };
  }
}

function isRoot(cgroupPath: string): boolean {
  return cgroupPath.replace(/\/+/g, '') === '';
}
