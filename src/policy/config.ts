/**
 * Eviction configuration in the kubelet's own forms (flags and KubeletConfiguration fields),
 * validated with the kubelet's rules and compiled into thresholds.
 */
import { formatValue } from '../errors';
import { compileMemoryBrake, type MemoryBrakeConfig } from './brake-config';
import { ConfigError } from './config-error';
import { DurationError, parseDuration } from './duration';
import { Quantity, QuantityError } from './quantity';
import { isSignal } from './signals';
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
   * evictd's own fields (no kubelet has them; named as the kubelet would): on a memory threshold
   * met, hold the top-ranked pod with memory.high until it is evicted (see policy/brake.ts).
   */
  memoryBrake?: boolean;
  /** how long a pod may stay braked before it is stopped, e.g. "2m" */
  memoryBrakeMaxDuration?: string;
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
}

/** The kubelet's default hard thresholds on Linux (pkg/kubelet/eviction/defaults_linux.go). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};
export const DEFAULT_PRESSURE_TRANSITION_PERIOD = '5m';
const ENFORCE_OPTIONS = ['none', 'pods', 'system-reserved', 'kube-reserved', 'system-reserved-compressible', 'kube-reserved-compressible'];

export { ConfigError } from './config-error';
export { DEFAULT_MEMORY_BRAKE_MAX_DURATION, MEMORY_BRAKE_MARGIN_BYTES, type MemoryBrakeConfig } from './brake-config';

// ---------------------------------------------------------------------------------------------
// Reading the two input forms

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
};

/**
 * "__proto__" would not become a key of a plain object (the assignment changes its prototype
 * or does nothing), so it would vanish silently; the kubelet refuses it as an unknown signal.
 */
function refuseProtoKey(field: string, key: string, value: unknown): void {
  if (key === '__proto__') throw new ConfigError(field, value, `unsupported eviction signal ${key}`);
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
      warnings.push(`${flag}: ${key} is given more than once (${formatValue(out[key])}, then ${formatValue(value)}): kept the last, ${formatValue(value)}, as the kubelet does`);
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
  if (flags.evictionPressureTransitionPeriod !== undefined)
    set('evictionPressureTransitionPeriod', flags.evictionPressureTransitionPeriod.trim());
  if (flags.enforceNodeAllocatable !== undefined)
    set('enforceNodeAllocatable', flags.enforceNodeAllocatable.split(',').map((s) => s.trim()).filter((s) => s !== ''));
  if (flags.memoryBrake !== undefined) set('memoryBrake', flags.memoryBrake);
  if (flags.memoryBrakeMaxDuration !== undefined) set('memoryBrakeMaxDuration', flags.memoryBrakeMaxDuration.trim());
  return cfg;
}

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

const EVICTION_FIELDS = [
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
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(prefix.replace(/\.$/, '') || 'config', doc, 'must be a map of KubeletConfiguration fields');
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
    cfg.evictionMaxPodGracePeriod = v;
    name('evictionMaxPodGracePeriod');
  }
  if (d.evictionPressureTransitionPeriod !== undefined && d.evictionPressureTransitionPeriod !== null) {
    const v = d.evictionPressureTransitionPeriod;
    if (typeof v !== 'string') throw new ConfigError(`${prefix}evictionPressureTransitionPeriod`, v, 'must be a duration string such as "5m"');
    // `if obj.EvictionPressureTransitionPeriod == zeroDuration { ... 5m }`: "0s" in a file means 5m
    if (!isZeroDuration(v.trim())) {
      cfg.evictionPressureTransitionPeriod = v.trim();
      name('evictionPressureTransitionPeriod');
    }
  }
  if (d.enforceNodeAllocatable !== undefined && d.enforceNodeAllocatable !== null) {
    const v = d.enforceNodeAllocatable;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new ConfigError(`${prefix}enforceNodeAllocatable`, v, 'must be a list of strings');
    cfg.enforceNodeAllocatable = v as string[];
    name('enforceNodeAllocatable');
  }
  if (d.mergeDefaultEvictionSettings !== undefined && d.mergeDefaultEvictionSettings !== null) {
    const v = d.mergeDefaultEvictionSettings;
    if (typeof v !== 'boolean') throw new ConfigError(`${prefix}mergeDefaultEvictionSettings`, v, 'must be true or false');
    cfg.mergeDefaultEvictionSettings = v;
    name('mergeDefaultEvictionSettings');
  }
  if (d.memoryBrake !== undefined && d.memoryBrake !== null) {
    const v = d.memoryBrake;
    if (typeof v !== 'boolean') throw new ConfigError(`${prefix}memoryBrake`, v, 'must be true or false');
    cfg.memoryBrake = v;
    name('memoryBrake');
  }
  if (d.memoryBrakeMaxDuration !== undefined && d.memoryBrakeMaxDuration !== null) {
    const v = d.memoryBrakeMaxDuration;
    if (typeof v !== 'string') throw new ConfigError(`${prefix}memoryBrakeMaxDuration`, v, 'must be a duration string such as "2m"');
    cfg.memoryBrakeMaxDuration = v.trim();
    name('memoryBrakeMaxDuration');
  }
  return cfg;
}

// ---------------------------------------------------------------------------------------------
// Validation and compilation, with the kubelet's rules (pkg/kubelet/eviction ParseThresholdConfig)

/** The kubelet's parsePercentage: ParseFloat(..., 32) then float32(value) / 100. */
function parsePercentage(field: string, text: string): number {
  const body = text.replace(/%+$/, '');
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(body)) throw new ConfigError(field, text, 'invalid percentage');
  return Math.fround(Math.fround(Number(body)) / 100);
}

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
      warnings.push(`${entry('evictionMinimumReclaim', signal)}: ${formatValue(mr.text)}: ignored: containerfs minimum reclaim is ${derivedFrom}, as the kubelet does`);
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

  // With pods' allocatable enforced, every hard memory.available threshold also guards the pods
  // cgroup (kubelet's addAllocatableThresholds). "Hard" there means a zero grace period.
  if (enforce.includes('pods')) {
    for (const t of [...kept]) {
      if (t.signal === 'memory.available' && t.gracePeriodNs === 0) kept.push({ ...t, signal: 'allocatableMemory.available' });
    }
  }

  const out: PolicyConfig = { thresholds: kept, maxPodGracePeriodSeconds: maxPodGrace, pressureTransitionPeriodNs: transitionNs, enforceNodeAllocatable: enforce, warnings };
  const brake = compileMemoryBrake(
    { on: cfg.memoryBrake, maxDuration: cfg.memoryBrakeMaxDuration, field: fieldOf('memoryBrake'), maxDurationField: fieldOf('memoryBrakeMaxDuration') },
    kept,
    maxPodGrace,
    warnings,
  );
  if (brake) out.memoryBrake = brake;
  return out;
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
