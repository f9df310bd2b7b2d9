/**
 * The CRI runtime v1 messages evictd reads and writes, as @grpc/proto-loader hands them over
 * with the options in client.ts: camelCase field names, enums as their names, int64/uint64 as
 * numbers (exact up to 2^53 bytes; nanosecond timestamps lose sub-microsecond digits), unset
 * scalars as their zero value and unset messages as null. Names follow proto/runtime-v1.proto.
 */

export type Labels = Record<string, string>;

export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

/** A uint64 or int64 wrapper message: null when the runtime did not report the value. */
export type Wrapped = { value: number } | null;

export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface StatusResponse {
  status: { conditions: RuntimeCondition[] } | null;
  info: Labels;
}

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  targetId?: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

/** A huge page limit: `pageSize` as "2MB" or "1GB", `limit` in bytes. */
export interface HugepageLimit {
  pageSize: string;
  limit: number;
}

/**
 * A container's Linux resources, as sent (every field optional: an unset scalar goes out as 0,
 * "not specified") and as ContainerStatus reports them (every field present).
 */
export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  cpusetCpus?: string;
  cpusetMems?: string;
  hugepageLimits?: HugepageLimit[];
  /** cgroup v2 files by name, e.g. { "memory.high": "max" } */
  unified?: Labels;
  memorySwapLimitInBytes?: number;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  logDirectory?: string;
  labels?: Labels;
  annotations?: Labels;
  linux?: {
    cgroupParent?: string;
    securityContext?: {
      namespaceOptions?: NamespaceOption;
      runAsUser?: { value: number };
      readonlyRootfs?: boolean;
      privileged?: boolean;
    };
    sysctls?: Labels;
    overhead?: LinuxContainerResources;
    resources?: LinuxContainerResources;
  };
}

export interface ContainerConfig {
  metadata: { name: string; attempt?: number };
  image: { image: string; annotations?: Labels };
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: { key: string; value: string }[];
  mounts?: Mount[];
  labels?: Labels;
  annotations?: Labels;
  logPath?: string;
  linux?: {
    resources?: LinuxContainerResources;
    securityContext?: LinuxContainerSecurityContext;
  };
}

export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  propagation?: MountPropagation;
}

export interface LinuxContainerSecurityContext {
  capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: { value: number };
  runAsGroup?: { value: number };
  readonlyRootfs?: boolean;
  noNewPrivs?: boolean;
  seccomp?: { profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost'; localhostRef?: string };
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata | null;
  state: PodSandboxState;
  createdAt: number;
  labels: Labels;
  annotations: Labels;
  runtimeHandler: string;
}

export interface PodSandboxStatus extends PodSandbox {
  network: { ip: string; additionalIps: { ip: string }[] } | null;
  linux: { namespaces: { options: NamespaceOption | null } | null } | null;
}

export interface PodSandboxStatusResponse {
  status: PodSandboxStatus | null;
  info: Labels;
}

export interface ImageSpec {
  image: string;
  annotations: Labels;
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number } | null;
  image: ImageSpec | null;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Labels;
  annotations: Labels;
  imageId: string;
}

export interface ContainerStatus {
  id: string;
  metadata: { name: string; attempt: number } | null;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: ImageSpec | null;
  imageRef: string;
  reason: string;
  message: string;
  labels: Labels;
  annotations: Labels;
  logPath: string;
  resources: { linux: LinuxContainerResources | null } | null;
  imageId: string;
}

export interface ContainerStatusResponse {
  status: ContainerStatus | null;
  info: Labels;
}

export interface CpuUsage {
  timestamp: number;
  usageCoreNanoSeconds: Wrapped;
  usageNanoCores: Wrapped;
}

export interface MemoryUsage {
  timestamp: number;
  workingSetBytes: Wrapped;
  availableBytes: Wrapped;
  usageBytes: Wrapped;
  rssBytes: Wrapped;
  pageFaults: Wrapped;
  majorPageFaults: Wrapped;
}

export interface FilesystemUsage {
  timestamp: number;
  fsId: { mountpoint: string } | null;
  usedBytes: Wrapped;
  inodesUsed: Wrapped;
}

export interface ContainerStats {
  attributes: { id: string; metadata: { name: string; attempt: number } | null; labels: Labels; annotations: Labels } | null;
  cpu: CpuUsage | null;
  memory: MemoryUsage | null;
  writableLayer: FilesystemUsage | null;
}

export interface PodSandboxStats {
  attributes: { id: string; metadata: PodSandboxMetadata | null; labels: Labels; annotations: Labels } | null;
  linux: {
    cpu: CpuUsage | null;
    memory: MemoryUsage | null;
    process: { timestamp: number; processCount: Wrapped } | null;
    containers: ContainerStats[];
  } | null;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  uid: Wrapped;
  username: string;
  spec: ImageSpec | null;
  pinned: boolean;
}

export interface ImageFsInfoResponse {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}

export interface PodSandboxFilter {
  id?: string;
  state?: PodSandboxState;
  labelSelector?: Labels;
}

export interface ContainerFilter {
  id?: string;
  state?: ContainerState;
  podSandboxId?: string;
  labelSelector?: Labels;
}

export interface ContainerStatsFilter {
  id?: string;
  podSandboxId?: string;
  labelSelector?: Labels;
}

export interface PodSandboxStatsFilter {
  id?: string;
  labelSelector?: Labels;
}
