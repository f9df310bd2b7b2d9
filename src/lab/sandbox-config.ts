/**
 * What the lab asks the runtime to create: a pod sandbox and its containers, as CRI configs.
 * On a node the kubelet builds these; the lab, the e2e tests and the benches have no kubelet,
 * so they build their own (no CNI: the pod shares the node's network namespace).
 */
import type { ContainerConfig, Labels, LinuxContainerSecurityContext, Mount, PodSandboxConfig } from '../cri/types';

export interface SandboxSpec {
  name: string;
  uid: string;
  namespace?: string;
  /** e.g. /kubepods/burstable/pod<uid>; runc creates it in every hierarchy. */
  cgroupParent?: string;
  labels?: Labels;
  annotations?: Labels;
  /** Host directory for container logs (ContainerRunSpec.logPath is relative to it). */
  logDirectory?: string;
  /** The sandbox's attempt (0 first; the kubelet counts up when it makes a pod's sandbox again). */
  attempt?: number;
  /** The node's PID namespace (a pod's hostPID), else the pod's own. */
  hostPid?: boolean;
}

/**
 * A sandbox config that runs without CNI: the pod shares the node's network namespace
 * (network NODE) and so must leave the hostname empty. PID and IPC stay per pod, as the
 * kubelet's defaults. The kubelet's pod labels are added so tools can link pods and containers.
 */
export function sandboxConfig(spec: SandboxSpec): PodSandboxConfig {
  const namespace = spec.namespace ?? 'default';
  return {
    metadata: { name: spec.name, uid: spec.uid, namespace, attempt: spec.attempt ?? 0 },
    hostname: '',
    logDirectory: spec.logDirectory ?? '',
    labels: { 'io.kubernetes.pod.name': spec.name, 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.pod.uid': spec.uid, ...spec.labels },
    annotations: { ...spec.annotations },
    linux: {
      cgroupParent: spec.cgroupParent ?? '',
      securityContext: { namespaceOptions: { network: 'NODE', pid: spec.hostPid ? 'NODE' : 'CONTAINER', ipc: 'POD' } },
    },
  };
}

export interface ContainerRunSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: Labels;
  /** Bytes; 0 or absent = no limit. */
  memoryLimitBytes?: number;
  /** the container's cgroup v2 memory.high, as the kubelet's MemoryQoS sets it (unified); absent: none */
  memoryHighBytes?: number;
  labels?: Labels;
  annotations?: Labels;
  /** Relative to the sandbox's logDirectory. */
  logPath?: string;
  mounts?: Mount[];
  /** as the kubelet passes a container's securityContext (namespaces come from the pod) */
  securityContext?: Omit<LinuxContainerSecurityContext, 'namespaceOptions'>;
}

export function containerConfig(pod: SandboxSpec, spec: ContainerRunSpec): ContainerConfig {
  return {
    metadata: { name: spec.name, attempt: pod.attempt ?? 0 },
    image: { image: spec.image },
    command: spec.command ?? [],
    args: spec.args ?? [],
    envs: Object.entries(spec.env ?? {}).map(([key, value]) => ({ key, value })),
    mounts: spec.mounts ?? [],
    labels: {
      'io.kubernetes.container.name': spec.name,
      'io.kubernetes.pod.name': pod.name,
      'io.kubernetes.pod.namespace': pod.namespace ?? 'default',
      'io.kubernetes.pod.uid': pod.uid,
      ...spec.labels,
    },
    annotations: { ...spec.annotations },
    logPath: spec.logPath ?? '',
    linux: {
      resources: {
        memoryLimitInBytes: spec.memoryLimitBytes ?? 0,
        ...(spec.memoryHighBytes !== undefined ? { unified: { 'memory.high': String(spec.memoryHighBytes) } } : {}),
      },
      ...(spec.securityContext
        ? { securityContext: { ...spec.securityContext, namespaceOptions: { network: 'NODE', pid: pod.hostPid ? 'NODE' : 'CONTAINER', ipc: 'POD' } } }
        : {}),
    },
  };
}
