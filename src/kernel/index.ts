// The typed face of the kernel-notification addon (native/). Mechanism only: watchers report
// what fired and when; deciding is for src/agent and src/policy.
export type { KernelEvent, KernelError, LineMechanism, OrderEvent, PsiWatcher, ThresholdWatcher, Watcher, WatchKind } from './types';
export { nativeAvailable, nativeLoadError, monotonicNs } from './addon';
export { watchMemcgThreshold, watchOom } from './memcg';
export { watchPsi, hasCapSysResource, psiWindowInForce, type PsiTrigger } from './psi';
export { watchCgroupEvents } from './cgroup-events';
export { pollMemoryUsage, pollCounters, usageFile } from './polling';
export {
  watchUsageThreshold,
  watchWorkingSetThreshold,
  watchEventsFile,
  chooseLineMechanism,
  type FallbackLog,
  type LineChoice,
  type LinePreference,
  type SelectOptions,
} from './select';
export { watchTripwire, tripwireUnavailable, tripwireStatus, rootCounterBytes } from './tripwire';
export { watchAdaptivePoll, nextPollDelayMs, pollMarginBytes, DEFAULT_POLL_BOUND, type PollBound } from './adaptive-poller';
export { isCgroup2Root } from './cgroup2-root';
export {
  kubeletMemory,
  memoryCgroupKind,
  readKubeletMemory,
  rootUsageBytes,
  rootWorkingSetBytes,
  statValue,
  type KubeletMemory,
  type MemoryCgroupKind,
} from './kubelet-memory';
export { measureReader, type LineMeasure } from './working-set';
export { parseCounters } from './counters';
export { setRealtimePriority, setKillThreadPriority, schedulingPolicy, MAX_RT_PRIORITY } from './scheduling';
export { reapCgroup, reapCounts, setReapAfterKill } from './reap';
export { lockCode, lockedFileMappings } from './memory-lock';
export { flushOrderUses, orderCounts, setOrderUseLog, type OrderCounts } from './order-event';
