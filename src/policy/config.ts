/**
 * Eviction configuration in the kubelet's own forms (flags and KubeletConfiguration fields),
 * validated with the kubelet's rules and compiled into thresholds. One import for all of it; each
 * job lives in its own file:
 *
 * - eviction-config.ts: the shapes (EvictionConfig in, PolicyConfig out) and the defaults
 * - config-flags.ts: the kubelet's flags (configFromFlags)
 * - kubelet-configuration.ts: a KubeletConfiguration's fields (configFromKubeletConfiguration)
 * - compile-config.ts: validation and compilation (compileConfig)
 * - brake-config.ts, config-error.ts: the memory brake's settings, ConfigError
 */
export {
  DEFAULT_EVICTION_HARD,
  DEFAULT_PRESSURE_TRANSITION_PERIOD,
  type ConfigKey,
  type EvictionConfig,
  type MemoryPressureConfig,
  type PolicyConfig,
  type Threshold,
  type ThresholdKind,
  type ThresholdValue,
} from './eviction-config';
export { configFromFlags, type EvictionFlags } from './config-flags';
export { configFromKubeletConfiguration } from './kubelet-configuration';
export { compileConfig } from './compile-config';
export { ConfigError } from './config-error';
export {
  DEFAULT_MEMORY_BRAKE_MAX_DURATION,
  MEMORY_BRAKE_MARGIN_BYTES,
  MEMORY_BRAKE_STOP_HEADROOM_BYTES,
  STOP_EASE_NODE_MARGIN_BYTES,
  STOP_EASE_LIMIT_MARGIN_BYTES,
  type MemoryBrakeConfig,
} from './brake-config';
