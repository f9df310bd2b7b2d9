/**
 * The embedder's entry point: `require('evictd')`.
 *
 * A CRI-integrated runtime or a tool takes what it needs of the agent's parts: the kubelet's
 * eviction config (flags and KubeletConfiguration), the pure policy (`evaluate()`), the scenario
 * runner behind `evictd simulate`, the kernel notification watchers, the CRI client and
 * evictor, and the agent itself with its ports, so an embedder can give it its own pod source,
 * runtime or notifications. docs/embedding.md shows it end to end.
 *
 * Nothing here imports the lab (demo, benches) or the CLI. The native addon loads on first use,
 * and where it cannot load, the watchers fall back to polling.
 *
 * The names exported here are exactly those of docs/embedding.md's table: a name added or taken
 * away here goes there too (test/unit/public-api.test.ts and test/package/install.test.ts
 * compare the two).
 */

// Errors that name the field and value of a bad input.
export { UsageError, badValue } from './errors';

// Config: the kubelet's own flags and KubeletConfiguration fields.
export {
  ConfigError,
  compileConfig,
  configFromFlags,
  configFromKubeletConfiguration,
  DEFAULT_EVICTION_HARD,
  type EvictionConfig,
  type EvictionFlags,
  type PolicyConfig,
  type Threshold,
  type ThresholdKind,
} from './policy/config';
export { Quantity, QuantityError } from './policy/quantity';
export { DurationError, formatDuration, parseDuration } from './policy/duration';

// The policy: one pure pass, no I/O and no clock.
export {
  assess,
  evaluate,
  evictionGracePeriod,
  initialState,
  planEvictions,
  resolvedByReclaim,
  type Assessment,
  type Evaluation,
  type Eviction,
  type EvictionPlan,
  type PassInput,
  type PolicyState,
  type ThresholdStatus,
} from './policy/evaluate';
export { admit, type AdmissionResult } from './policy/admission';
export type * from './policy/types';
export { SIGNALS } from './policy/types';

// Scenarios: `evictd simulate` in process.
export { readScenario, type Scenario, type Step } from './sim/scenario';
export { simulate, type StepResult } from './sim/run';

// Kernel notifications (the native addon and its fallbacks): the watchers and what says which
// mechanism is in force. The mechanisms' parts (the tripwire alone, the pollers, the selection
// between them, scheduling) stay inside: watchUsageThreshold and watchEventsFile choose for you.
export type { KernelError, KernelEvent, LineMechanism, PsiWatcher, ThresholdWatcher, Watcher, WatchKind } from './kernel/types';
export { monotonicNs, nativeAvailable, nativeLoadError, type TripwireStatus } from './kernel/addon';
export { watchEventsFile, watchUsageThreshold, type FallbackLog, type LinePreference, type SelectOptions } from './kernel/select';
// The logger shape every part takes (a pino logger is one).
export type { Log } from './log';
export { watchMemcgThreshold, watchOom } from './kernel/memcg';
export { watchPsi, type PsiTrigger } from './kernel/psi';
export { watchCgroupEvents } from './kernel/cgroup-events';
export { pollMemoryUsage } from './kernel/polling';
export { tripwireStatus, tripwireUnavailable } from './kernel/tripwire';

// Observations of this node: cgroups, /proc, statfs.
export { detectCgroups, type CgroupLayout, type CgroupMode } from './node/cgroups';
export { NodeObserver, type NodeObserverOptions, type NodeReading } from './node/observer';

// The container runtime (CRI): the client, a pod's eviction through it, node-level reclaim.
export {
  CriClient,
  CriError,
  EvictError,
  evictPod,
  parseEndpoint,
  podStatsFromContainers,
  reclaimContainers,
  reclaimImages,
  type CallOptions,
  type CriClientOptions,
  type EvictOptions,
  type EvictResult,
  type EvictStep,
  type EvictTimings,
  type ReclaimContainersResult,
  type ReclaimImagesOptions,
  type ReclaimImagesResult,
  type ReclaimOptions,
} from './cri';
export type * as cri from './cri/types';

// The agent and its ports.
export { Agent, type EvictionRecord } from './agent/agent';
export type { AgentOptions } from './agent/agent-options';
export { AgentMetrics } from './agent/metrics';
export { CriRuntime } from './agent/adapters/cri-runtime';
export { kernelNotifications } from './agent/adapters/kernel-notifications';
export type {
  EvictionReporter,
  ImageFsInfo,
  NotificationPort,
  PodSpecSource,
  RuntimePod,
  RuntimePort,
  StopTimings,
  ThresholdHandle,
  Wakeup,
  WatchCallbacks,
  WatchHandle,
} from './agent/ports';
