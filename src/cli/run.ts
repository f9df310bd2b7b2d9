/**
 * `evictd run`: the node agent. Flags use the kubelet's names; a kubelet config file works as
 * is (`--config`), and flags given on the command line win over it, as in the kubelet.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import YAML from 'yaml';
import { Agent } from '../agent/agent';
import { CriRuntime } from '../agent/adapters/cri-runtime';
import { kernelNotifications } from '../agent/adapters/kernel-notifications';
import { bindsAllInterfaces, parseListenAddress, startMetricsServer } from '../agent/http-server';
import { AgentMetrics } from '../agent/metrics';
import type { EvictionReporter, PodSpecSource } from '../agent/ports';
import { cgroupDir, detectCgroups, type CgroupLayout } from '../node/cgroups';
import { NodeObserver } from '../node/observer';
import { setRealtimePriority } from '../kernel/scheduling';
import { ConfigError, compileConfig, configFromFlags, configFromKubeletConfiguration, type EvictionFlags, type PolicyConfig } from '../policy/config';
import { DurationError, formatDuration, parseDuration } from '../policy/duration';
import { badValue, UsageError } from '../errors';

/** pino's levels, all accepted (silent turns logging off). */
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * Kubelet map flags merge when repeated (cliflag map values keep adding keys), so a second
 * --eviction-hard adds to the first instead of replacing it.
 */
const MAP_FLAGS = new Set(['eviction-hard', 'eviction-soft', 'eviction-soft-grace-period', 'eviction-minimum-reclaim']);

interface FlagDef {
  name: string;
  arg?: string;
  bool?: boolean;
  help: string;
  def?: string;
}

const FLAGS: FlagDef[] = [
  { name: 'config', arg: 'FILE', help: 'kubelet configuration file (YAML or JSON KubeletConfiguration); its eviction fields are used' },
  { name: 'eviction-hard', arg: 'MAP', help: 'hard thresholds, e.g. "memory.available<100Mi,nodefs.available<10%"' },
  { name: 'eviction-soft', arg: 'MAP', help: 'soft thresholds, e.g. "memory.available<300Mi"' },
  { name: 'eviction-soft-grace-period', arg: 'MAP', help: 'grace periods of soft thresholds, e.g. "memory.available=1m30s"' },
  { name: 'eviction-max-pod-grace-period', arg: 'SECONDS', help: 'max pod termination grace period for soft evictions' },
  { name: 'eviction-minimum-reclaim', arg: 'MAP', help: 'minimum reclaim per signal, e.g. "memory.available=0Mi"' },
  { name: 'eviction-pressure-transition-period', arg: 'DURATION', help: 'how long a node condition stays after its threshold clears', def: '5m' },
  { name: 'enforce-node-allocatable', arg: 'LIST', help: 'enforce node allocatable levels (pods, system-reserved, kube-reserved)' },
  { name: 'container-runtime-endpoint', arg: 'ENDPOINT', help: 'CRI endpoint', def: 'unix:///run/containerd/containerd.sock' },
  { name: 'cgroup-root', arg: 'PATH', help: 'the node cgroup; with a memory limit, that limit is the node memory capacity', def: '/' },
  { name: 'pod-cgroup-root', arg: 'PATH', help: 'the pod cgroup root (kubepods) inside the hierarchy', def: '<cgroup-root>/kubepods' },
  { name: 'root-dir', arg: 'DIR', help: 'kubelet root dir: nodefs is the filesystem holding it', def: '/var/lib/kubelet (or / when absent)' },
  { name: 'housekeeping-interval', arg: 'DURATION', help: 'fallback pass interval when no notification arrives', def: '10s' },
  { name: 'volume-stats-agg-period', arg: 'DURATION', help: "how often the pods' emptyDir volumes under the root dir are measured (emptyDir sizeLimit evictions)", def: '1m' },
  { name: 'dry-run', bool: true, help: 'log decisions, act on nothing' },
  {
    name: 'memory-brake',
    bool: true,
    help: 'on a memory threshold met, hold the top-ranked pod with memory.high just above its usage until it is evicted or the signal recovers (cgroup v2 only; config field memoryBrake)',
    def: 'false',
  },
  { name: 'memory-brake-max-duration', arg: 'DURATION', help: 'a pod braked this long is stopped (config field memoryBrakeMaxDuration)', def: '2m' },
  { name: 'state-dir', arg: 'DIR', help: 'where evictd keeps the record of the brakes it set, to release them after a crash (tmpfs)', def: '/run/evictd' },
  { name: 'fast-kill', bool: true, help: 'for hard memory thresholds, kill the pod processes via its cgroup before StopPodSandbox', def: 'true' },
  { name: 'release-timeout', arg: 'DURATION', help: 'how long to wait for an evicted pod memory to come back', def: '5s' },
  { name: 'psi-trigger', arg: 'TRIGGER', help: 'PSI trigger on the pod cgroup root, "some|full <stall us> <window us>" or "none"', def: 'some 100000 2000000' },
  { name: 'notifications', arg: 'MODE', help: 'kernel (memory lines on the eBPF tripwire or v1 eventfd, the adaptive poller where missing), poll (memory lines on the adaptive poller, no BPF; PSI and cgroup event files still notify) or none (housekeeping only)', def: 'kernel' },
  { name: 'realtime-priority', arg: 'N', help: 'SCHED_FIFO priority (1-99) for the thread that receives kernel notifications, so a busy pod cannot delay it; 0 = normal scheduling (needs CAP_SYS_NICE)', def: '0' },
  { name: 'metrics-address', arg: 'HOST:PORT', help: 'Prometheus /metrics and /healthz', def: '127.0.0.1:9741' },
  { name: 'admission-address', arg: 'HOST:PORT', help: 'serve POST /admit (the admission decision under the current node conditions); off unless given' },
  { name: 'log-level', arg: 'LEVEL', help: `one of ${LOG_LEVELS.join(', ')}`, def: 'info' },
  { name: 'pod-source', arg: 'SOURCE', help: 'api, kubelet or runtime (runtime: sandboxes only)', def: 'api with --kubeconfig or in a cluster, else runtime' },
  { name: 'kubeconfig', arg: 'FILE', help: 'kubeconfig for the API server (default: in-cluster service account)' },
  { name: 'node-name', arg: 'NAME', help: 'this node name (default $NODE_NAME or the host name)' },
  { name: 'kubelet-url', arg: 'URL', help: 'kubelet endpoint for --pod-source=kubelet', def: 'https://127.0.0.1:10250' },
  { name: 'kubelet-insecure-tls', bool: true, help: "don't verify the kubelet serving certificate" },
  { name: 'help', bool: true, help: 'show this help' },
];

export function runUsage(): string {
  const lines = ['usage: evictd run [flags]', '', 'The eviction agent: kubelet eviction rules, woken by kernel notifications.', '', 'flags:'];
  for (const f of FLAGS) {
    const left = `  --${f.name}${f.arg ? ` ${f.arg}` : ''}`;
    lines.push(`${left.padEnd(44)} ${f.help}${f.def ? ` (default ${f.def})` : ''}`);
  }
  return lines.join('\n');
}

export type ParsedFlags = Record<string, string | boolean>;

/** --flag value, --flag=value, --bool, --bool=true|false; unknown flags are usage errors. */
export function parseFlags(argv: string[]): ParsedFlags {
  const out: ParsedFlags = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h') {
      out.help = true;
      continue;
    }
    const m = /^--?([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(a);
    if (!m) throw new UsageError(`run: unexpected argument ${JSON.stringify(a)} (flags start with --)`);
    const def = FLAGS.find((f) => f.name === m[1]);
    if (!def) throw new UsageError(`run: unknown flag --${m[1]} (see evictd run --help)`);
    if (def.bool) {
      const v = m[2];
      if (v === undefined || v === 'true') out[def.name] = true;
      else if (v === 'false') out[def.name] = false;
      else throw badValue(`--${def.name}`, v, 'must be true or false');
      continue;
    }
    let v = m[2];
    if (v === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`--${def.name}: needs a value (${def.arg})`);
      v = argv[++i]!;
    }
    const before = out[def.name];
    out[def.name] = MAP_FLAGS.has(def.name) && typeof before === 'string' ? `${before},${v}` : v;
  }
  return out;
}

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
  fastKill: boolean;
  psi: { kind: 'some' | 'full'; stallUs: number; windowUs: number } | null;
  /** kernel: the best line mechanism; poll: memory lines on the adaptive poller; none: housekeeping only */
  notifications: 'kernel' | 'poll' | 'none';
  metrics: { host: string; port: number };
  admission: { host: string; port: number } | null;
  logLevel: string;
  podSource: 'api' | 'kubelet' | 'runtime';
  realtimePriority: number;
  stateDir: string;
}

/** Turns flags into settings; every problem is a UsageError naming the flag and value. */
export function settingsFromFlags(f: ParsedFlags): RunSettings {
  const str = (k: string): string | undefined => (typeof f[k] === 'string' ? (f[k] as string) : undefined);
  let base = {};
  const configFile = str('config');
  if (configFile !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(configFile, 'utf8');
    } catch (err) {
      throw badValue('--config', configFile, (err as NodeJS.ErrnoException).code ?? String(err));
    }
    let doc: unknown;
    try {
      doc = YAML.parse(text);
    } catch (err) {
      throw badValue('--config', configFile, `not YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
    }
    // The kubelet refuses an empty config file ("was empty"), and a comment-only one has no kind.
    if (doc === null || doc === undefined) throw badValue('--config', configFile, 'is empty (no KubeletConfiguration in it)');
    try {
      base = configFromKubeletConfiguration(doc, `${configFile}: `);
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message);
      throw err;
    }
  }
  const flags: EvictionFlags = {};
  const map: [Exclude<keyof EvictionFlags, 'memoryBrake'>, string][] = [
    ['evictionHard', 'eviction-hard'],
    ['evictionSoft', 'eviction-soft'],
    ['evictionSoftGracePeriod', 'eviction-soft-grace-period'],
    ['evictionMaxPodGracePeriod', 'eviction-max-pod-grace-period'],
    ['evictionMinimumReclaim', 'eviction-minimum-reclaim'],
    ['evictionPressureTransitionPeriod', 'eviction-pressure-transition-period'],
    ['enforceNodeAllocatable', 'enforce-node-allocatable'],
    ['memoryBrakeMaxDuration', 'memory-brake-max-duration'],
  ];
  for (const [key, name] of map) {
    const v = str(name);
    if (v !== undefined) flags[key] = v;
  }
  if (typeof f['memory-brake'] === 'boolean') flags.memoryBrake = f['memory-brake'];
  let policy: PolicyConfig;
  try {
    policy = compileConfig(configFromFlags(flags, base));
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const cgroupRoot = normalizeCgroupPath('--cgroup-root', str('cgroup-root') ?? '/');
  const podCgroupRoot = normalizeCgroupPath('--pod-cgroup-root', str('pod-cgroup-root') ?? path.posix.join(cgroupRoot, 'kubepods'));
  const rootDir = str('root-dir');
  if (rootDir !== undefined && !fs.existsSync(rootDir)) throw badValue('--root-dir', rootDir, 'does not exist');
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
    }
  }
  const notifications = str('notifications') ?? 'kernel';
  if (notifications !== 'kernel' && notifications !== 'poll' && notifications !== 'none') throw badValue('--notifications', notifications, 'must be kernel, poll or none');
  const metricsText = str('metrics-address') ?? '127.0.0.1:9741';
  const metrics = parseListenAddress(metricsText);
  if (!metrics) throw badValue('--metrics-address', metricsText, 'expected HOST:PORT, e.g. 127.0.0.1:9741');
  const admissionText = str('admission-address');
  const admission = admissionText === undefined ? null : parseListenAddress(admissionText);
  if (admissionText !== undefined && !admission) throw badValue('--admission-address', admissionText, 'expected HOST:PORT, e.g. 127.0.0.1:9742');
  const rtText = str('realtime-priority') ?? '0';
  const realtimePriority = Number(rtText);
  if (!/^\d+$/.test(rtText) || realtimePriority > 99) throw badValue('--realtime-priority', rtText, 'must be a whole number from 0 to 99');
  const stateDir = str('state-dir') ?? '/run/evictd';
  if (!path.isAbsolute(stateDir)) throw badValue('--state-dir', stateDir, 'must be an absolute path');
  const logLevel = str('log-level') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw badValue('--log-level', logLevel, `must be one of ${LOG_LEVELS.join(', ')}`);
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
    fastKill: f['fast-kill'] !== false,
    psi,
    notifications,
    metrics,
    admission,
    logLevel,
    podSource: podSource as RunSettings['podSource'],
    realtimePriority,
    stateDir,
  };
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

export async function run(argv: string[]): Promise<number> {
  const flags = parseFlags(argv);
  if (flags.help) {
    process.stdout.write(runUsage() + '\n');
    return 0;
  }
  const s = settingsFromFlags(flags);
  const logger = pino({ level: s.logLevel, base: { component: 'evictd' } });
  // Settings the kubelet would ignore (a repeated flag key, a containerfs threshold): one line each.
  for (const w of s.policy.warnings) logger.warn(w);
  const layout = detectCgroups();
  checkMemoryBrake(s.policy, layout);
  const nodeDir = cgroupDir(layout.memoryMount, s.cgroupRoot);
  if (!fs.existsSync(nodeDir)) throw badValue('--cgroup-root', s.cgroupRoot, `no such memory cgroup (${nodeDir})`);

  if (s.realtimePriority > 0) {
    // Before anything is armed: every watcher callback and decision runs on this thread.
    try {
      setRealtimePriority(s.realtimePriority);
    } catch (err) {
      throw badValue('--realtime-priority', s.realtimePriority, `cannot set SCHED_FIFO: ${(err as Error).message}`);
    }
  }

  const metrics = new AgentMetrics({ processMetrics: true });
  const observer = new NodeObserver({ layout, cgroupRoot: s.cgroupRoot, podCgroupRoot: s.podCgroupRoot, nodefsPath: s.nodefsPath });
  const runtime = CriRuntime.connect(s.endpoint);
  let pods: PodSpecSource | undefined;
  let reporter: EvictionReporter | undefined;
  let closeKube = (): void => {};
  if (s.podSource !== 'runtime') {
    // Lazy: the Kubernetes parts load only when asked for.
    const { createKubeParts } = require('../kube/setup') as typeof import('../kube/setup');
    const kubeFlags: Parameters<typeof createKubeParts>[0] = { podSource: s.podSource, dryRun: s.dryRun, kubeletInsecureTLS: flags['kubelet-insecure-tls'] === true };
    for (const [k, flag] of [
      ['kubeconfig', 'kubeconfig'],
      ['nodeName', 'node-name'],
      ['kubeletUrl', 'kubelet-url'],
    ] as const) {
      if (typeof flags[flag] === 'string') kubeFlags[k] = flags[flag] as string;
    }
    const parts = createKubeParts(kubeFlags, logger);
    await parts.source.start();
    pods = parts.source;
    reporter = parts.reporter;
    const { registerKubeMetrics } = require('../kube/metrics') as typeof import('../kube/metrics');
    registerKubeMetrics(metrics.registry, { source: parts.source, ...(parts.reporter ? { reporter: parts.reporter } : {}) });
    closeKube = () => {
      parts.source.stop();
      parts.close();
    };
  }
  const agent = new Agent({
    policy: s.policy,
    layout,
    observer,
    runtime,
    notifications: s.notifications === 'none' ? null : kernelNotifications(logger, 100, s.notifications === 'poll' ? 'poll' : 'best'),
    pods,
    reporter,
    logger,
    metrics,
    dryRun: s.dryRun,
    fastKill: s.fastKill,
    housekeepingIntervalMs: s.housekeepingIntervalMs,
    releaseTimeoutMs: s.releaseTimeoutMs,
    psi: s.psi,
    volumes: { kubeletRootDir: s.nodefsPath, periodMs: s.volumeStatsAggPeriodMs },
    stateDir: s.stateDir,
  });
  const server = await startMetricsServer(s.metrics, metrics.registry, () => agent.health()).catch((err: NodeJS.ErrnoException) => {
    throw badValue('--metrics-address', `${s.metrics.host}:${s.metrics.port}`, err.code ?? err.message);
  });
  // Metrics and health say what the node is under and why pods went: on a node's network, keep
  // them on loopback (the default) unless a scraper must reach them.
  for (const [flag, addr] of [['--metrics-address', s.metrics], ['--admission-address', s.admission]] as const) {
    if (addr && bindsAllInterfaces(addr.host)) logger.warn({ flag, address: `${addr.host}:${addr.port}` }, `${flag} listens on every interface of the node, not only loopback`);
  }
  let closeAdmission = async (): Promise<void> => {};
  if (s.admission) {
    const { startAdmissionServer } = require('../kube/admission-server') as typeof import('../kube/admission-server');
    const { admit } = require('../policy/admission') as typeof import('../policy/admission');
    const a = await startAdmissionServer({ decide: admit, conditions: () => agent.conditions(), log: logger, host: s.admission.host, port: s.admission.port }).catch(
      (err: NodeJS.ErrnoException) => {
        throw badValue('--admission-address', `${s.admission!.host}:${s.admission!.port}`, err.code ?? err.message);
      },
    );
    logger.info({ address: `${a.host}:${a.port}` }, 'admission endpoint: POST /admit');
    closeAdmission = () => a.close();
  }
  logger.info(
    {
      cgroups: layout.mode,
      memoryMount: layout.memoryMount,
      cgroupRoot: s.cgroupRoot,
      podCgroupRoot: s.podCgroupRoot,
      endpoint: s.endpoint,
      metricsAddress: server.address,
      dryRun: s.dryRun,
      fastKill: s.fastKill,
      housekeepingIntervalMs: s.housekeepingIntervalMs,
      notifications: s.notifications,
      podSource: s.podSource,
      realtimePriority: s.realtimePriority,
      memoryBrake: s.policy.memoryBrake ? { maxDuration: formatDuration(s.policy.memoryBrake.maxDurationNs), marginBytes: s.policy.memoryBrake.marginBytes, stateDir: s.stateDir } : false,
      thresholds: s.policy.thresholds.map((t) => `${t.signal}<${t.value.text} (${t.kind})`),
    },
    'evictd starting',
  );
  agent.start();
  await new Promise<void>((resolve) => {
    const done = (signal: string) => {
      logger.info({ signal }, 'stopping');
      resolve();
    };
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
  await agent.stop();
  await server.close();
  await closeAdmission();
  closeKube();
  runtime.close();
  logger.info({ passes: agent.controller.stats.passes, notifications: agent.controller.stats.notifications }, 'stopped');
  return 0;
}
