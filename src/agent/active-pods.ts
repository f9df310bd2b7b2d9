/**
 * Joins the runtime's running sandboxes, the pod specs (from the Kubernetes pod source when
 * there is one) and the pod cgroups into the policy's ActivePod list.
 *
 * Without a Kubernetes source the spec comes from the sandbox itself, the way the kubelet
 * passes it to the runtime: labels io.kubernetes.pod.{name,namespace,uid} and the pod's
 * annotations. Priority and requests are not part of the CRI: the QoS class the kubelet
 * encoded in the cgroup path decides, and the pod cgroup's memory limit stands for the limits.
 * Annotations (evictd.io/priority, evictd.io/requests, evictd.io/limits:
 * "memory=128Mi,cpu=100m") are read only when the operator says every pod author is trusted
 * (--trust-sandbox-annotations: the lab): a pod's author writes them, and a declared priority
 * would let a pod exempt itself.
 */
import type { ObservedPodCgroup } from '../node/observer';
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SOURCE_ANNOTATION, SYSTEM_CRITICAL_PRIORITY } from '../policy/pods';
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
export function specFromSandbox(rp: RuntimePod, cgroup: ObservedPodCgroup | undefined, trustAnnotations = false): PodSpec {
  const a = rp.annotations;
  const declared = (key: string) => (trustAnnotations ? a[key] : undefined);
  const priorityText = trustAnnotations ? (a[PRIORITY_ANNOTATION] ?? rp.labels[PRIORITY_ANNOTATION]) : undefined;
  // Without a declared priority, kube-system pods count as system-critical: without the API,
  // evictd must not evict a CNI or DNS pod on a guess.
  const priority =
    priorityText !== undefined && /^-?\d+$/.test(priorityText) ? Number(priorityText) : rp.namespace === 'kube-system' ? SYSTEM_CRITICAL_PRIORITY : 0;
  let requests = parseResources(declared(REQUESTS_ANNOTATION));
  let limits = parseResources(declared(LIMITS_ANNOTATION));
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
  // A running pod is never a mirror (the kubelet runs no API pod that claims to be one): the
  // annotation could only be a pod author's, and would exempt the pod.
  const annotations = { ...a };
  delete annotations[CONFIG_MIRROR_ANNOTATION];
  return {
    namespace: rp.namespace,
    name: rp.name,
    uid: rp.uid,
    priority,
    annotations,
    containers: [container],
    volumes: [],
  };
}

export interface JoinedPod {
  active: ActivePod;
  runtime: RuntimePod;
  cgroup?: ObservedPodCgroup;
  /**
   * where the spec came from: the pod source, the sandbox alone, or the sandbox with the
   * priority the pod source last gave (it does not answer now: see last-known-priorities.ts)
   */
  specSource: 'pod-source' | 'runtime' | 'last-known';
  /** why the pod source's spec was not believed for this sandbox, when it was not */
  distrusted?: string;
}

/**
 * Whether the kubelet runs the pod from a file or URL (a static pod): the config.source the
 * kubelet itself writes on the sandbox, where it overrides whatever a pod author put there
 * (an API pod's sandbox says "api"). The API object's copy of that annotation is the author's
 * and is never read (kube/pod-spec.ts drops it).
 */
export function runtimeConfigSource(rp: RuntimePod): string | undefined {
  return rp.annotations[CONFIG_SOURCE_ANNOTATION];
}

const isStaticSource = (source: string | undefined) => source !== undefined && source !== 'api';

/** The source's spec with the runtime's config.source, made once per spec object. */
const withRuntimeSource = new WeakMap<PodSpec, { source: string; spec: PodSpec }>();
function staticSpec(spec: PodSpec, source: string): PodSpec {
  const known = withRuntimeSource.get(spec);
  if (known?.source === source) return known.spec;
  const out = { ...spec, annotations: { ...spec.annotations, [CONFIG_SOURCE_ANNOTATION]: source } };
  withRuntimeSource.set(spec, { source, spec: out });
  return out;
}

export interface JoinOptions {
  /** runtime-only specs read the sandboxes' evictd.io/* annotations (see above) */
  trustAnnotations?: boolean;
  /** the priority the pod source last gave a pod it does not speak for now */
  lastKnownPriority?: (uid: string) => number | undefined;
}

export function joinPods(
  runtimePods: readonly RuntimePod[],
  cgroups: ReadonlyMap<string, ObservedPodCgroup>,
  source?: PodSpecSource,
  opts: JoinOptions = {},
): JoinedPod[] {
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
    let fromSource = got && got.containers.length > 0 ? got : undefined;
    // What makes a pod static (never evicted) comes from the kubelet, through the runtime. An
    // API object that claims to mirror this sandbox while the kubelet runs it as an API pod is
    // a pod author's forgery (it would lend this pod its spec): not believed.
    const configSource = runtimeConfigSource(rp);
    let distrusted: string | undefined;
    if (fromSource && CONFIG_MIRROR_ANNOTATION in fromSource.annotations && !isStaticSource(configSource)) {
      distrusted = `an API pod claims to mirror it (${CONFIG_MIRROR_ANNOTATION}), but the kubelet runs it with config.source ${configSource ?? '(none)'}`;
      fromSource = undefined;
    }
    let spec = fromSource
      ? isStaticSource(configSource)
        ? staticSpec(fromSource, configSource!)
        : fromSource
      : specFromSandbox(rp, cgroup, opts.trustAnnotations);
    // No spec from the source: the priority it last gave this pod beats a guess of 0.
    const lastKnown = fromSource ? undefined : opts.lastKnownPriority?.(rp.uid);
    if (lastKnown !== undefined) spec = { ...spec, priority: lastKnown };
    const active: ActivePod = { spec };
    if (cgroup) {
      const u = cgroup.usage;
      // One pod-level entry: the pod cgroup's working set is what the kubelet's summary sums
      // its containers to, and it is read fresh here.
      active.usage = { containers: [{ name: spec.containers[0]?.name ?? 'pod', memoryBytes: u.memoryWorkingSetBytes }], volumes: [] };
      if (u.processes !== undefined) active.usage.processes = u.processes;
    }
    const j: JoinedPod = { active, runtime: rp, specSource: fromSource ? 'pod-source' : lastKnown !== undefined ? 'last-known' : 'runtime' };
    if (distrusted) j.distrusted = distrusted;
    if (cgroup) j.cgroup = cgroup;
    out.push(j);
  }
  return out;
}
