/**
 * The eviction fields of a KubeletConfiguration (YAML or JSON, already parsed) read into an
 * EvictionConfig, with the kubelet's defaulting of zero values.
 */
import { ConfigError } from './config-error';
import { parseDuration } from './duration';
import { refuseProtoKey, type ConfigKey, type EvictionConfig } from './eviction-config';

function stringMap(field: string, v: unknown): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(field, v, 'must be a map of signal to value');
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    refuseProtoKey(`${field}[${JSON.stringify(k)}]`, k, x);
    // map[string]string in the kubelet: its decoder refuses a bare number (write "100Mi", quoted)
    if (typeof x === 'string') out[k] = x.trim();
    else throw new ConfigError(`${field}[${JSON.stringify(k)}]`, x, 'must be a string (quote it: "100Mi", "10%", "1m30s")');
  }
  return out;
}

/**
 * The kubelet decodes its file into v1beta1 types (kubeletconfig/util/codec
 * DecodeKubeletConfiguration: apimachinery's JSON serializer, YAML turned into JSON first). A
 * null leaves a map, a list, a pointer (*bool) or an int32 or string field unset, so the field is
 * absent and defaulting applies. A metav1.Duration is different: encoding/json calls its
 * UnmarshalJSON with null too, and that parses the empty string: the decode fails with
 * `time: invalid duration ""` and the kubelet does not start.
 */
function duration(field: string, v: unknown, example: string): string | undefined {
  if (v === undefined) return undefined;
  if (v === null)
    throw new ConfigError(
      field,
      v,
      'time: invalid duration "" (the kubelet\'s decoder hands null to metav1.Duration, which refuses it; leave the field out for its default)',
    );
  if (typeof v !== 'string') throw new ConfigError(field, v, `must be a duration string such as "${example}"`);
  return v.trim();
}

/** A string field (null is ""); anything else is a decoding error in the kubelet. */
function text(field: string, v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new ConfigError(field, v, 'must be a string');
  return v;
}

/** A *bool field (null is unset). */
function bool(field: string, v: unknown): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new ConfigError(field, v, 'must be true or false');
  return v;
}

/**
 * featureGates, a map[string]bool: every value a bool (the decoder refuses anything else). The
 * kubelet also refuses a gate its release does not know; evictd cannot know every release's list,
 * so it keeps the map and reads the gates its rules depend on (eviction-config.ts FEATURE_GATES).
 */
function featureGates(field: string, v: unknown): Record<string, boolean> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(field, v, 'must be a map of feature gate to true or false');
  const out: Record<string, boolean> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    refuseProtoKey(`${field}[${JSON.stringify(k)}]`, k, x);
    if (typeof x !== 'boolean') throw new ConfigError(`${field}.${k}`, x, 'must be true or false');
    out[k] = x;
  }
  return out;
}

export const EVICTION_FIELDS = [
  'evictionHard',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionMaxPodGracePeriod',
  'evictionMinimumReclaim',
  'evictionPressureTransitionPeriod',
  'enforceNodeAllocatable',
  'mergeDefaultEvictionSettings',
  'memoryBrake',
  'memoryBrakeMaxDuration',
  'memoryHighEvictionThreshold',
  'memoryMaxEvictionThreshold',
  'memoryPSIEvictionThreshold',
  'memoryPressureEvictionGracePeriod',
] as const;

/** A key that looks meant for one of the fields evictd reads (a typo would fall back to defaults). */
function looksLikeEvictionField(key: string): boolean {
  const k = key.toLowerCase();
  return k.includes('evict') || k.includes('enforcenode') || k.includes('mergedefault') || k.includes('brake');
}

/** A Go duration string that is zero ("0s", "0", "0m0s"): the kubelet's defaulting treats it as unset. */
function isZeroDuration(text: string): boolean {
  try {
    return parseDuration(text) === 0;
  } catch {
    return false; // not a duration at all: compileConfig refuses it with the field's name
  }
}

/**
 * Reads the eviction fields of a parsed KubeletConfiguration (YAML or JSON). `prefix` is put in
 * front of field names in errors (e.g. "config.").
 */
export function configFromKubeletConfiguration(doc: unknown, prefix = ''): EvictionConfig {
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(prefix.replace(/\.$/, '') || 'config', doc, 'must be a map of KubeletConfiguration fields');
  const d = doc as Record<string, unknown>;
  if (d.kind !== undefined && d.kind !== 'KubeletConfiguration') throw new ConfigError(`${prefix}kind`, d.kind, 'expected KubeletConfiguration');
  // A KubeletConfiguration has many other fields, but a misspelt eviction field would silently
  // fall back to defaults: refuse those.
  for (const key of Object.keys(d)) {
    if (looksLikeEvictionField(key) && !(EVICTION_FIELDS as readonly string[]).includes(key))
      throw new ConfigError(`${prefix}${key}`, d[key], `unknown eviction field (known: ${EVICTION_FIELDS.join(', ')})`);
  }
  const cfg: EvictionConfig = { origins: {} };
  const origins = cfg.origins!;
  const name = (k: ConfigKey) => (origins[k] = `${prefix}${k}`);
  for (const key of ['evictionHard', 'evictionSoft', 'evictionSoftGracePeriod', 'evictionMinimumReclaim'] as const) {
    const m = stringMap(`${prefix}${key}`, d[key]);
    if (m !== undefined) {
      cfg[key] = m;
      name(key);
    }
  }
  // Defaulting follows SetDefaults_KubeletConfiguration field by field: a field the file leaves
  // at its zero value is unset. evictionMaxPodGracePeriod 0 is "not specified" either way.
  if (d.evictionMaxPodGracePeriod !== undefined && d.evictionMaxPodGracePeriod !== null) {
    const v = d.evictionMaxPodGracePeriod;
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new ConfigError(`${prefix}evictionMaxPodGracePeriod`, v, 'must be a whole number of seconds');
    // an int32: json refuses a number past its range ("cannot unmarshal number ... of type int32")
    if (v < -(2 ** 31) || v > 2 ** 31 - 1)
      throw new ConfigError(`${prefix}evictionMaxPodGracePeriod`, v, 'out of the int32 range the kubelet decodes it into (at most 2147483647)');
    cfg.evictionMaxPodGracePeriod = v;
    name('evictionMaxPodGracePeriod');
  }
  const transition = duration(`${prefix}evictionPressureTransitionPeriod`, d.evictionPressureTransitionPeriod, '5m');
  // `if obj.EvictionPressureTransitionPeriod == zeroDuration { ... 5m }`: "0s" in a file means 5m
  if (transition !== undefined && !isZeroDuration(transition)) {
    cfg.evictionPressureTransitionPeriod = transition;
    name('evictionPressureTransitionPeriod');
  }
  if (d.enforceNodeAllocatable !== undefined && d.enforceNodeAllocatable !== null) {
    const v = d.enforceNodeAllocatable;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new ConfigError(`${prefix}enforceNodeAllocatable`, v, 'must be a list of strings');
    cfg.enforceNodeAllocatable = v as string[];
    name('enforceNodeAllocatable');
  }
  const bools = ['mergeDefaultEvictionSettings', 'memoryBrake', 'cgroupsPerQOS'] as const;
  for (const key of bools) {
    const v = bool(`${prefix}${key}`, d[key]);
    if (v !== undefined) {
      cfg[key] = v;
      name(key);
    }
  }
  // KEP-5986's float64 thresholds (a JSON number; compileConfig checks the range) and its duration
  for (const key of ['memoryHighEvictionThreshold', 'memoryMaxEvictionThreshold', 'memoryPSIEvictionThreshold'] as const) {
    const v = d[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number') throw new ConfigError(`${prefix}${key}`, v, 'must be a number (events per second, or a percentage for PSI)');
    cfg[key] = v;
    name(key);
  }
  const pressureGrace = duration(`${prefix}memoryPressureEvictionGracePeriod`, d.memoryPressureEvictionGracePeriod, '30s');
  if (pressureGrace !== undefined) {
    cfg.memoryPressureEvictionGracePeriod = pressureGrace;
    name('memoryPressureEvictionGracePeriod');
  }
  const gates = featureGates(`${prefix}featureGates`, d.featureGates);
  if (gates !== undefined) {
    cfg.featureGates = gates;
    name('featureGates');
  }
  for (const key of ['systemReservedCgroup', 'kubeReservedCgroup'] as const) {
    const v = text(`${prefix}${key}`, d[key]);
    if (v !== undefined) {
      cfg[key] = v;
      name(key);
    }
  }
  // evictd's own duration decodes as the kubelet's do (a metav1.Duration, named as the kubelet would)
  const brakeMax = duration(`${prefix}memoryBrakeMaxDuration`, d.memoryBrakeMaxDuration, '2m');
  if (brakeMax !== undefined) {
    cfg.memoryBrakeMaxDuration = brakeMax;
    name('memoryBrakeMaxDuration');
  }
  return cfg;
}
