/**
 * The memory brake, decided (pure): which pod to hold with memory.high, which holds to let go,
 * which held pods to stop. Its effect is one action of the agent (src/agent/effects/memory-brake.ts).
 *
 * Why: without swap, a fast ramp reaches the OOM killer within the grace period of a soft
 * threshold. memory.high on the pod the kubelet's ranking would evict, just above its usage,
 * makes the kernel throttle that pod's allocations into reclaim; it keeps running (its SIGTERM
 * handler can still checkpoint), the other pods keep full speed, and the eviction the thresholds
 * call for still happens, on their schedule. KEP-5986 sketches the same idea for the kubelet.
 *
 * When:
 * - brake: a memory threshold (hard or soft, grace period met or not) is met on this pass's
 *   numbers: the first pod of the memory ranking (the same ranking the plan uses; critical pods
 *   are never candidates) is braked, unless it already is, or this very pass stops it with no
 *   grace period (a hard threshold): the kill ends its growth sooner than a brake, whose two
 *   writes would only sit before it. Earlier brakes stay.
 * - release: the pod is gone (no longer among the runtime's ready pods), or every memory
 *   threshold is clear of its line plus its minimum reclaim (the same hysteresis that ends an
 *   eviction episode).
 * - stop: a pod braked for `maxDurationNs` or longer (the eviction did not come, or did not work).
 */
import { STOP_EASE_LIMIT_MARGIN_BYTES, STOP_EASE_NODE_MARGIN_BYTES, type MemoryBrakeConfig } from './brake-config';
import type { PolicyConfig, Threshold } from './config';
import { formatDuration } from './duration';
import type { Assessment, Evaluation, Eviction, ThresholdStatus } from './evaluate';
import { podFacts } from './pods';
import { rankMemory } from './ranking';
import { isMemorySignal } from './signals';
import { thresholdsForLayout, thresholdsMet } from './thresholds';
import type { ActivePod, FilesystemLayout, PodRef, Signal } from './types';

/** A brake in force, as the agent keeps it. */
export interface ActiveBrake {
  uid: string;
  /** monotonic ns when it was set */
  since: number;
  /** the threshold signal that called for it (the eviction at the bound names it); memory.available when not said */
  signal?: Signal;
}

export interface BrakeApply {
  pod: PodRef;
  /** the met threshold that called for it */
  threshold: ThresholdStatus;
  /** why this pod: its ranking reasons */
  reasons: string[];
}

export interface BrakeRelease {
  uid: string;
  why: 'pod-gone' | 'recovered';
}

export interface BrakeStop {
  uid: string;
  brakedNs: number;
}

export interface BrakeDecision {
  apply: BrakeApply | null;
  release: BrakeRelease[];
  stop: BrakeStop[];
}

export interface BrakeInput {
  now: number;
  layout: FilesystemLayout;
  /** the pods the plan ranks (pods being stopped left out) */
  pods: readonly ActivePod[];
  /** uids of every ready pod of this node, those being stopped included */
  present: ReadonlySet<string>;
  active: readonly ActiveBrake[];
  /** uids this pass stops with no grace period (see killedAtOnce): never worth a brake */
  killing?: ReadonlySet<string>;
}

/**
 * The pods an evaluation stops at once: every local-storage eviction, and the plan's first
 * candidate when its grace period is 0 (the one the actuator tries first).
 */
export function killedAtOnce(ev: Evaluation): Set<string> {
  const first = ev.plan?.candidates[0];
  const now = [...ev.localStorageEvictions, ...(first?.gracePeriodSeconds === 0 ? [first] : [])];
  return new Set(now.map((e) => e.pod.uid));
}

const NONE: BrakeDecision = { apply: null, release: [], stop: [] };

/** The brake's decision for one pass; nothing at all when the brake is off. */
export function decideBrakes(config: PolicyConfig, a: Assessment, input: BrakeInput): BrakeDecision {
  const brake = config.memoryBrake;
  if (!brake) return NONE;
  const release: BrakeRelease[] = [];
  const kept: ActiveBrake[] = [];
  const memory = thresholdsForLayout(config.thresholds, input.layout).filter((t) => isMemorySignal(t.signal));
  // Clear of line plus minimum reclaim, for every memory threshold.
  const recovered = thresholdsMet(memory, a.obs, true).length === 0;
  for (const b of input.active) {
    if (!input.present.has(b.uid)) release.push({ uid: b.uid, why: 'pod-gone' });
    else if (recovered) release.push({ uid: b.uid, why: 'recovered' });
    else kept.push(b);
  }
  const metNow = thresholdsMet(memory, a.obs, false);
  return { apply: recovered ? null : toBrake(a, metNow, input.pods, kept, input.killing), release, stop: stuck(brake, kept, input.now) };
}

/** The top-ranked pod, when a memory threshold is met now (below its line) and that pod is neither braked yet nor killed this pass. */
function toBrake(
  a: Assessment,
  metNow: readonly Threshold[],
  pods: readonly ActivePod[],
  active: readonly ActiveBrake[],
  killing: ReadonlySet<string> = new Set(),
): BrakeApply | null {
  // Both memory signals rank pods the same way (kubelet's rankMemoryPressure): which met
  // threshold is named only changes the log line. The assessment's order (signal, then hard
  // before soft) keeps it reproducible.
  const threshold = a.thresholdsMet.find((s) => metNow.some((t) => t.signal === s.signal && t.kind === s.kind));
  if (!threshold || pods.length === 0) return null;
  const facts = pods.map((p) => podFacts(p.spec));
  const critical = new Set(pods.filter((_, i) => facts[i]!.critical));
  const top = rankMemory(pods, facts).find((r) => !critical.has(r.pod));
  if (!top) return null;
  const uid = top.pod.spec.uid;
  if (active.some((b) => b.uid === uid) || killing.has(uid)) return null;
  return { pod: { namespace: top.pod.spec.namespace, name: top.pod.spec.name, uid }, threshold, reasons: top.reasons };
}

function stuck(brake: MemoryBrakeConfig, active: readonly ActiveBrake[], now: number): BrakeStop[] {
  return active.filter((b) => now - b.since >= brake.maxDurationNs).map((b) => ({ uid: b.uid, brakedNs: now - b.since }));
}

/**
 * The eviction of a pod braked past the bound: at once (grace 0), under the signal that called
 * for the brake, with a message that says why.
 */
export function brakeBoundEviction(brake: MemoryBrakeConfig, stop: BrakeStop, pod: PodRef, signal: Signal = 'memory.available'): Eviction {
  const bound = formatDuration(brake.maxDurationNs);
  const why = `held by the memory brake for ${formatDuration(Math.round(stop.brakedNs / 1e6) * 1e6)}, past its bound of ${bound}`;
  return { pod, signal, gracePeriodSeconds: 0, message: `The node was low on resource: memory. The pod was ${why}.`, annotations: {}, reasons: [why] };
}

/** When the earliest brake reaches its bound (monotonic ns), or null: the agent wakes then. */
export function nextBrakeDeadline(config: PolicyConfig, active: readonly ActiveBrake[]): number | null {
  if (!config.memoryBrake || active.length === 0) return null;
  return Math.min(...active.map((b) => b.since)) + config.memoryBrake.maxDurationNs;
}

/** The memory.high value of a brake: usage plus the margin, rounded up to a page (the kernel stores pages). */
export function brakeValue(usageBytes: number, marginBytes: number, pageBytes = 4096): number {
  return Math.ceil((usageBytes + marginBytes) / pageBytes) * pageBytes;
}

/**
 * The room a braked pod's graceful stop is given (memory.high = usage + this): what was asked,
 * but never more than the node has left (MemAvailable, read fresh; null: unknown, no bound)
 * beyond STOP_EASE_NODE_MARGIN_BYTES, nor more than the tightest cgroup above the pod has left
 * under its memory.max (null: none is limited) beyond STOP_EASE_LIMIT_MARGIN_BYTES; 0 when
 * either has no more than its margin.
 */
export function stopEaseRoom(askedBytes: number, nodeAvailableBytes: number | null, limitLeftBytes: number | null = null): number {
  let room = askedBytes;
  if (nodeAvailableBytes !== null) room = Math.min(room, nodeAvailableBytes - STOP_EASE_NODE_MARGIN_BYTES);
  if (limitLeftBytes !== null) room = Math.min(room, limitLeftBytes - STOP_EASE_LIMIT_MARGIN_BYTES);
  return Math.max(0, room);
}
