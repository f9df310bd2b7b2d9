/**
 * Standing orders: near a hard memory line, the pod the kubelet's ranking would evict
 * if the line were crossed now, named ahead of the crossing so that the kernel-side mechanism can
 * kill it the moment the line is crossed, without waiting for a pass. The pass that follows
 * confirms the kill: it stops the sandbox and reports the eviction as the kubelet would have.
 *
 * This file is the rule alone: which hard lines are near, which pod each would take, and the
 * eviction a used order stands for. The agent places, refreshes, withdraws and confirms orders
 * (src/agent/standing-orders.ts). Pure: no I/O, no clock.
 */
import type { PolicyConfig, Threshold } from './config';
import { byEvictionPriority, evictionGracePeriod, type Eviction, type ThresholdStatus } from './evaluate';
import { evictionMessage } from './messages';
import { isCritical } from './pods';
import { rankFor } from './ranking';
import { makeObservations, thresholdAmount, type Observations } from './thresholds';
import type { ActivePod, FilesystemLayout, NodeStats, PodRef } from './types';

/** The memory signals a line is armed on (the arming's `node:` and `pods:` lines). */
export type LineSignal = 'memory.available' | 'allocatableMemory.available';
export const LINE_SIGNALS: readonly LineSignal[] = ['memory.available', 'allocatableMemory.available'];

/** How long an order stands unless refreshed (a second: the victim a pass chose is never older than that when it is used). */
export const DEFAULT_ORDER_TTL_MS = 1000;

/**
 * "Near" a line: the signal is above the line by less than max(the line's own amount, 128 MiB),
 * i.e. available < 2 x threshold, with a floor of 128 MiB of headroom.
 *
 * Why these numbers. An order only helps if a pass placed it before the crossing, and near a
 * line a pass comes at most one drift tick (100 ms) plus one pass (~30 ms on emulated CPUs)
 * after the signal entered the zone: at 1 GiB/s that is ~130 MiB, hence the floor. A line the
 * user set higher (500Mi) says they want that much headroom, so the zone grows with it. The
 * zone is bounded on purpose: every pass in it costs 10-30 ms (it grows with the pod count) and
 * orders are refreshed at half their TTL, so a node that idles a few GiB above its line must not
 * pay for passes twice a second (a capacity fraction, as the drift tick's nearness, would on a
 * large node). A signal already past the line is not near: that pass evicts by itself, and a
 * line only fires when it is crossed again.
 */
export const NEAR_FLOOR_BYTES = 128 * 1024 * 1024;
export const nearMarginBytes = (lineBytes: number): number => Math.max(lineBytes, NEAR_FLOOR_BYTES);
export const isNear = (availableBytes: number, lineBytes: number): boolean =>
  availableBytes >= lineBytes && availableBytes - lineBytes < nearMarginBytes(lineBytes);

/** A hard threshold is one with no grace period (the kubelet's isHardEvictionThreshold), whatever list it came from. */
export const isHard = (t: Threshold): boolean => t.gracePeriodNs === 0;

/** A pod the pass ranks, with its cgroup dir (where the order's kill is written) when it has one. */
export interface OrderPod {
  pod: ActivePod;
  cgroupDir?: string;
  /** its directory in the memory hierarchy, when it has one (the mechanism reads its statistics) */
  memoryDir?: string;
}

/** The order on one hard line: plain data the agent hands to the line's mechanism. */
export interface OrderChoice {
  signal: LineSignal;
  /** the threshold's index among the config's thresholds on this signal: the arming's `lineN` */
  thresholdIndex: number;
  threshold: Threshold;
  pod: PodRef;
  podCgroupDir: string;
  podMemoryDir?: string;
  ttlMs: number;
  /** the signal, its capacity and the line (the threshold's amount) at the pass that chose it, bytes */
  availableBytes: number;
  capacityBytes: number;
  lineBytes: number;
  /** why the pod ranks first (the ranking's reasons) */
  reasons: string[];
  /** the pod as ranked (spec and usage): the eviction message a used order reports is built from it */
  snapshot: ActivePod;
}

/** What the rule said for one hard memory line: an order, or why there is none. */
export type OrderDecision =
  | { signal: LineSignal; thresholdIndex: number; order: OrderChoice }
  | { signal: LineSignal; thresholdIndex: number; order: null; why: 'not-near' | 'met' | 'no-eligible-pod' | 'victim-without-cgroup' };

/**
 * One decision per hard memory threshold whose signal is observed. The victim is the first pod
 * of the same ranking the pass evicts by (rankFor on the same pods), critical pods (static,
 * mirror, system-critical priority) left out as the kubelet leaves them out. When the kubelet's
 * pick has no cgroup dir there is no order: naming the runner-up instead would kill a pod the
 * kubelet would not evict, and the pass would then evict the pick as well.
 */
export function decideOrders(
  config: PolicyConfig,
  obs: Observations,
  pods: readonly OrderPod[],
  layout: FilesystemLayout,
  ttlMs: number = DEFAULT_ORDER_TTL_MS,
): OrderDecision[] {
  const out: OrderDecision[] = [];
  let victim: { ranked: OrderPod; reasons: string[] } | null | undefined;
  for (const signal of LINE_SIGNALS) {
    const o = obs[signal];
    let index = -1;
    for (const t of config.thresholds) {
      if (t.signal !== signal) continue;
      index++;
      if (!isHard(t) || !o) continue;
      const lineBytes = thresholdAmount(t.value, o.capacity);
      const base = { signal, thresholdIndex: index };
      if (o.available < lineBytes) {
        out.push({ ...base, order: null, why: 'met' });
        continue;
      }
      if (!isNear(o.available, lineBytes)) {
        out.push({ ...base, order: null, why: 'not-near' });
        continue;
      }
      // Both memory signals rank by memory (rankMemoryPressure): one ranking serves every line.
      if (victim === undefined) victim = firstEligible(signal, layout, pods);
      if (victim === null) {
        out.push({ ...base, order: null, why: 'no-eligible-pod' });
        continue;
      }
      const { ranked, reasons } = victim;
      if (ranked.cgroupDir === undefined) {
        out.push({ ...base, order: null, why: 'victim-without-cgroup' });
        continue;
      }
      const spec = ranked.pod.spec;
      out.push({
        ...base,
        order: {
          signal,
          thresholdIndex: index,
          threshold: t,
          pod: { namespace: spec.namespace, name: spec.name, uid: spec.uid },
          podCgroupDir: ranked.cgroupDir,
          ...(ranked.memoryDir !== undefined ? { podMemoryDir: ranked.memoryDir } : {}),
          ttlMs,
          availableBytes: o.available,
          capacityBytes: o.capacity,
          lineBytes,
          reasons,
          snapshot: ranked.pod,
        },
      });
    }
  }
  return out;
}

function firstEligible(signal: LineSignal, layout: FilesystemLayout, pods: readonly OrderPod[]): { ranked: OrderPod; reasons: string[] } | null {
  const byPod = new Map(pods.map((p) => [p.pod, p]));
  for (const r of rankFor(
    signal,
    layout,
    pods.map((p) => p.pod),
  )) {
    if (isCritical(r.pod.spec)) continue;
    return { ranked: byPod.get(r.pod)!, reasons: r.reasons };
  }
  return null;
}

/** True when some hard memory line is near on these numbers (the agent's drift tick asks, between passes). */
export function nearHardMemoryLine(config: PolicyConfig, node: NodeStats): boolean {
  const obs = makeObservations(node);
  for (const t of config.thresholds) {
    if (!isHard(t) || (t.signal !== 'memory.available' && t.signal !== 'allocatableMemory.available')) continue;
    const o = obs[t.signal];
    if (o && isNear(o.available, thresholdAmount(t.value, o.capacity))) return true;
  }
  return false;
}

/**
 * The signal at the crossing, from what the mechanism saw: the line and the measure there, in
 * the line's own terms (usage or working set; either way available = capacity - working set, and
 * the line sits at the first value where available is below the threshold's amount: one byte
 * past it, src/agent/arming.ts), so available = amount - 1 - (value - line). A mechanism that
 * rounds its line up to a page reports the rounded line: the figure is then high by less than a
 * page, and still below the amount. Never below 0.
 */
export function availableAtCrossing(order: Pick<OrderChoice, 'lineBytes'>, crossing: { valueBytes: number; lineBytes: number }): number {
  return Math.max(0, order.lineBytes - 1 - (crossing.valueBytes - crossing.lineBytes));
}

/** A used order: the kernel killed the pod; the eviction it stands for is what the next pass confirms. */
export interface OrderConfirmation {
  order: OrderChoice;
  /** the signal when the line was crossed, bytes */
  availableBytes: number;
  /** the mechanism's CLOCK_MONOTONIC stamps of the crossing and the kill, carried into the record */
  crossedNs: bigint;
  killedNs: bigint;
  /** the eviction is reported already: only the sandbox stop is left to do again */
  reported?: boolean;
}

/**
 * Two lines' orders used on the same pod (one charge crosses the node's line and the pod cgroup
 * root's at once, and both kills are written): the eviction is reported once, under the
 * threshold a pass that saw both crossed would reclaim first (byEvictionPriority:
 * memory.available before allocatableMemory.available), whichever use reached the loop first.
 */
export function reportedUnder(a: OrderChoice, b: OrderChoice): OrderChoice {
  return byEvictionPriority(b.threshold, a.threshold) < 0 ? b : a;
}

/**
 * The eviction a used order stands for, as the kubelet would have made it had it seen the line
 * crossed: that signal's hard threshold, grace 0, its message and annotations from the pod's
 * usage as ranked and the signal at the crossing (the pass that confirms sees the memory already
 * coming back, which the kubelet never saw).
 */
export function confirmedEviction(config: PolicyConfig, c: OrderConfirmation): { eviction: Eviction; threshold: ThresholdStatus } {
  const { order } = c;
  const observed = { available: c.availableBytes, capacity: order.capacityBytes };
  const obs: Observations = { [order.signal]: observed };
  const text = evictionMessage('memory', order.snapshot.spec, order.snapshot.usage, [order.threshold], obs);
  return {
    eviction: {
      pod: order.pod,
      signal: order.signal,
      gracePeriodSeconds: evictionGracePeriod(config, order.threshold, order.snapshot),
      message: text.message,
      annotations: text.annotations,
      reasons: [...order.reasons, 'standing order: killed as the line was crossed'],
    },
    threshold: { signal: order.signal, kind: order.threshold.kind, quantity: order.threshold.value.text, gracePeriodMet: true, observed },
  };
}
