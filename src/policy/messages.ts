/** The kubelet's eviction and admission strings, to the letter (pkg/kubelet/eviction). */
import type { Threshold } from './config';
import { Quantity } from './quantity';
import { containerRequest, podLevelRequest, podLevelResourcesSet } from './pods';
import { podMemoryUsage } from './ranking';
import { SIGNAL_RESOURCE, observationFormat } from './signals';
import { thresholdAmount, type Observations } from './thresholds';
import type { NodeCondition, PodSpec, PodUsage } from './types';

export const EVICTION_REASON = 'Evicted';
export const OFFENDING_CONTAINERS_KEY = 'offending_containers';
export const OFFENDING_CONTAINERS_USAGE_KEY = 'offending_containers_usage';
export const OFFENDING_POD_KEY = 'offending_pod';
export const OFFENDING_POD_USAGE_KEY = 'offending_pod_usage';
export const STARVED_RESOURCE_KEY = 'starved_resource';

/**
 * The kubelet's event naming (client-go's recorder): <object>.<hex UnixNano>. The agent names an
 * eviction's event when it journals it, so that a report retried later writes the same event.
 */
export function eventNameAt(object: string, unixNanos: bigint): string {
  return `${object}.${unixNanos.toString(16)}`;
}

/** Go's %q for a plain string. */
const goQuote = (s: string) => JSON.stringify(s);

/**
 * The message and annotations of a threshold eviction (kubelet's evictionMessage). The quantity
 * and available figures come from the first met threshold starving the same resource.
 */
export function evictionMessage(
  resource: string,
  pod: PodSpec,
  usage: PodUsage | undefined,
  thresholds: readonly Threshold[],
  obs: Observations,
): { message: string; annotations: Record<string, string> } {
  let message = `The node was low on resource: ${resource}. `;
  for (const t of thresholds) {
    if (SIGNAL_RESOURCE[t.signal] !== resource) continue;
    const o = obs[t.signal];
    if (!o) continue;
    const quantity = t.value.quantity
      ? t.value.quantity.toString()
      : Quantity.fromNumber(Math.trunc(thresholdAmount(t.value, o.capacity)), 'BinarySI').toString();
    // Observations from an embedder may be fractional; the kubelet's int64 amounts truncate.
    const available = Quantity.fromNumber(Math.trunc(o.available), observationFormat(t.signal)).toString();
    message += `Threshold quantity: ${quantity}, available: ${available}. `;
    break;
  }
  // A pod whose stats were not found: the kubelet returns before it names any container, with
  // its annotations map still empty (no starved_resource either), for every resource.
  if (!usage) return { message, annotations: {} };
  const annotations: Record<string, string> = {};
  // Pod-level resources (v1.34 and later): a pod-level memory request puts the pod's own line
  // first, whether or not its usage is above the request (the containers' lines test that).
  const podLevel = resource === 'memory' && podLevelResourcesSet(pod) ? podLevelRequest(pod, 'memory') : undefined;
  if (podLevel) {
    const usedQ = Quantity.fromNumber(Math.trunc(podMemoryUsage(usage)), 'BinarySI');
    message += `Pod ${pod.name} was using ${usedQ.toString()}, request is ${podLevel.toString()}, has larger consumption of ${resource}. `;
    annotations[OFFENDING_POD_KEY] = pod.name;
    annotations[OFFENDING_POD_USAGE_KEY] = usedQ.toString();
  }
  const containers: string[] = [];
  const usages: string[] = [];
  // Regular and init containers (restartable ones included) are named; ephemeral containers
  // have no requests and are never blamed (kubelet's evictionMessage, v1.34).
  const specs = pod.initContainers?.length ? [...pod.containers, ...pod.initContainers] : pod.containers;
  for (const cs of usage.containers) {
    const spec = specs.find((c) => c.name === cs.name);
    if (!spec) continue;
    let used: number | undefined;
    if (resource === 'memory') used = cs.memoryBytes;
    // the kubelet names a container for disk only when both its rootfs and logs stats exist
    else if (resource === 'ephemeral-storage' && cs.rootfsBytes !== undefined && cs.logsBytes !== undefined) used = cs.rootfsBytes + cs.logsBytes;
    if (used === undefined) continue;
    const request = containerRequest(spec, resource) ?? Quantity.zero();
    const usedQ = Quantity.fromNumber(Math.trunc(used), 'BinarySI');
    if (usedQ.cmp(request) > 0) {
      message += `Container ${spec.name} was using ${usedQ.toString()}, request is ${request.toString()}, has larger consumption of ${resource}. `;
      containers.push(spec.name);
      usages.push(usedQ.toString());
    }
  }
  return {
    message,
    annotations: {
      ...annotations,
      [OFFENDING_CONTAINERS_KEY]: containers.join(','),
      [OFFENDING_CONTAINERS_USAGE_KEY]: usages.join(','),
      [STARVED_RESOURCE_KEY]: resource,
    },
  };
}

export const emptyDirMessage = (volume: string, limit: Quantity) =>
  `Usage of EmptyDir volume ${goQuote(volume)} exceeds the limit ${goQuote(limit.toString())}. `;
export const podEphemeralStorageMessage = (limit: Quantity) => `Pod ephemeral local storage usage exceeds the total limit of containers ${limit.toString()}. `;
export const containerEphemeralStorageMessage = (container: string, limit: Quantity) =>
  `Container ${container} exceeded its local ephemeral storage limit ${goQuote(limit.toString())}. `;

/** "The node had condition: [MemoryPressure DiskPressure]. " (Go's %v of a slice). */
export const nodeConditionMessage = (conditions: readonly NodeCondition[]) => `The node had condition: [${conditions.join(' ')}]. `;
