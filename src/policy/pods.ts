/** Pod facts the kubelet derives from a spec: requests, limits, QoS class, criticality. */
import { Quantity } from './quantity';
import type { ContainerSpec, PodSpec, VolumeSpec } from './types';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** Annotation keys (k8s.io/kubernetes/pkg/kubelet/types). */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
/** scheduling.SystemCriticalPriority */
export const SYSTEM_CRITICAL_PRIORITY = 2000000000;

/** A container's request for a resource; the API server defaults a missing request to the limit. */
export function containerRequest(c: ContainerSpec, resource: string): Quantity | undefined {
  return c.requests[resource] ?? c.limits[resource];
}

/**
 * A pod's effective request for eviction ranking: pkg/api/v1/resource GetResourceRequestQuantity
 * (v1.34 and later), in bytes (or units). With pod-level resources set it reads them alone
 * (PodRequests with SkipContainerLevelResources: a resource the pod level does not name, or
 * cannot, such as ephemeral-storage, is 0); else the containers' aggregate (see aggregate). The
 * pod's overhead is added to a non-zero total. Spec only: the eviction manager passes no
 * UseStatusResources, so a resized pod ranks by its spec, not its allocated or actuated resources
 * (the allocatedResources branch of evictionMessage, v1.27 to v1.32, is gone since).
 */
export function podRequest(pod: PodSpec, resource: string): number {
  if (resource === 'memory') return podFacts(pod).memoryRequest;
  if (resource === 'ephemeral-storage') return podFacts(pod).storageRequest;
  return computePodRequest(pod, resource);
}

/** component-helpers/resource IsSupportedPodLevelResource: cpu, memory and huge pages. */
const isPodLevelResource = (name: string) => name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');

/** IsPodLevelResourcesSet: spec.resources names a supported resource in its requests or limits. */
export function podLevelResourcesSet(pod: PodSpec): boolean {
  const r = pod.resources;
  return r !== undefined && [...Object.keys(r.requests), ...Object.keys(r.limits)].some(isPodLevelResource);
}

/**
 * A pod-level request as the API server stores it (pkg/apis/core/v1 defaultPodRequests): when
 * only the pod-level limit is given, the request defaults to the containers' effective request
 * if any container gives one, else to the limit.
 */
export function podLevelRequest(pod: PodSpec, resource: string): Quantity | undefined {
  const r = pod.resources;
  if (!r || !isPodLevelResource(resource)) return undefined;
  const given = r.requests[resource];
  if (given || !r.limits[resource]) return given;
  return aggregate(pod, (c) => containerRequest(c, resource)) ?? r.limits[resource];
}

const addQ = (a: Quantity | undefined, b: Quantity | undefined) => (a && b ? a.add(b) : (a ?? b));
const maxQ = (a: Quantity | undefined, b: Quantity | undefined) => (!a || (b && b.cmp(a) > 0) ? b : a);

/**
 * component-helpers/resource aggregateContainerResourcesByFn, the sidecar KEP's formula (since
 * v1.28, on by default from v1.29, GA in v1.33, the same in v1.35): app containers and restartable init containers (restartPolicy Always)
 * add up; each init container while it runs needs its own amount plus the sidecars started
 * before it; the pod's value is the larger of the two. Without sidecars this is the older
 * max(sum of app containers, largest init container). Undefined when no container gives one.
 */
function aggregate(pod: PodSpec, pick: (c: ContainerSpec) => Quantity | undefined): Quantity | undefined {
  let total: Quantity | undefined;
  for (const c of pod.containers) total = addQ(total, pick(c));
  let sidecars: Quantity | undefined;
  let initPeak: Quantity | undefined;
  for (const c of pod.initContainers ?? []) {
    const own = pick(c);
    if (c.restartPolicy === 'Always') {
      total = addQ(total, own);
      sidecars = addQ(sidecars, own);
      initPeak = maxQ(initPeak, sidecars);
    } else {
      initPeak = maxQ(initPeak, addQ(own, sidecars));
    }
  }
  return maxQ(total, initPeak);
}

function computePodRequest(pod: PodSpec, resource: string): number {
  const total = podLevelResourcesSet(pod) ? podLevelRequest(pod, resource) : aggregate(pod, (c) => containerRequest(c, resource));
  const n = total?.toNumber() ?? 0;
  const overhead = pod.overhead?.[resource];
  return n !== 0 && overhead ? n + overhead.toNumber() : n;
}

/** PodLimits (component-helpers/resource) for one resource, or undefined when no container sets it. */
export function podLimit(pod: PodSpec, resource: string): Quantity | undefined {
  return resource === 'ephemeral-storage' ? podFacts(pod).storageLimit : computePodLimit(pod, resource);
}

function computePodLimit(pod: PodSpec, resource: string): Quantity | undefined {
  return aggregate(pod, (c) => c.limits[resource]);
}

/** What every pass asks of a spec, derived once: specs are immutable once observed. */
export interface PodFacts {
  memoryRequest: number;
  storageRequest: number;
  /** the pod-level ephemeral-storage limit (sum of the containers'), if any container sets one */
  storageLimit?: Quantity;
  /** containers with a non-zero ephemeral-storage limit */
  containerStorageLimits: Map<string, Quantity>;
  /** emptyDir volumes with a positive sizeLimit, whatever their medium */
  emptyDirLimits: Map<string, Quantity>;
  /** volumes whose usage counts in disk ranking (the kubelet's localVolumeNames) */
  localVolumes: Set<string>;
  /** volumes whose usage counts in the pod's ephemeral-storage total (IsLocalEphemeralVolume) */
  ephemeralVolumes: Set<string>;
  critical: boolean;
}

/**
 * pkg/volume/util IsLocalEphemeralVolume (current since v1.11, unchanged through v1.35): gitRepo,
 * configMap, and an emptyDir whose medium is the default "". A Memory or HugePages emptyDir is
 * not on the node's disk (tmpfs, hugetlbfs); older kubelets tested `medium != Memory` and
 * counted HugePages ones. The summary puts only these volumes in a pod's ephemeral storage.
 */
export function isLocalEphemeralVolume(v: VolumeSpec): boolean {
  if (v.source !== undefined) return v.source === 'configMap' || v.source === 'gitRepo';
  return (v.emptyDir?.medium ?? '') === '';
}

/** pkg/kubelet/eviction/helpers.go localVolumeNames: hostPath too; disk ranking counts these. */
export function isLocalVolume(v: VolumeSpec): boolean {
  return v.source === 'hostPath' || isLocalEphemeralVolume(v);
}

const factsCache = new WeakMap<PodSpec, PodFacts>();

export function podFacts(pod: PodSpec): PodFacts {
  let f = factsCache.get(pod);
  if (f) return f;
  const containerStorageLimits = new Map<string, Quantity>();
  for (const c of pod.containers) {
    const l = c.limits['ephemeral-storage'];
    if (l && l.value() !== 0) containerStorageLimits.set(c.name, l);
  }
  const emptyDirLimits = new Map<string, Quantity>();
  const localVolumes = new Set<string>();
  const ephemeralVolumes = new Set<string>();
  for (const v of pod.volumes) {
    const limit = v.emptyDir?.sizeLimit;
    if (limit && limit.sign() === 1) emptyDirLimits.set(v.name, limit);
    if (isLocalVolume(v)) localVolumes.add(v.name);
    if (isLocalEphemeralVolume(v)) ephemeralVolumes.add(v.name);
  }
  f = {
    memoryRequest: computePodRequest(pod, 'memory'),
    storageRequest: computePodRequest(pod, 'ephemeral-storage'),
    storageLimit: computePodLimit(pod, 'ephemeral-storage'),
    containerStorageLimits,
    emptyDirLimits,
    localVolumes,
    ephemeralVolumes,
    critical: computeCritical(pod),
  };
  factsCache.set(pod, f);
  return f;
}

/**
 * Kubernetes' GetPodQOS (cpu and memory only; requests defaulted to limits). With pod-level
 * resources (spec.resources given) they alone decide (ComputePodQOS, PodLevelResources on):
 * equal non-zero cpu and memory requests and limits are Guaranteed, none BestEffort.
 */
export function qosClass(pod: PodSpec): QosClass {
  if (pod.resources) return podLevelQos(pod, pod.resources);
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
    const found = new Set<string>();
    for (const r of ['cpu', 'memory']) {
      const req = containerRequest(c, r);
      if (req && !req.isZero()) requests.set(r, (requests.get(r) ?? 0) + req.toNumber());
      const lim = c.limits[r];
      if (lim && !lim.isZero()) {
        found.add(r);
        limits.set(r, (limits.get(r) ?? 0) + lim.toNumber());
      }
    }
    if (found.size !== 2) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [r, v] of requests) if (limits.get(r) !== v) guaranteed = false;
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** qos.go resourceQOS on the pod-level requirements. */
function podLevelQos(pod: PodSpec, r: NonNullable<PodSpec['resources']>): QosClass {
  if (Object.keys(r.requests).length === 0 && Object.keys(r.limits).length === 0) return 'BestEffort';
  let qos: QosClass | undefined;
  for (const name of ['cpu', 'memory']) {
    const req = podLevelRequest(pod, name)?.toNumber() ?? 0;
    const lim = r.limits[name]?.toNumber() ?? 0;
    if (req !== lim) return 'Burstable';
    const bestEffort = req === 0;
    if (qos === undefined) qos = bestEffort ? 'BestEffort' : 'Guaranteed';
    else if (bestEffort !== (qos === 'BestEffort')) return 'Burstable';
  }
  return qos!;
}

/** Static (source other than the API), mirror, or system-critical priority: never evicted. */
export function isCritical(pod: PodSpec): boolean {
  return podFacts(pod).critical;
}

function computeCritical(pod: PodSpec): boolean {
  const source = pod.annotations[CONFIG_SOURCE_ANNOTATION];
  if (source !== undefined && source !== 'api') return true;
  if (CONFIG_MIRROR_ANNOTATION in pod.annotations) return true;
  return pod.priority >= SYSTEM_CRITICAL_PRIORITY;
}

export function podKey(pod: PodSpec): string {
  return `${pod.namespace}/${pod.name}`;
}
