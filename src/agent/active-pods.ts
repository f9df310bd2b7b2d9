/**
 * Joins the runtime's running sandboxes, the pod specs (from the Kubernetes pod source when
 * there is one) and the pod cgroups into the policy's ActivePod list.
 *
 * Without a Kubernetes source the spec comes from the sandbox itself, the way the kubelet
 * passes it to the runtime: labels io.kubernetes.pod.{name,namespace,uid} and the pod's
 * annotations. Priority and requests are not part of the CRI, so they are read from
 * annotations where present (evictd.io/priority, evictd.io/requests, evictd.io/limits:
 * "memory=128Mi,cpu=100m"); otherwise the QoS class the kubelet encoded in the cgroup path
 * decides, and the pod cgroup's memory limit stands for the limits.
 */
import type { ObservedPodCgroup } from '../node/observer';
import { SYSTEM_CRITICAL_PRIORITY } from '../policy/pods';
import { Quantity } from '../policy/quantity';
import type { ActivePod, ContainerSpec, PodSpec, ResourceList } from '../policy/types';
import type { PodSpecSource, RuntimePod } from './ports';

export const PRIORITY_ANNOTATION = 'evictd.io/priority';
export const REQUESTS_ANNOTATION = 'evictd.io/requests';
export const LIMITS_ANNOTATION = 'evictd.io/limits';

function parseResources(text: string | undefined): ResourceList | null {
  if (!text) return null;
  const out: ResourceList = {};
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    try {
      out[part.slice(0, eq).trim()] = Quantity.parse(part.slice(eq + 1).trim());
    } catch {
      return null;
    }
  }
  return out;
}

/**
 * A PodSpec from the sandbox alone: with --pod-source=runtime, and for a pod the pod source
 * does not know (new since the API server went away, or watch lag). This is the only place
 * runtime-only specs are made.
 */
export function specFromSandbox(rp: RuntimePod, cgroup: ObservedPodCgroup | undefined): PodSpec {
  const a = rp.annotations;
  const priorityText = a[PRIORITY_ANNOTATION] ?? rp.labels[PRIORITY_ANNOTATION];
  // Without a declared priority, kube-system pods count as system-critical: without the API,
  // evictd must not evict a CNI or DNS pod on a guess.
  const priority =
    priorityText !== undefined && /^-?\d+$/.test(priorityText) ? Number(priorityText) : rp.namespace === 'kube-system' ? SYSTEM_CRITICAL_PRIORITY : 0;
  let requests = parseResources(a[REQUESTS_ANNOTATION]);
  let limits = parseResources(a[LIMITS_ANNOTATION]);
  if (!requests && !limits && cgroup) {
    // No declared resources: make ones that give the QoS class of the cgroup path, with the
    // pod cgroup's memory limit (the sum of the containers' limits) where there is one.
    const memLimit = cgroup.usage.memoryLimitBytes;
    if (cgroup.qos === 'Guaranteed') {
      const mem = Quantity.fromNumber(memLimit ?? Math.max(1, cgroup.usage.memoryWorkingSetBytes), 'BinarySI');
      requests = { cpu: Quantity.parse('1'), memory: mem };
      limits = { cpu: Quantity.parse('1'), memory: mem };
    } else if (cgroup.qos === 'Burstable') {
      requests = {};
      limits = memLimit !== undefined ? { memory: Quantity.fromNumber(memLimit, 'BinarySI') } : { cpu: Quantity.parse('1') };
    }
  }
  const container: ContainerSpec = { name: 'pod', requests: requests ?? {}, limits: limits ?? {} };
  return {
    namespace: rp.namespace,
    name: rp.name,
    uid: rp.uid,
    priority,
    annotations: { ...a },
    containers: [container],
    volumes: [],
  };
}

export interface JoinedPod {
  active: ActivePod;
  runtime: RuntimePod;
  cgroup?: ObservedPodCgroup;
  /** where the spec came from */
  specSource: 'pod-source' | 'runtime';
}

export function joinPods(runtimePods: readonly RuntimePod[], cgroups: ReadonlyMap<string, ObservedPodCgroup>, source?: PodSpecSource): JoinedPod[] {
  const out: JoinedPod[] = [];
  for (const rp of runtimePods) {
    if (!rp.ready) continue;
    const cgroup = cgroups.get(rp.uid);
    // Only pods whose cgroup lives under this node's pod cgroup root are this node's to manage
    // (a runtime shared by several nodes, as in the tests, lists the others' pods too; and a
    // pod without a cgroup yet has no usage to rank it by).
    if (!cgroup) continue;
    // A spec without containers knows only the pod's identity (a real pod has at least one; an
    // embedder's source may know no more): the sandbox and the cgroup path say more (QoS, pod
    // memory limit), so use ours.
    const got = source?.get(rp.uid);
    const fromSource = got && got.containers.length > 0 ? got : undefined;
    const spec = fromSource ?? specFromSandbox(rp, cgroup);
    const active: ActivePod = { spec };
    if (cgroup) {
      const u = cgroup.usage;
      // One pod-level entry: the pod cgroup's working set is what the kubelet's summary sums
      // its containers to, and it is read fresh here.
      active.usage = { containers: [{ name: spec.containers[0]?.name ?? 'pod', memoryBytes: u.memoryWorkingSetBytes }], volumes: [] };
      if (u.processes !== undefined) active.usage.processes = u.processes;
    }
    const j: JoinedPod = { active, runtime: rp, specSource: fromSource ? 'pod-source' : 'runtime' };
    if (cgroup) j.cgroup = cgroup;
    out.push(j);
  }
  return out;
}
