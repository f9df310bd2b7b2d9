/**
 * `evictd run`'s settings from its parsed flags: the kubelet config file (`--config`) under the
 * eviction flags (flags win, as in the kubelet), compiled into the policy, and every other flag
 * checked. Every problem is a UsageError naming the flag and value.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseListenAddress } from '../agent/http-server';
import { readKubeletConfigText } from '../kube/kube-yaml';
import type { CgroupLayout } from '../node/cgroups';
import {
  ConfigError,
  compileConfig,
  configFromFlags,
  configFromKubeletConfiguration,
  type EvictionConfig,
  type EvictionFlags,
  type PolicyConfig,
} from '../policy/config';
import { DurationError, formatDuration, parseDuration } from '../policy/duration';
import { badValue, fileProblem, UsageError, yamlProblem } from '../errors';
import { Quantity, QuantityError } from '../policy/quantity';
import { LOG_LEVELS, type ParsedFlags } from './run-flags';

/** The longest delay a Node timer takes (2^31-1 ms); longer ones fire at once, with a warning. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A duration that feeds a timer: positive, and at most MAX_TIMER_MS (refused beyond, never wrapped). */
function durationMs(flag: string, text: string): number {
  let ns: number;
  try {
    ns = parseDuration(text);
  } catch (err) {
    if (err instanceof DurationError) throw badValue(flag, text, err.message);
    throw err;
  }
  if (ns <= 0) throw badValue(flag, text, 'must be positive');
  const ms = Math.max(1, Math.round(ns / 1e6));
  if (ms > MAX_TIMER_MS) throw badValue(flag, text, `must be at most ${formatDuration(MAX_TIMER_MS * 1e6)} (the longest timer)`);
  return ms;
}

function normalizeCgroupPath(flag: string, p: string): string {
  if (!p.startsWith('/')) throw badValue(flag, p, 'must be an absolute cgroup path such as /kubepods');
  if (p.split('/').includes('..')) throw badValue(flag, p, 'must not contain ".."');
  return '/' + p.replace(/^\/+|\/+$/g, '');
}

/** Where /admit listens (kube/admission-server.ts AdmissionListen, with the TLS files still to read). */
export type AdmissionAddress = { path: string } | { host: string; port: number; tls: { certFile: string; keyFile: string; clientCaFile: string } | null };

const TLS_FLAGS = { cert: 'admission-tls-cert-file', key: 'admission-tls-private-key-file', clientCa: 'admission-client-ca-file' } as const;

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * --admission-address and its TLS files. /admit's answers let pods onto the node, so nothing
 * beyond the node's own processes may ask without a client certificate: a unix socket or a
 * loopback address as they are, any other address only with all three TLS files.
 */
function admissionAddress(
  text: string | undefined,
  tls: { cert?: string | undefined; key?: string | undefined; clientCa?: string | undefined },
): AdmissionAddress | null {
  const given = (Object.keys(TLS_FLAGS) as (keyof typeof TLS_FLAGS)[]).filter((k) => tls[k] !== undefined);
  if (text === undefined) {
    if (given.length) throw badValue(`--${TLS_FLAGS[given[0]!]}`, tls[given[0]!]!, 'needs --admission-address');
    return null;
  }
  if (text.startsWith('unix:')) {
    const file = text.slice('unix:'.length);
    if (!path.isAbsolute(file)) throw badValue('--admission-address', text, 'a unix socket takes an absolute path, e.g. unix:/run/evictd/admit.sock');
    if (given.length) throw badValue(`--${TLS_FLAGS[given[0]!]}`, tls[given[0]!]!, 'a unix socket takes no TLS (its mode says who may connect)');
    return { path: file };
  }
  const addr = parseListenAddress(text);
  if (!addr) throw badValue('--admission-address', text, 'expected HOST:PORT or unix:PATH, e.g. 127.0.0.1:9742');
  const missing = (Object.keys(TLS_FLAGS) as (keyof typeof TLS_FLAGS)[]).filter((k) => tls[k] === undefined);
  if (given.length && missing.length) throw badValue('--admission-address', text, `TLS needs --${TLS_FLAGS[missing[0]!]} too`);
  if (!given.length) {
    if (!isLoopback(addr.host))
      throw badValue(
        '--admission-address',
        text,
        `beyond loopback /admit needs TLS with client certificates: --${TLS_FLAGS.cert}, --${TLS_FLAGS.key} and --${TLS_FLAGS.clientCa} (or listen on 127.0.0.1:PORT or unix:PATH)`,
      );
    return { ...addr, tls: null };
  }
  return { ...addr, tls: { certFile: tls.cert!, keyFile: tls.key!, clientCaFile: tls.clientCa! } };
}

export interface RunSettings {
  policy: PolicyConfig;
  endpoint: string;
  cgroupRoot: string;
  podCgroupRoot: string;
  nodefsPath: string;
  volumeStatsAggPeriodMs: number;
  housekeepingIntervalMs: number;
  releaseTimeoutMs: number;
  dryRun: boolean;
  trustSandboxAnnotations: boolean;
  fastKill: boolean;
  /** standing orders on the hard memory lines */
  standingOrders: boolean;
  psi: { kind: 'some' | 'full'; stallUs: number; windowUs: number } | null;
  /** kernel: the best line mechanism; poll: memory lines on the adaptive poller; none: housekeeping only */
  notifications: 'kernel' | 'poll' | 'none';
  metrics: { host: string; port: number };
  /** --admission-address: off (null), a unix socket, or TCP (TLS with client certificates beyond loopback) */
  admission: AdmissionAddress | null;
  logLevel: string;
  podSource: 'api' | 'kubelet' | 'runtime';
  realtimePriority: number;
  /** lock the agent's code in RAM (kernel/memory-lock.ts: mlock2 on its mapped files) */
  lockMemory: boolean;
  /** process_mrelease on a killed pod's tasks (src/kernel/reap.ts) */
  reapKilled: boolean;
  stateDir: string;
  /** the eviction fields in force (file under flags), as a recording keeps them */
  eviction: EvictionConfig;
  /** --record: where each pass's line goes, and the size past which the file starts again */
  record: { path: string; maxBytes: number } | null;
}

/** The eviction fields of a kubelet config file (YAML or JSON KubeletConfiguration). */
/** The KubeletConfiguration versions the kubelet decodes (kubelet.config.k8s.io). */
const KUBELET_CONFIG_VERSIONS = ['kubelet.config.k8s.io/v1beta1', 'kubelet.config.k8s.io/v1'];

export function configFromFile(configFile: string): EvictionConfig {
  let text: string;
  try {
    text = fs.readFileSync(configFile, 'utf8');
  } catch (err) {
    throw badValue('--config', configFile, fileProblem(err));
  }
  let doc: unknown;
  try {
    // as the kubelet reads it: YAML 1.1 through sigs.k8s.io/yaml (`yes` is true, `0777` octal), JSON if it starts with {
    doc = readKubeletConfigText(text);
  } catch (err) {
    throw badValue('--config', configFile, `not YAML or JSON: ${yamlProblem(err, text)}`);
  }
  // The kubelet refuses an empty config file ("was empty"), and a comment-only one has no kind.
  if (doc === null || doc === undefined) throw badValue('--config', configFile, 'is empty (no KubeletConfiguration in it)');
  // As the kubelet decodes it: a file of another kind, group or version is not its configuration.
  if (typeof doc === 'object' && !Array.isArray(doc)) {
    const d = doc as Record<string, unknown>;
    if (d.kind !== 'KubeletConfiguration') throw new UsageError(`${configFile}: kind: ${JSON.stringify(d.kind ?? null)}: expected KubeletConfiguration`);
    if (!KUBELET_CONFIG_VERSIONS.includes(String(d.apiVersion)))
      throw new UsageError(`${configFile}: apiVersion: ${JSON.stringify(d.apiVersion ?? null)}: expected one of ${KUBELET_CONFIG_VERSIONS.join(', ')}`);
  }
  try {
    return configFromKubeletConfiguration(doc, `${configFile}: `);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/** Turns flags into settings; every problem is a UsageError naming the flag and value. */
/** The flags that set thresholds and their periods (evictd simulate's what-if takes these too), with their config fields. */
export const THRESHOLD_FLAGS: readonly [Exclude<keyof EvictionFlags, 'memoryBrake' | 'cgroupsPerQOS'>, string][] = [
  ['evictionHard', 'eviction-hard'],
  ['evictionSoft', 'eviction-soft'],
  ['evictionSoftGracePeriod', 'eviction-soft-grace-period'],
  ['evictionMaxPodGracePeriod', 'eviction-max-pod-grace-period'],
  ['evictionMinimumReclaim', 'eviction-minimum-reclaim'],
  ['evictionPressureTransitionPeriod', 'eviction-pressure-transition-period'],
  ['enforceNodeAllocatable', 'enforce-node-allocatable'],
];

const OTHER_STRING_FLAGS: readonly [Exclude<keyof EvictionFlags, 'memoryBrake' | 'cgroupsPerQOS'>, string][] = [
  ['memoryBrakeMaxDuration', 'memory-brake-max-duration'],
  ['systemReservedCgroup', 'system-reserved-cgroup'],
  ['kubeReservedCgroup', 'kube-reserved-cgroup'],
  ['featureGates', 'feature-gates'],
  ['memoryHighEvictionThreshold', 'memory-high-eviction-threshold'],
  ['memoryMaxEvictionThreshold', 'memory-max-eviction-threshold'],
  ['memoryPSIEvictionThreshold', 'memory-psi-eviction-threshold'],
  ['memoryPressureEvictionGracePeriod', 'memory-pressure-eviction-grace-period'],
];

export function settingsFromFlags(f: ParsedFlags): RunSettings {
  const str = (k: string): string | undefined => (typeof f[k] === 'string' ? (f[k] as string) : undefined);
  const configFile = str('config');
  const base = configFile === undefined ? {} : configFromFile(configFile);
  const flags: EvictionFlags = {};
  for (const [key, name] of [...THRESHOLD_FLAGS, ...OTHER_STRING_FLAGS]) {
    const v = str(name);
    if (v !== undefined) flags[key] = v;
  }
  if (typeof f['memory-brake'] === 'boolean') flags.memoryBrake = f['memory-brake'];
  if (typeof f['cgroups-per-qos'] === 'boolean') flags.cgroupsPerQOS = f['cgroups-per-qos'];
  let policy: PolicyConfig;
  let eviction: EvictionConfig;
  try {
    eviction = configFromFlags(flags, base);
    policy = compileConfig(eviction);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const cgroupRoot = normalizeCgroupPath('--cgroup-root', str('cgroup-root') ?? '/');
  const podCgroupRoot = normalizeCgroupPath('--pod-cgroup-root', str('pod-cgroup-root') ?? path.posix.join(cgroupRoot, 'kubepods'));
  const rootDir = str('root-dir');
  if (rootDir !== undefined && !fs.existsSync(rootDir)) throw badValue('--root-dir', rootDir, 'does not exist');
  if (rootDir !== undefined && !fs.statSync(rootDir).isDirectory()) throw badValue('--root-dir', rootDir, 'is not a directory');
  const nodefsPath = rootDir ?? (fs.existsSync('/var/lib/kubelet') ? '/var/lib/kubelet' : '/');
  const endpoint = str('container-runtime-endpoint') ?? 'unix:///run/containerd/containerd.sock';
  if (!/^unix:\/\/\/.+/.test(endpoint) && !endpoint.startsWith('/')) throw badValue('--container-runtime-endpoint', endpoint, 'must be unix:///path/to/socket');
  let psi: RunSettings['psi'] = { kind: 'some', stallUs: 100_000, windowUs: 2_000_000 };
  const psiText = str('psi-trigger');
  if (psiText !== undefined) {
    if (psiText === 'none') psi = null;
    else {
      const m = /^(some|full) (\d+) (\d+)$/.exec(psiText.trim());
      if (!m) throw badValue('--psi-trigger', psiText, 'expected "some|full <stall us> <window us>" or "none"');
      psi = { kind: m[1] as 'some' | 'full', stallUs: Number(m[2]), windowUs: Number(m[3]) };
      if (psi.stallUs <= 0 || psi.stallUs > psi.windowUs) throw badValue('--psi-trigger', psiText, 'stall must be positive and at most the window');
      // The kernel's bounds for a PSI trigger's window (kernel/sched/psi.c: 500 ms to 10 s).
      if (psi.windowUs < 500_000 || psi.windowUs > 10_000_000)
        throw badValue('--psi-trigger', psiText, 'the window must be from 500000 to 10000000 us (the kernel refuses others)');
    }
  }
  const notifications = str('notifications') ?? 'kernel';
  if (notifications !== 'kernel' && notifications !== 'poll' && notifications !== 'none')
    throw badValue('--notifications', notifications, 'must be kernel, poll or none');
  const metricsText = str('metrics-address') ?? '127.0.0.1:9741';
  const metrics = parseListenAddress(metricsText);
  if (!metrics) throw badValue('--metrics-address', metricsText, 'expected HOST:PORT, e.g. 127.0.0.1:9741');
  const admission = admissionAddress(str('admission-address'), {
    cert: str('admission-tls-cert-file'),
    key: str('admission-tls-private-key-file'),
    clientCa: str('admission-client-ca-file'),
  });
  const rtText = str('realtime-priority') ?? '0';
  const realtimePriority = Number(rtText);
  if (!/^\d+$/.test(rtText) || realtimePriority > 99) throw badValue('--realtime-priority', rtText, 'must be a whole number from 0 to 99');
  const stateDir = str('state-dir') ?? '/run/evictd';
  if (!path.isAbsolute(stateDir)) throw badValue('--state-dir', stateDir, 'must be an absolute path');
  const logLevel = str('log-level') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw badValue('--log-level', logLevel, `must be one of ${LOG_LEVELS.join(', ')}`);
  // A standing order kills through the pod's cgroup, as a fast kill does: turning those off
  // turns orders off, and asking for both at once is a contradiction.
  const fastKill = f['fast-kill'] !== false;
  if (f['standing-orders'] === true && !fastKill)
    throw badValue('--standing-orders', true, 'needs --fast-kill: an order kills the pod through its cgroup, which --fast-kill=false turns off');
  const inCluster = Boolean(process.env.KUBERNETES_SERVICE_HOST) || str('kubeconfig') !== undefined;
  const podSource = str('pod-source') ?? (inCluster ? 'api' : 'runtime');
  if (!['api', 'kubelet', 'runtime'].includes(podSource)) throw badValue('--pod-source', podSource, 'must be api, kubelet or runtime');
  return {
    policy,
    endpoint,
    cgroupRoot,
    podCgroupRoot,
    nodefsPath,
    housekeepingIntervalMs: durationMs('--housekeeping-interval', str('housekeeping-interval') ?? '10s'),
    volumeStatsAggPeriodMs: durationMs('--volume-stats-agg-period', str('volume-stats-agg-period') ?? '1m'),
    releaseTimeoutMs: durationMs('--release-timeout', str('release-timeout') ?? '5s'),
    dryRun: f['dry-run'] === true,
    trustSandboxAnnotations: f['trust-sandbox-annotations'] === true,
    fastKill,
    standingOrders: f['standing-orders'] !== false && fastKill,
    psi,
    notifications,
    metrics,
    admission,
    logLevel,
    podSource: podSource as RunSettings['podSource'],
    realtimePriority,
    lockMemory: f['lock-memory'] !== false,
    reapKilled: f['reap-killed'] !== false,
    stateDir,
    eviction,
    record: recordSettings(str('record'), str('record-max-size')),
  };
}

/** --record and its size bound; whether FILE can be written is seen when it is opened, at start. */
function recordSettings(file: string | undefined, maxText: string | undefined): RunSettings['record'] {
  if (maxText !== undefined && file === undefined) throw badValue('--record-max-size', maxText, 'needs --record FILE');
  if (file === undefined) return null;
  if (file === '') throw badValue('--record', file, 'must be a file path');
  let maxBytes: number;
  try {
    maxBytes = Quantity.parse(maxText ?? '64Mi').value();
  } catch (err) {
    if (err instanceof QuantityError) throw badValue('--record-max-size', maxText, err.message);
    throw err;
  }
  // Below a few lines' worth the file would start again at every pass.
  if (maxBytes < 64 * 1024) throw badValue('--record-max-size', maxText, 'must be at least 64Ki');
  return { path: file, maxBytes };
}

/** KEP-5986 reads memory.events and memory.pressure and relaxes memory.high: cgroup v2 only. */
export function checkMemoryPressure(policy: PolicyConfig, layout: CgroupLayout, field = '--feature-gates'): void {
  if (!policy.memoryPressure || layout.memoryVersion === 2) return;
  throw badValue(
    field,
    'MemoryHighEviction=true',
    `per-container memory pressure eviction (KEP-5986) needs cgroup v2 (memory.events, memory.high); this node's memory controller is on cgroup v1 (${layout.mode} cgroups at ${layout.memoryMount})`,
  );
}

/**
 * The memory brake is memory.high, which only cgroup v2 has: with the memory controller on v1
 * (a v1 or hybrid node), the brake is refused at start rather than silently doing nothing.
 */
export function checkMemoryBrake(policy: PolicyConfig, layout: CgroupLayout): void {
  if (!policy.memoryBrake || layout.memoryVersion === 2) return;
  throw badValue(
    policy.memoryBrake.field,
    true,
    `needs cgroup v2 (memory.high on the pod cgroup); this node's memory controller is on cgroup v1 (${layout.mode} cgroups at ${layout.memoryMount})`,
  );
}
