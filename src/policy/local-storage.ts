/**
 * Local-storage limit evictions (kubelet's localStorageEviction): an emptyDir over its
 * sizeLimit, a pod over the sum of its containers' ephemeral-storage limits, or a container over
 * its own. These evict at once (grace period 0), possibly several pods in one pass.
 */
import { containerEphemeralStorageMessage, emptyDirMessage, podEphemeralStorageMessage } from './messages';
import { isCritical, podLimit } from './pods';
import type { ActivePod, FilesystemLayout, LocalStorageSignal, PodSpec, PodUsage } from './types';

export interface LocalStorageViolation {
  pod: ActivePod;
  signal: LocalStorageSignal;
  message: string;
}

function emptyDirViolation(pod: PodSpec, usage: PodUsage): string | null {
  for (const v of pod.volumes) {
    const limit = v.emptyDir?.sizeLimit;
    if (!limit || limit.sign() !== 1) continue;
    const used = usage.volumes.find((u) => u.name === v.name);
    if (used && used.usedBytes > limit.toNumber()) return emptyDirMessage(v.name, limit);
  }
  return null;
}

/** The summary API's pod ephemeral storage: writable layers, logs and disk-backed volumes. */
function podEphemeralUsage(pod: PodSpec, usage: PodUsage): number {
  let total = 0;
  for (const c of usage.containers) total += (c.rootfsBytes ?? 0) + (c.logsBytes ?? 0);
  for (const v of usage.volumes) {
    const spec = pod.volumes.find((x) => x.name === v.name);
    if (spec?.emptyDir?.medium !== 'Memory') total += v.usedBytes;
  }
  return total;
}

function podLimitViolation(pod: PodSpec, usage: PodUsage): string | null {
  const limit = podLimit(pod, 'ephemeral-storage');
  if (!limit) return null;
  return podEphemeralUsage(pod, usage) > limit.toNumber() ? podEphemeralStorageMessage(limit) : null;
}

function containerLimitViolation(pod: PodSpec, usage: PodUsage, layout: FilesystemLayout): string | null {
  for (const cs of usage.containers) {
    const limit = pod.containers.find((c) => c.name === cs.name)?.limits['ephemeral-storage'];
    if (!limit || limit.value() === 0) continue;
    // With a dedicated image filesystem the writable layer is not on the node's disk: logs only.
    const used = (cs.logsBytes ?? 0) + (layout === 'single' ? (cs.rootfsBytes ?? 0) : 0);
    if (used > limit.toNumber()) return containerEphemeralStorageMessage(cs.name, limit);
  }
  return null;
}

/**
 * Every pod over a local-storage limit, checked in the kubelet's order (emptyDir, pod, container;
 * the first violation per pod). Critical pods are reported by the caller as not evictable.
 */
export function localStorageViolations(pods: readonly ActivePod[], layout: FilesystemLayout): LocalStorageViolation[] {
  const out: LocalStorageViolation[] = [];
  for (const pod of pods) {
    if (!pod.usage || isCritical(pod.spec)) continue;
    const emptyDir = emptyDirViolation(pod.spec, pod.usage);
    if (emptyDir) {
      out.push({ pod, signal: 'emptydirfs.limit', message: emptyDir });
      continue;
    }
    const podLevel = podLimitViolation(pod.spec, pod.usage);
    if (podLevel) {
      out.push({ pod, signal: 'ephemeralpodfs.limit', message: podLevel });
      continue;
    }
    const container = containerLimitViolation(pod.spec, pod.usage, layout);
    if (container) out.push({ pod, signal: 'ephemeralcontainerfs.limit', message: container });
  }
  return out;
}
