/**
 * memory.available on a node with pre-allocated huge pages, as the kubelet computes it since the
 * HugepageAwareEviction feature (kubernetes PR #138127, issue #137984; beta and on by default
 * since v1.36): the summary provider's adjustForHugePages (pkg/kubelet/server/stats/summary.go)
 * takes the node's hugepage capacity out of the node's available memory, never below 0. Huge
 * pages are counted in MemTotal but no ordinary allocation can use them, so without it
 * memory.available overstated what was left and pods met the OOM killer first. Only the node's
 * numbers change: the pods cgroup (allocatableMemory.available) keeps its own, and the working set
 * is unchanged, so the capacity the eviction manager derives (available + working set) shrinks
 * with it, and so does a percentage threshold.
 */
import type { MemoryStats } from './types';

/** The node's memory numbers as the summary reports them with `hugePagesBytes` reserved. */
export function adjustForHugePages(m: MemoryStats, hugePagesBytes: number): MemoryStats {
  return { availableBytes: Math.max(0, m.availableBytes - hugePagesBytes), workingSetBytes: m.workingSetBytes };
}

/** A node capacity's resource names that are huge pages (v1helper.IsHugePageResourceName). */
export const HUGEPAGES_PREFIX = 'hugepages-';
