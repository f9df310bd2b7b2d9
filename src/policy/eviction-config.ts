/**
 * The eviction configuration's shapes: what the two input forms (kubelet flags,
 * KubeletConfiguration fields) are read into, and the compiled PolicyConfig the policy runs on.
 */
import type { MemoryBrakeConfig } from './brake-config';
import { ConfigError } from './config-error';
import type { Quantity } from './quantity';
import type { Signal } from './types';

/** The KubeletConfiguration fields evictd reads, with the kubelet's names. */
export interface EvictionConfig {
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, string>;
  evictionMaxPodGracePeriod?: number;
  evictionMinimumReclaim?: Record<string, string>;
  evictionPressureTransitionPeriod?: string;
  enforceNodeAllocatable?: string[];
  mergeDefaultEvictionSettings?: boolean;
  /**
   * KEP-5986 per-container memory pressure eviction (gate MemoryHighEviction), under the KEP's
   * names: memory.events high and max rates (events per second), memory.pressure some avg10
   * (percent), each 0 = off, and the per-pod grace period.
   */
  memoryHighEvictionThreshold?: number;
  memoryMaxEvictionThreshold?: number;
  memoryPSIEvictionThreshold?: number;
  memoryPressureEvictionGracePeriod?: string;
  /** the kubelet's feature gates (featureGates, --feature-gates): evictd reads those its rules depend on (FEATURE_GATES) */
  featureGates?: Record<string, boolean>;
  /**
   * evictd's own fields (no kubelet has them; named as the kubelet would): on a memory threshold
   * met, hold the top-ranked pod with memory.high until it is evicted (see policy/brake.ts).
   */
  memoryBrake?: boolean;
  /** how long a pod may stay braked before it is stopped, e.g. "2m" */
  memoryBrakeMaxDuration?: string;
  /**
   * Read only to refuse what the kubelet refuses in enforceNodeAllocatable (evictd enforces no
   * allocatable): system-reserved needs systemReservedCgroup, kube-reserved kubeReservedCgroup,
   * and every enforcement needs cgroupsPerQOS (default true).
   */
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  cgroupsPerQOS?: boolean;
  /** Where each field came from (a flag name, a file field path), for error messages. */
  origins?: Partial<Record<ConfigKey, string>>;
  /** What reading the input kept or dropped without refusing it (one line each). */
  warnings?: string[];
}
export type ConfigKey = Exclude<keyof EvictionConfig, 'origins' | 'warnings'>;

export type ThresholdKind = 'hard' | 'soft';

/** A threshold or minimum-reclaim value: a quantity or a fraction of capacity. */
export interface ThresholdValue {
  quantity?: Quantity;
  /** fraction of capacity, rounded through float32 as the kubelet stores it */
  percentage?: number;
  /** the value as configured, e.g. "1Gi" or "10%" */
  text: string;
}

export interface Threshold {
  signal: Signal;
  kind: ThresholdKind;
  value: ThresholdValue;
  gracePeriodNs: number;
  minReclaim?: ThresholdValue;
}

export interface PolicyConfig {
  thresholds: Threshold[];
  maxPodGracePeriodSeconds: number;
  pressureTransitionPeriodNs: number;
  enforceNodeAllocatable: string[];
  /**
   * Settings the kubelet accepts but ignores or overrides (a repeated flag key, a containerfs
   * threshold, a minimum reclaim with no threshold): one line each, for the caller to print.
   */
  warnings: string[];
  /** the memory brake, when it is on (absent: off) */
  memoryBrake?: MemoryBrakeConfig;
  /**
   * HugepageAwareEviction (kubernetes PR #138127; beta and on by default in v1.37, absent before):
   * the node's huge pages come out of memory.available (policy/hugepages.ts). A scenario's: on
   * unless set, as the newest kubelet. `evictd run` leaves an unset gate to the kubelet release
   * its Node names (agent/hugepage-gate.ts), off when that is unknown.
   */
  hugepageAwareEviction: boolean;
  /** KEP-5986 per-container memory pressure eviction, when its gate is on and a threshold is set */
  memoryPressure?: MemoryPressureConfig;
}

/** KEP-5986's settings, compiled (policy/memory-pressure-config.ts); its rules are policy/memory-pressure.ts. */
export interface MemoryPressureConfig {
  /** memory.events high, events per second; 0: off */
  highThreshold: number;
  /** memory.events max, events per second; 0: off */
  maxThreshold: number;
  /** memory.pressure some avg10, percent; 0: off */
  psiThreshold: number;
  gracePeriodNs: number;
}

/** The feature gates whose value changes an eviction rule, with the default evictd follows. */
export const FEATURE_GATES: Readonly<Record<string, boolean>> = { HugepageAwareEviction: true, MemoryHighEviction: false };

/** The kubelet's default hard thresholds on Linux (pkg/kubelet/eviction/defaults_linux.go). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};
export const DEFAULT_PRESSURE_TRANSITION_PERIOD = '5m';

/**
 * "__proto__" would not become a key of a plain object (the assignment changes its prototype
 * or does nothing), so it would vanish silently; the kubelet refuses it as an unknown signal.
 */
export function refuseProtoKey(field: string, key: string, value: unknown): void {
  if (key === '__proto__') throw new ConfigError(field, value, `unsupported eviction signal ${key}`);
}
