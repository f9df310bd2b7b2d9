/**
 * v1.Pod JSON -> the policy's PodSpec, plus the API-side facts the policy does not need but the
 * status writer and the logs do (phase, QoS class, owner, mirror pod identity).
 */
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, qosClass, type QosClass } from '../policy/pods';
import { Quantity } from '../policy/quantity';
import type { ContainerSpec, PodSpec, ResourceList, Toleration, VolumeSource, VolumeSpec } from '../policy/types';

/** The parts of a v1.Pod evictd reads. Everything optional: the API omits empty fields. */
export interface V1Pod {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    ownerReferences?: { kind?: string; name?: string; controller?: boolean }[];
  };
  spec?: {
    nodeName?: string;
    priority?: number;
    terminationGracePeriodSeconds?: number;
    containers?: V1Container[];
    initContainers?: V1Container[];
    volumes?: V1Volume[];
    tolerations?: Toleration[];
    /** pod-level resources (KEP-2837) */
    resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
    overhead?: Record<string, string | number>;
  };
  status?: { phase?: string; qosClass?: string; reason?: string; conditions?: { type?: string; reason?: string }[] };
}

/** A volume: its name and one source (emptyDir, configMap, persistentVolumeClaim, ...). */
interface V1Volume {
  name?: string;
  emptyDir?: { sizeLimit?: string | number; medium?: string };
  [source: string]: unknown;
}

/** The sources local storage accounting tells apart (pkg/volume/util IsLocalEphemeralVolume, eviction's localVolumeNames). */
const LOCAL_SOURCES = ['configMap', 'gitRepo', 'hostPath'] as const;

function volumeSource(v: V1Volume): VolumeSource | undefined {
  for (const s of LOCAL_SOURCES) if (v[s] !== undefined && v[s] !== null) return s;
  // Any other source key is a volume off the node's disk; none at all is the API's emptyDir.
  return Object.keys(v).some((k) => k !== 'name' && v[k] !== undefined && v[k] !== null) ? 'other' : undefined;
}

interface V1Container {
  name?: string;
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  restartPolicy?: string;
}

/** A pod as the API (or the kubelet) shows it: the policy's view plus the API's. */
export interface KubePod {
  spec: PodSpec;
  /** the uid the API server knows; differs from spec.uid for a mirror pod */
  apiUid: string;
  resourceVersion?: string;
  phase: string;
  qosClass: QosClass;
  owner?: { kind: string; name: string };
  /** a static pod (from a file or URL on the node), seen through its mirror pod */
  mirror: boolean;
  terminating: boolean;
}

export function isTerminal(phase: string): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * Converts one v1.Pod. A static pod's API object is a mirror whose own uid differs from the
 * one the runtime knows: the kubelet names the sandbox after the static pod's uid, which the
 * mirror carries in kubernetes.io/config.mirror. spec.uid is the runtime's uid so the agent's
 * join with sandboxes works for both.
 * Returns undefined for objects without identity (never sent by a sane API server).
 */
export function fromV1Pod(pod: V1Pod, onBadQuantity?: (field: string, value: unknown) => void): KubePod | undefined {
  const md = pod.metadata ?? {};
  if (!md.uid || !md.name) return undefined;
  const annotations = { ...(md.annotations ?? {}) };
  // The API object's config.source is whatever its author wrote (the kubelet overrides it in
  // its own memory only, and on the sandbox, where the agent reads it: agent/active-pods.ts).
  delete annotations[CONFIG_SOURCE_ANNOTATION];
  const mirrorUid = annotations[CONFIG_MIRROR_ANNOTATION];
  const spec = pod.spec ?? {};
  const where = `${md.namespace ?? 'default'}/${md.name}`;
  const container = (c: V1Container, i: number, kind: string): ContainerSpec => {
    const out: ContainerSpec = {
      name: c.name ?? `${kind}[${i}]`,
      requests: resources(c.resources?.requests, `${where} ${kind}[${c.name}].resources.requests`, onBadQuantity),
      limits: resources(c.resources?.limits, `${where} ${kind}[${c.name}].resources.limits`, onBadQuantity),
    };
    // a sidecar: its requests and limits add to the app containers' (component-helpers/resource)
    if (kind === 'initContainers' && c.restartPolicy === 'Always') out.restartPolicy = 'Always';
    return out;
  };
  const containers = (spec.containers ?? []).map((c, i) => container(c, i, 'containers'));
  const initContainers = (spec.initContainers ?? []).map((c, i) => container(c, i, 'initContainers'));
  const volumes: VolumeSpec[] = (spec.volumes ?? []).map((v, i) => {
    const out: VolumeSpec = { name: v.name ?? `volumes[${i}]` };
    if (v.emptyDir) {
      out.emptyDir = {};
      if (v.emptyDir.medium) out.emptyDir.medium = v.emptyDir.medium;
      if (v.emptyDir.sizeLimit !== undefined) {
        const q = parse(v.emptyDir.sizeLimit, `${where} volumes[${out.name}].emptyDir.sizeLimit`, onBadQuantity);
        if (q) out.emptyDir.sizeLimit = q;
      }
      return out;
    }
    const source = volumeSource(v);
    if (source) out.source = source;
    return out;
  });
  const podSpec: PodSpec = {
    namespace: md.namespace ?? 'default',
    name: md.name,
    uid: mirrorUid || md.uid,
    // a pod admitted without a PriorityClass and no global default has priority 0 (the kubelet's view too)
    priority: typeof spec.priority === 'number' ? spec.priority : 0,
    annotations,
    containers,
    volumes,
  };
  if (typeof spec.terminationGracePeriodSeconds === 'number') podSpec.terminationGracePeriodSeconds = spec.terminationGracePeriodSeconds;
  if (initContainers.length) podSpec.initContainers = initContainers;
  if (spec.tolerations?.length) podSpec.tolerations = spec.tolerations.map((t) => ({ ...t }));
  if (spec.resources) {
    podSpec.resources = {
      requests: resources(spec.resources.requests, `${where} resources.requests`, onBadQuantity),
      limits: resources(spec.resources.limits, `${where} resources.limits`, onBadQuantity),
    };
  }
  if (spec.overhead) podSpec.overhead = resources(spec.overhead, `${where} overhead`, onBadQuantity);
  const controller = md.ownerReferences?.find((o) => o.controller) ?? md.ownerReferences?.[0];
  const out: KubePod = {
    spec: podSpec,
    apiUid: md.uid,
    phase: pod.status?.phase ?? 'Pending',
    qosClass: qosOf(pod.status?.qosClass, podSpec),
    mirror: Boolean(mirrorUid),
    terminating: Boolean(md.deletionTimestamp),
  };
  if (md.resourceVersion) out.resourceVersion = md.resourceVersion;
  if (controller?.kind && controller.name) out.owner = { kind: controller.kind, name: controller.name };
  return out;
}

function parse(v: string | number, field: string, onBad?: (field: string, value: unknown) => void): Quantity | undefined {
  try {
    return Quantity.parse(v);
  } catch {
    // the API server validated it; a failure here is our parser's gap, not the user's pod
    onBad?.(field, v);
    return undefined;
  }
}

function resources(list: Record<string, string | number> | undefined, field: string, onBad?: (field: string, value: unknown) => void): ResourceList {
  const out: ResourceList = {};
  for (const [name, v] of Object.entries(list ?? {})) {
    const q = parse(v, `${field}.${name}`, onBad);
    if (q) out[name] = q;
  }
  return out;
}

/** The API's own status.qosClass (immutable once set) when present, else computed as the API server does. */
function qosOf(given: string | undefined, spec: PodSpec): QosClass {
  if (given === 'Guaranteed' || given === 'Burstable' || given === 'BestEffort') return given;
  return qosClass(spec);
}
