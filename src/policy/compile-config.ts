/**
 * An EvictionConfig validated with the kubelet's rules (pkg/kubelet/eviction
 * ParseThresholdConfig, ValidateKubeletConfiguration) and compiled into the thresholds of a
 * PolicyConfig.
 */
import { formatValue } from '../errors';
import { compileMemoryBrake } from './brake-config';
import { compileMemoryPressure } from './memory-pressure-config';
import { ConfigError } from './config-error';
import { DurationError, parseDuration } from './duration';
import {
  FEATURE_GATES,
  DEFAULT_EVICTION_HARD,
  DEFAULT_PRESSURE_TRANSITION_PERIOD,
  type ConfigKey,
  type EvictionConfig,
  type PolicyConfig,
  type Threshold,
  type ThresholdValue,
} from './eviction-config';
import { Quantity, QuantityError } from './quantity';
import { isSignal } from './signals';
import type { Signal } from './types';

const ENFORCE_OPTIONS = ['none', 'pods', 'system-reserved', 'kube-reserved', 'system-reserved-compressible', 'kube-reserved-compressible'];

/** The kubelet's parsePercentage: ParseFloat(..., 32) then float32(value) / 100. */
function parsePercentage(field: string, text: string): number {
  const body = text.replace(/%+$/, '');
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(body)) throw new ConfigError(field, text, 'invalid percentage');
  return Math.fround(Math.fround(Number(body)) / 100);
}

const INT64_MAX_QUANTITY = Quantity.fromNumber((1n << 63n) - 1n, 'DecimalSI');

function parseQuantity(field: string, text: string): Quantity {
  try {
    return Quantity.parse(text);
  } catch (e) {
    if (e instanceof QuantityError) throw new ConfigError(field, text, e.message);
    throw e;
  }
}

/** Parses one threshold value; null means "disabled" (the kubelet ignores 0% and 100%). */
function parseThresholdValue(field: string, signal: Signal, text: string): ThresholdValue | null {
  if (text.endsWith('%')) {
    if (text === '0%' || text === '100%') return null;
    const percentage = parsePercentage(field, text);
    if (percentage < 0) throw new ConfigError(field, text, `eviction percentage threshold ${signal} must be >= 0%`);
    if (percentage > 1) throw new ConfigError(field, text, `eviction percentage threshold ${signal} must be <= 100%`);
    return { percentage, text };
  }
  const quantity = parseQuantity(field, text);
  if (quantity.sign() <= 0) throw new ConfigError(field, text, `eviction threshold ${signal} must be positive`);
  // The kubelet compares thresholds as int64 values; a quantity past that is no node's size
  // (91e934 parses) and would be met always, evicting every pod: a typo, refused.
  if (quantity.cmp(INT64_MAX_QUANTITY) > 0)
    throw new ConfigError(field, text, `eviction threshold ${signal} must be at most ${INT64_MAX_QUANTITY.toString()}: no node has more`);
  return { quantity, text };
}

function checkSignal(field: string, key: string): Signal {
  if (!isSignal(key)) throw new ConfigError(field, key, `unsupported eviction signal ${key}`);
  return key;
}

function parseDurationField(field: string, text: string): number {
  try {
    return parseDuration(text);
  } catch (e) {
    if (e instanceof DurationError) throw new ConfigError(field, text, e.message);
    throw e;
  }
}

const CONTAINERFS = /^containerfs\./;

/** Validates a configuration and compiles it into thresholds; throws ConfigError. */
export function compileConfig(cfg: EvictionConfig): PolicyConfig {
  const fieldOf = (k: ConfigKey) => cfg.origins?.[k] ?? k;
  // JSON quoting keeps the field name one line, whatever the key holds
  const entry = (k: ConfigKey, signal: string) => `${fieldOf(k)}[${JSON.stringify(signal)}]`;
  const warnings = [...(cfg.warnings ?? [])];

  // "Set one, lose the rest": an evictionHard that is given replaces the defaults, unless
  // mergeDefaultEvictionSettings asks for the defaults of the signals it does not name.
  let hard: Record<string, string>;
  if (cfg.evictionHard === undefined) hard = { ...DEFAULT_EVICTION_HARD };
  else if (cfg.mergeDefaultEvictionSettings) hard = { ...DEFAULT_EVICTION_HARD, ...cfg.evictionHard };
  else hard = { ...cfg.evictionHard };

  // ParseThresholdConfig: hard statements, soft statements, grace periods, minimum reclaims,
  // each validated in full (a containerfs statement too: it is parsed before it is ignored).
  const thresholds: Threshold[] = [];
  for (const [key, text] of Object.entries(hard)) {
    const signal = checkSignal(entry('evictionHard', key), key);
    const value = parseThresholdValue(entry('evictionHard', key), signal, text);
    if (value) thresholds.push({ signal, kind: 'hard', value, gracePeriodNs: 0 });
  }

  const gracePeriods = new Map<Signal, number>();
  for (const [key, text] of Object.entries(cfg.evictionSoftGracePeriod ?? {})) {
    const field = entry('evictionSoftGracePeriod', key);
    const signal = checkSignal(field, key);
    const ns = parseDurationField(field, text);
    if (ns < 0) throw new ConfigError(field, text, 'invalid eviction grace period, must be a positive value');
    gracePeriods.set(signal, ns);
  }
  const softSignals = new Set<Signal>();
  for (const [key, text] of Object.entries(cfg.evictionSoft ?? {})) {
    const field = entry('evictionSoft', key);
    const signal = checkSignal(field, key);
    const value = parseThresholdValue(field, signal, text);
    if (!value) continue;
    const grace = gracePeriods.get(signal);
    if (grace === undefined)
      throw new ConfigError(field, text, `grace period must be specified for the soft eviction threshold ${signal} (in ${fieldOf('evictionSoftGracePeriod')})`);
    // A soft threshold whose grace period is 0 is a hard one in every respect (isHardEvictionThreshold
    // tests the grace period): the kubelet evicts at once, with the 1 s / 0 s hard grace.
    thresholds.push({ signal, kind: 'soft', value, gracePeriodNs: grace });
    softSignals.add(signal);
  }
  for (const [signal] of gracePeriods) {
    if (!softSignals.has(signal))
      warnings.push(`${entry('evictionSoftGracePeriod', signal)}: no soft threshold for ${signal}: the grace period is ignored, as the kubelet does`);
  }

  const minReclaims = new Map<Signal, ThresholdValue>();
  for (const [key, text] of Object.entries(cfg.evictionMinimumReclaim ?? {})) {
    const field = entry('evictionMinimumReclaim', key);
    const signal = checkSignal(field, key);
    if (text.endsWith('%')) {
      const percentage = parsePercentage(field, text);
      if (percentage <= 0) throw new ConfigError(field, text, `eviction percentage minimum reclaim ${signal} must be positive`);
      minReclaims.set(signal, { percentage, text });
    } else {
      const quantity = parseQuantity(field, text);
      if (quantity.sign() < 0) throw new ConfigError(field, text, `negative eviction minimum reclaim specified for ${signal}`);
      minReclaims.set(signal, { quantity, text });
    }
  }
  for (const t of thresholds) {
    const mr = minReclaims.get(t.signal);
    if (mr) t.minReclaim = mr;
  }
  for (const [signal, mr] of minReclaims) {
    if (CONTAINERFS.test(signal)) continue; // warned about below, with the thresholds
    if (!thresholds.some((t) => t.signal === signal))
      warnings.push(`${entry('evictionMinimumReclaim', signal)}: ${formatValue(mr.text)}: no threshold on ${signal}: ignored, as the kubelet does`);
  }

  // UpdateContainerFsThresholds: containerfs thresholds are always derived from nodefs or imagefs;
  // the kubelet drops a configured one ("found containerfs.available for hard eviction. ignoring").
  const derivedFrom = 'derived from nodefs (single and split filesystems) or imagefs (a dedicated image filesystem)';
  for (const t of thresholds.filter((x) => CONTAINERFS.test(x.signal))) {
    const key: ConfigKey = t.kind === 'hard' ? 'evictionHard' : 'evictionSoft';
    warnings.push(`${entry(key, t.signal)}: ${formatValue(t.value.text)}: ignored: containerfs thresholds are ${derivedFrom}, as the kubelet does`);
  }
  for (const [signal, mr] of minReclaims) {
    if (CONTAINERFS.test(signal))
      warnings.push(
        `${entry('evictionMinimumReclaim', signal)}: ${formatValue(mr.text)}: ignored: containerfs minimum reclaim is ${derivedFrom}, as the kubelet does`,
      );
  }
  const kept = thresholds.filter((t) => !CONTAINERFS.test(t.signal));

  const maxPodGrace = cfg.evictionMaxPodGracePeriod ?? 0;
  if (!Number.isInteger(maxPodGrace) || maxPodGrace < 0 || maxPodGrace > 2147483647)
    throw new ConfigError(fieldOf('evictionMaxPodGracePeriod'), maxPodGrace, 'must be a whole number of seconds from 0 to 2147483647');

  const transitionText = cfg.evictionPressureTransitionPeriod ?? DEFAULT_PRESSURE_TRANSITION_PERIOD;
  const transitionNs = parseDurationField(fieldOf('evictionPressureTransitionPeriod'), transitionText);
  if (transitionNs < 0) throw new ConfigError(fieldOf('evictionPressureTransitionPeriod'), transitionText, 'must be >= 0');

  const enforce = cfg.enforceNodeAllocatable ?? ['pods'];
  checkEnforcements(fieldOf('enforceNodeAllocatable'), enforce);
  checkEnforcementNeeds(cfg, enforce, fieldOf);

  // With pods' allocatable enforced, every hard memory.available threshold also guards the pods
  // cgroup (kubelet's addAllocatableThresholds). "Hard" there means a zero grace period.
  if (enforce.includes('pods')) {
    for (const t of [...kept]) {
      if (t.signal === 'memory.available' && t.gracePeriodNs === 0) kept.push({ ...t, signal: 'allocatableMemory.available' });
    }
  }

  const out: PolicyConfig = {
    thresholds: kept,
    maxPodGracePeriodSeconds: maxPodGrace,
    pressureTransitionPeriodNs: transitionNs,
    enforceNodeAllocatable: enforce,
    warnings,
    hugepageAwareEviction: cfg.featureGates?.HugepageAwareEviction ?? FEATURE_GATES.HugepageAwareEviction,
  };
  const brake = compileMemoryBrake(
    { on: cfg.memoryBrake, maxDuration: cfg.memoryBrakeMaxDuration, field: fieldOf('memoryBrake'), maxDurationField: fieldOf('memoryBrakeMaxDuration') },
    kept,
    maxPodGrace,
    warnings,
  );
  if (brake) out.memoryBrake = brake;
  const pressure = compileMemoryPressure(cfg, fieldOf, warnings);
  if (pressure) out.memoryPressure = pressure;
  return out;
}

/**
 * ValidateKubeletConfiguration (v1.34/v1.35) also asks what each enforcement needs: the reserved
 * cgroup it limits (system-reserved and system-reserved-compressible need systemReservedCgroup,
 * the kube ones kubeReservedCgroup), and per-QoS cgroups (cgroupsPerQOS, default true) for every
 * option but none. evictd enforces no allocatable, but a config the kubelet would not start with
 * is not one to run on.
 */
function checkEnforcementNeeds(cfg: EvictionConfig, enforce: readonly string[], fieldOf: (k: ConfigKey) => string): void {
  const field = fieldOf('enforceNodeAllocatable');
  const needs = [
    ['system-reserved', 'systemReservedCgroup', '--system-reserved-cgroup'],
    ['kube-reserved', 'kubeReservedCgroup', '--kube-reserved-cgroup'],
  ] as const;
  for (const [base, key, flag] of needs) {
    const opt = enforce.find((o) => o === base || o === `${base}-compressible`);
    if (opt !== undefined && !cfg[key])
      throw new ConfigError(
        field,
        opt,
        `${key} (${flag}) must be specified when ${formatValue(base)} or ${formatValue(`${base}-compressible`)} is in it, as the kubelet requires`,
      );
  }
  const enforced = enforce.find((o) => o !== 'none');
  if (enforced !== undefined && cfg.cgroupsPerQOS === false)
    throw new ConfigError(
      fieldOf('cgroupsPerQOS'),
      false,
      `must be true when ${formatValue(enforced)} is in enforceNodeAllocatable (--enforce-node-allocatable), as the kubelet requires`,
    );
}

/** The kubelet's ValidateKubeletConfiguration rules for enforceNodeAllocatable. */
function checkEnforcements(field: string, enforce: readonly string[]): void {
  const seen = new Set<string>();
  for (const opt of enforce) {
    if (!ENFORCE_OPTIONS.includes(opt)) throw new ConfigError(field, opt, `invalid option, valid options are ${ENFORCE_OPTIONS.join(', ')}`);
    if (seen.has(opt)) throw new ConfigError(field, enforce, `duplicated enforcement ${formatValue(opt)}`);
    seen.add(opt);
  }
  if (seen.has('none') && enforce.length > 1) throw new ConfigError(field, enforce, '"none" cannot be combined with other options');
  for (const base of ['system-reserved', 'kube-reserved']) {
    if (seen.has(base) && seen.has(`${base}-compressible`))
      throw new ConfigError(field, enforce, `${formatValue(base)} and ${formatValue(`${base}-compressible`)} cannot be specified together`);
  }
}
