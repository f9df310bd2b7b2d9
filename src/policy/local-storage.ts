/**
 * Local-storage limit evictions (kubelet's localStorageEviction): an emptyDir over its
 * sizeLimit, a pod over the sum of its containers' ephemeral-storage limits, or a container over
 * its own. These evict at once (grace period 0), possibly several pods in one pass.
 */
import { containerEphemeralStorageMessage, emptyDirMessage, podEphemeralStorageMessage } from './messages';
import { podFacts, type PodFacts } from './pods';
import type { ActivePod, FilesystemLayout, LocalStorageSignal, PodUsage } from './types';

export interface LocalStorageViolation {
  pod: ActivePod;
  signal: LocalStorageSignal;
  message: string;
}

function emptyDirViolation(facts: PodFacts, usage: PodUsage): string | null {
  if (facts.emptyDirLimits.size === 0) return null;
  for (const used of usage.volumes) {
    const limit = facts.emptyDirLimits.get(used.name);
    if (limit && used.usedBytes > limit.toNumber()) return emptyDirMessage(used.name, limit);
  }
  return null;
}

/**
 * The summary API's pod ephemeral storage (calcEphemeralStorage): writable layers, logs and the
 * local ephemeral volumes only (IsLocalEphemeralVolume: no Memory or HugePages emptyDir, no PVC).
 */
function podEphemeralUsage(facts: PodFacts, usage: PodUsage): number {
  let total = 0;
  for (const c of usage.containers) total += (c.rootfsBytes ?? 0) + (c.logsBytes ?? 0);
  for (const v of usage.volumes) if (facts.ephemeralVolumes.has(v.name)) total += v.usedBytes;
  return total;
}

function podLimitViolation(facts: PodFacts, usage: PodUsage): string | null {
  const limit = facts.storageLimit;
  if (!limit) return null;
  return podEphemeralUsage(facts, usage) > limit.toNumber() ? podEphemeralStorageMessage(limit) : null;
}

function containerLimitViolation(facts: PodFacts, usage: PodUsage, layout: FilesystemLayout): string | null {
  if (facts.containerStorageLimits.size === 0) return null;
  for (const cs of usage.containers) {
    const limit = facts.containerStorageLimits.get(cs.name);
    if (!limit) continue;
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
export function localStorageViolations(
  pods: readonly ActivePod[],
  layout: FilesystemLayout,
  facts: readonly PodFacts[] = pods.map((p) => podFacts(p.spec)),
): LocalStorageViolation[] {
  const out: LocalStorageViolation[] = [];
  for (let i = 0; i < pods.length; i++) {
    const pod = pods[i];
    if (!pod.usage || facts[i].critical) continue;
    const emptyDir = emptyDirViolation(facts[i], pod.usage);
    if (emptyDir) {
      out.push({ pod, signal: 'emptydirfs.limit', message: emptyDir });
      continue;
    }
    const podLevel = podLimitViolation(facts[i], pod.usage);
    if (podLevel) {
      out.push({ pod, signal: 'ephemeralpodfs.limit', message: podLevel });
      continue;
    }
    const container = containerLimitViolation(facts[i], pod.usage, layout);
    if (container) out.push({ pod, signal: 'ephemeralcontainerfs.limit', message: container });
  }
  return out;
}
