/**
 * The kubelet's eviction flags (--eviction-hard and the rest) read into an EvictionConfig, on top
 * of a file's (flags win, as in the kubelet).
 */
import { formatValue } from '../errors';
import { ConfigError } from './config-error';
import { refuseProtoKey, type EvictionConfig } from './eviction-config';

/** Kubelet flag values, as given on the command line (flag name -> raw string). */
export interface EvictionFlags {
  evictionHard?: string;
  evictionSoft?: string;
  evictionSoftGracePeriod?: string;
  evictionMaxPodGracePeriod?: string;
  evictionMinimumReclaim?: string;
  evictionPressureTransitionPeriod?: string;
  enforceNodeAllocatable?: string;
  memoryBrake?: boolean;
  memoryBrakeMaxDuration?: string;
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  cgroupsPerQOS?: boolean;
  featureGates?: string;
  memoryHighEvictionThreshold?: string;
  memoryMaxEvictionThreshold?: string;
  memoryPSIEvictionThreshold?: string;
  memoryPressureEvictionGracePeriod?: string;
}

const FLAG_NAMES: Record<keyof EvictionFlags, string> = {
  evictionHard: '--eviction-hard',
  evictionSoft: '--eviction-soft',
  evictionSoftGracePeriod: '--eviction-soft-grace-period',
  evictionMaxPodGracePeriod: '--eviction-max-pod-grace-period',
  evictionMinimumReclaim: '--eviction-minimum-reclaim',
  evictionPressureTransitionPeriod: '--eviction-pressure-transition-period',
  enforceNodeAllocatable: '--enforce-node-allocatable',
  memoryBrake: '--memory-brake',
  memoryBrakeMaxDuration: '--memory-brake-max-duration',
  systemReservedCgroup: '--system-reserved-cgroup',
  kubeReservedCgroup: '--kube-reserved-cgroup',
  cgroupsPerQOS: '--cgroups-per-qos',
  featureGates: '--feature-gates',
  memoryHighEvictionThreshold: '--memory-high-eviction-threshold',
  memoryMaxEvictionThreshold: '--memory-max-eviction-threshold',
  memoryPSIEvictionThreshold: '--memory-psi-eviction-threshold',
  memoryPressureEvictionGracePeriod: '--memory-pressure-eviction-grace-period',
};

/** Go's strconv.ParseBool, which component-base's feature gate flag reads each value with. */
const GO_BOOLS: Readonly<Record<string, boolean>> = {
  1: true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  0: false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/** "A=true,B=false" as component-base featuregate's Set reads it: each value a Go bool. */
function parseFeatureGates(flag: string, raw: string, warnings: string[]): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [gate, text] of Object.entries(parseMapFlag(flag, raw, '=', warnings))) {
    const v = GO_BOOLS[text];
    if (v === undefined) throw new ConfigError(`${flag}[${JSON.stringify(gate)}]`, text, 'invalid value, must be a boolean (true or false)');
    out[gate] = v;
  }
  return out;
}

/**
 * Splits "a<b,c<d" (separator "<") or "a=b,c=d" (separator "=") as the kubelet's map flags do
 * (cliflag LangleSeparatedMapStringString / MapStringString): pairs split at the first
 * separator, key and value trimmed, empty pairs skipped. A key given twice keeps its last value,
 * as the kubelet's map does, but not silently: `warnings` gets one line naming what was kept.
 */
function parseMapFlag(flag: string, raw: string, separator: '<' | '=', warnings: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of raw.split(',')) {
    const pair = part.trim();
    if (pair === '') continue;
    const at = pair.indexOf(separator);
    if (at <= 0) throw new ConfigError(flag, pair, `malformed pair, expected <signal>${separator}<value>`);
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    refuseProtoKey(`${flag}[${JSON.stringify(key)}]`, key, value);
    if (Object.hasOwn(out, key) && out[key] !== value)
      warnings.push(
        `${flag}: ${key} is given more than once (${formatValue(out[key])}, then ${formatValue(value)}): kept the last, ${formatValue(value)}, as the kubelet does`,
      );
    out[key] = value;
  }
  return out;
}

/** Overlays kubelet-style flags on `base` (flags win, as in the kubelet). */
export function configFromFlags(flags: EvictionFlags, base: EvictionConfig = {}): EvictionConfig {
  const cfg: EvictionConfig = { ...base, origins: { ...base.origins }, warnings: [...(base.warnings ?? [])] };
  const origins = cfg.origins!;
  const warnings = cfg.warnings!;
  const set = <K extends keyof EvictionFlags>(key: K, value: EvictionConfig[K]) => {
    (cfg as Record<string, unknown>)[key] = value;
    origins[key] = FLAG_NAMES[key];
  };
  // A map flag replaces the file's whole map (the kubelet's map flag clears its target on first Set).
  if (flags.evictionHard !== undefined) set('evictionHard', parseMapFlag(FLAG_NAMES.evictionHard, flags.evictionHard, '<', warnings));
  if (flags.evictionSoft !== undefined) set('evictionSoft', parseMapFlag(FLAG_NAMES.evictionSoft, flags.evictionSoft, '<', warnings));
  if (flags.evictionSoftGracePeriod !== undefined)
    set('evictionSoftGracePeriod', parseMapFlag(FLAG_NAMES.evictionSoftGracePeriod, flags.evictionSoftGracePeriod, '=', warnings));
  if (flags.evictionMinimumReclaim !== undefined)
    set('evictionMinimumReclaim', parseMapFlag(FLAG_NAMES.evictionMinimumReclaim, flags.evictionMinimumReclaim, '=', warnings));
  // Flags go on top of the defaulted file and are taken as given: a flag's zero stays zero
  // (the kubelet defaults the file, then re-parses the command line over it).
  if (flags.evictionMaxPodGracePeriod !== undefined) {
    const raw = flags.evictionMaxPodGracePeriod.trim();
    if (!/^[+-]?\d+$/.test(raw)) throw new ConfigError(FLAG_NAMES.evictionMaxPodGracePeriod, raw, 'must be a whole number of seconds');
    set('evictionMaxPodGracePeriod', Number(raw));
  }
  if (flags.evictionPressureTransitionPeriod !== undefined) set('evictionPressureTransitionPeriod', flags.evictionPressureTransitionPeriod.trim());
  if (flags.enforceNodeAllocatable !== undefined)
    set(
      'enforceNodeAllocatable',
      flags.enforceNodeAllocatable
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    );
  if (flags.memoryBrake !== undefined) set('memoryBrake', flags.memoryBrake);
  if (flags.memoryBrakeMaxDuration !== undefined) set('memoryBrakeMaxDuration', flags.memoryBrakeMaxDuration.trim());
  // read only to validate enforceNodeAllocatable, as the kubelet does
  if (flags.systemReservedCgroup !== undefined) set('systemReservedCgroup', flags.systemReservedCgroup);
  if (flags.kubeReservedCgroup !== undefined) set('kubeReservedCgroup', flags.kubeReservedCgroup);
  if (flags.cgroupsPerQOS !== undefined) set('cgroupsPerQOS', flags.cgroupsPerQOS);
  for (const key of ['memoryHighEvictionThreshold', 'memoryMaxEvictionThreshold', 'memoryPSIEvictionThreshold'] as const) {
    const raw = flags[key]?.trim();
    if (raw === undefined) continue;
    // a Go float64 flag (strconv.ParseFloat): a plain decimal or exponent form
    if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw new ConfigError(FLAG_NAMES[key], raw, 'must be a number');
    set(key, Number(raw));
  }
  if (flags.memoryPressureEvictionGracePeriod !== undefined) set('memoryPressureEvictionGracePeriod', flags.memoryPressureEvictionGracePeriod.trim());
  // Gate by gate over the file's featureGates: a gate the flag leaves out keeps the file's value.
  if (flags.featureGates !== undefined)
    set('featureGates', { ...base.featureGates, ...parseFeatureGates(FLAG_NAMES.featureGates, flags.featureGates, warnings) });
  return cfg;
}
