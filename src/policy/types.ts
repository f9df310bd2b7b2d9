/**
 * The policy core's data model. Everything here is plain data: observers (src/node, src/cri,
 * src/kube) fill it in, `assess()` and `evaluate()` (evaluate.ts) read it. Byte and count values are JS numbers (exact for
 * integers up to 2^53, far beyond any node); Quantity objects are kept only where the kubelet
 * prints the user's own quantity back (requests, limits, thresholds).
 */
import type { Quantity } from './quantity';

export const SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
] as const;
export type Signal = (typeof SIGNALS)[number];

/** The signals of local-storage limit evictions (never thresholds; grace period 0). */
export type LocalStorageSignal = 'emptydirfs.limit' | 'ephemeralpodfs.limit' | 'ephemeralcontainerfs.limit';

export type NodeCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** single: one filesystem; dedicated-imagefs: images and writable layers on their own disk;
 * split: images on imagefs, writable layers (containerfs) with logs and volumes on nodefs. */
export type FilesystemLayout = 'single' | 'dedicated-imagefs' | 'split';

export type NodeReclaimFunction = 'deleteUnusedContainers' | 'deleteUnusedImages';

export interface MemoryStats {
  availableBytes: number;
  workingSetBytes: number;
}

export interface FsStats {
  availableBytes?: number;
  capacityBytes?: number;
  inodesFree?: number;
  inodes?: number;
}

export interface PidStats {
  maxPID: number;
  running: number;
}

/** Node-level numbers read at one moment. An absent part means "not observed". */
export interface NodeStats {
  memory?: MemoryStats;
  allocatableMemory?: MemoryStats;
  nodefs?: FsStats;
  imagefs?: FsStats;
  containerfs?: FsStats;
  pid?: PidStats;
}

/** Resource name -> quantity, as in a container's resources.requests / limits. */
export type ResourceList = Partial<Record<string, Quantity>>;

export interface ContainerSpec {
  name: string;
  requests: ResourceList;
  limits: ResourceList;
  /** an init container with restartPolicy Always: a sidecar, running beside the app containers */
  restartPolicy?: 'Always';
}

export interface VolumeSpec {
  name: string;
  /** present for emptyDir volumes; medium "" (disk), "Memory", "HugePages" or "HugePages-<size>" */
  emptyDir?: { sizeLimit?: Quantity; medium?: string };
  /**
   * A source other than emptyDir, as far as local storage goes: configMap and gitRepo are local
   * ephemeral volumes, hostPath is local, anything else (a PVC, a secret, a CSI volume) is
   * `other`. Neither this nor emptyDir: a volume without a source, which the API server makes an
   * emptyDir on the node's disk (SetDefaults_Volume).
   */
  source?: VolumeSource;
}

export type VolumeSource = 'configMap' | 'gitRepo' | 'hostPath' | 'other';

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

/** What the policy needs to know of a pod's spec. */
export interface PodSpec {
  namespace: string;
  name: string;
  uid: string;
  priority: number;
  terminationGracePeriodSeconds?: number;
  annotations: Record<string, string>;
  containers: ContainerSpec[];
  initContainers?: ContainerSpec[];
  volumes: VolumeSpec[];
  tolerations?: Toleration[];
  /**
   * Pod-level requests and limits (spec.resources, KEP-2837 PodLevelResources: beta and on by
   * default since v1.34). When they name cpu, memory or a hugepages-<size>, they replace the
   * containers' sum in the pod's request (policy/pods.ts) and alone decide its QoS class.
   */
  resources?: { requests: ResourceList; limits: ResourceList };
  /** spec.overhead: the RuntimeClass's per-pod overhead, added to a non-zero pod request */
  overhead?: ResourceList;
}

export interface ContainerUsage {
  name: string;
  /** memory working set, bytes */
  memoryBytes?: number;
  /** writable layer, bytes and inodes */
  rootfsBytes?: number;
  rootfsInodes?: number;
  /** container logs, bytes and inodes */
  logsBytes?: number;
  logsInodes?: number;
  /** cgroup v2 memory.events counters `high` and `max` (per-container memory pressure, policy/memory-pressure.ts) */
  memoryEvents?: { high: number; max: number };
  /** memory.pressure `some avg10`, percent */
  memoryPressureSomeAvg10?: number;
}

export interface VolumeUsage {
  name: string;
  usedBytes: number;
  inodesUsed?: number;
  /** the measurement stopped at a bound (node/volumes.ts WalkBounds): the counts are a lower bound */
  partial?: 'entries' | 'time' | 'depth' | 'links';
}

/** A pod's usage at one moment. */
export interface PodUsage {
  containers: ContainerUsage[];
  volumes: VolumeUsage[];
  processes?: number;
}

/** An active pod: its spec and, when the observer found any, its usage. */
export interface ActivePod {
  spec: PodSpec;
  usage?: PodUsage;
}

export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** A pod condition the agent owns and writes to the pod's status (KEP-5986's ContainerMemoryPressure). */
export interface PodConditionReport {
  pod: PodRef;
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  /** a Warning event on the pod, written with it */
  event?: { reason: string; message: string };
}
