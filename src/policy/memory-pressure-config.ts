/**
 * KEP-5986's four KubeletConfiguration fields, checked as the KEP's validation says (no negative
 * threshold or grace period, PSI at most 100) and compiled: the feature is on when its gate
 * (MemoryHighEviction, alpha, off by default) is on and some threshold is above 0.
 */
import { ConfigError } from './config-error';
import { DurationError, parseDuration } from './duration';
import { FEATURE_GATES, type ConfigKey, type EvictionConfig, type MemoryPressureConfig } from './eviction-config';

const THRESHOLDS = ['memoryHighEvictionThreshold', 'memoryMaxEvictionThreshold', 'memoryPSIEvictionThreshold'] as const;

export function compileMemoryPressure(cfg: EvictionConfig, fieldOf: (k: ConfigKey) => string, warnings: string[]): MemoryPressureConfig | undefined {
  for (const k of THRESHOLDS) {
    const v = cfg[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ConfigError(fieldOf(k), v, 'must be a number >= 0 (0: off)');
  }
  if ((cfg.memoryPSIEvictionThreshold ?? 0) > 100)
    throw new ConfigError(fieldOf('memoryPSIEvictionThreshold'), cfg.memoryPSIEvictionThreshold, 'must be a percentage from 0 to 100');
  let graceNs = 0;
  const graceText = cfg.memoryPressureEvictionGracePeriod;
  if (graceText !== undefined) {
    try {
      graceNs = parseDuration(graceText);
    } catch (e) {
      if (e instanceof DurationError) throw new ConfigError(fieldOf('memoryPressureEvictionGracePeriod'), graceText, e.message);
      throw e;
    }
    if (graceNs < 0) throw new ConfigError(fieldOf('memoryPressureEvictionGracePeriod'), graceText, 'must be >= 0');
  }
  const set = THRESHOLDS.filter((k) => (cfg[k] ?? 0) > 0);
  if (set.length === 0) return undefined;
  if (!(cfg.featureGates?.MemoryHighEviction ?? FEATURE_GATES.MemoryHighEviction)) {
    warnings.push(`${set.map(fieldOf).join(', ')}: ignored: the MemoryHighEviction feature gate is off (--feature-gates=MemoryHighEviction=true turns it on)`);
    return undefined;
  }
  return {
    highThreshold: cfg.memoryHighEvictionThreshold ?? 0,
    maxThreshold: cfg.memoryMaxEvictionThreshold ?? 0,
    psiThreshold: cfg.memoryPSIEvictionThreshold ?? 0,
    gracePeriodNs: graceNs,
  };
}
