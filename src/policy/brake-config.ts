/**
 * The memory brake's settings (evictd's own fields, memoryBrake and memoryBrakeMaxDuration;
 * see brake.ts for what the brake does), compiled beside the kubelet's eviction fields.
 */
import { formatValue } from '../errors';
import { ConfigError } from './config-error';
import { DurationError, parseDuration } from './duration';

export interface MemoryBrakeConfig {
  /** a pod braked this long is stopped */
  maxDurationNs: number;
  /** memory.high is set this far above the pod's usage */
  marginBytes: number;
  /** the flag or file field that turned it on, for messages */
  field: string;
}

/** The stuck bound when none is configured. */
export const DEFAULT_MEMORY_BRAKE_MAX_DURATION = '2m';

/**
 * memory.high = usage + this. Above the charge batching (64 pages per CPU, so 256 KiB times the
 * CPUs) that lets memory.current run ahead of the pages touched, so the brake does not reclaim
 * the moment it is set; small enough that the pod gains little before the kernel throttles it.
 */
export const MEMORY_BRAKE_MARGIN_BYTES = 8 * 1024 * 1024;

/**
 * At a braked pod's graceful stop (its SIGTERM), the brake is eased to usage + this: a handler
 * that writes a checkpoint allocates while it runs, and at usage + 8 MiB memory.high would
 * throttle it into its grace period's end (SIGKILL, the checkpoint lost). It must also cover
 * what a pod still ramping allocates between the ease and its handler's start (the signal goes
 * through the runtime): measured in the lab at 200 MiB/s, 36 MiB, which with a 64 MiB handler
 * and 64 MiB of headroom left the handler 27 s of throttling in a 30 s grace; with 128 MiB it
 * fits. Bounded, so the pod cannot run away during the grace period either (KEP-5986's first
 * stage relaxes memory.high the same way at termination).
 */
export const MEMORY_BRAKE_STOP_HEADROOM_BYTES = 128 * 1024 * 1024;

/**
 * The ease at a graceful stop comes out of what the node has left: room it does not have would
 * end in the kernel's OOM killer (the pod OOMKilled mid-handler, as the lab saw once, or another
 * pod). This much of MemAvailable is kept back for everything else the node allocates meanwhile;
 * a handler given less than it needs is throttled until its grace period ends, not OOM-killed.
 */
export const STOP_EASE_NODE_MARGIN_BYTES = 32 * 1024 * 1024;

/**
 * The ease also comes out of what each cgroup above the pod has left under its own memory.max
 * (kubepods at the node's allocatable, a QoS class, a lab's node): reaching one of them is an OOM
 * kill too, in that cgroup. Its numbers are exact (memory.current counts all it is charged), so
 * less is kept back than from MemAvailable's estimate: charges in flight (a 64-page batch per
 * CPU) and what its other pods take while the handler starts.
 */
export const STOP_EASE_LIMIT_MARGIN_BYTES = 8 * 1024 * 1024;

/** Node's longest timer (2^31-1 ms): the stuck bound arms one. */
const MAX_TIMER_NS = (2 ** 31 - 1) * 1e6;

/**
 * The memory brake's settings. The bound is checked even with the brake off (a wrong value is
 * wrong either way); it is refused beyond Node's longest timer, which arms it. A bound shorter
 * than a soft memory threshold's grace period plus the pod grace would stop braked pods before
 * their soft eviction: allowed (the operator may want it), but said once.
 */
export function compileMemoryBrake(
  given: { on: boolean | undefined; maxDuration: string | undefined; field: string; maxDurationField: string },
  thresholds: readonly { signal: string; kind: string; gracePeriodNs: number }[],
  maxPodGraceSeconds: number,
  warnings: string[],
): MemoryBrakeConfig | undefined {
  const text = given.maxDuration ?? DEFAULT_MEMORY_BRAKE_MAX_DURATION;
  const field = given.maxDurationField;
  let maxDurationNs: number;
  try {
    maxDurationNs = parseDuration(text);
  } catch (e) {
    if (e instanceof DurationError) throw new ConfigError(field, text, e.message);
    throw e;
  }
  if (maxDurationNs <= 0) throw new ConfigError(field, text, 'must be positive');
  if (maxDurationNs > MAX_TIMER_NS) throw new ConfigError(field, text, 'must be at most 596h31m23.647s (the longest timer)');
  if (!given.on) {
    if (given.maxDuration !== undefined) warnings.push(`${field}: ${formatValue(text)}: ignored: ${given.field} is off`);
    return undefined;
  }
  for (const t of thresholds) {
    if (t.kind !== 'soft' || (t.signal !== 'memory.available' && t.signal !== 'allocatableMemory.available')) continue;
    if (t.gracePeriodNs + maxPodGraceSeconds * 1e9 > maxDurationNs)
      warnings.push(
        `${field}: ${formatValue(text)}: shorter than the ${t.signal} soft grace period plus evictionMaxPodGracePeriod: a braked pod may be stopped (grace 0) before its soft eviction`,
      );
  }
  return { maxDurationNs, marginBytes: MEMORY_BRAKE_MARGIN_BYTES, field: given.field };
}
