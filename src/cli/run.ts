/**
 * `evictd run`: the node agent. Flags use the kubelet's names; a kubelet config file works as
 * is (`--config`), and flags given on the command line win over it, as in the kubelet. This file
 * wires the parts together and runs them until SIGINT or SIGTERM; the flags are read in
 * run-flags.ts and turned into settings in run-settings.ts.
 */
import fs from 'node:fs';
import { createSecureContext } from 'node:tls';
import pino, { type Logger } from 'pino';
import { Agent } from '../agent/agent';
import { systemClock } from '../agent/clock';
import { HugepageGate } from '../agent/hugepage-gate';
import { Recorder } from '../agent/recorder';
import { stateDirProblem } from '../agent/effects/brake-record';
import { CriRuntime } from '../agent/adapters/cri-runtime';
import { kernelNotifications } from '../agent/adapters/kernel-notifications';
import { bindsAllInterfaces, startMetricsServer } from '../agent/http-server';
import { AgentMetrics } from '../agent/metrics';
import type { EvictionReporter, PodSpecSource } from '../agent/ports';
import { cgroupDir, detectCgroups } from '../node/cgroups';
import { readHugePagesBytes } from '../node/hugepages';
import { NodeObserver } from '../node/observer';
import { setKillThreadPriority } from '../kernel/scheduling';
import { reapCounts, setReapAfterKill } from '../kernel/reap';
import { orderCounts } from '../kernel/order-event';
import { sdNotify, watchdogIntervalMs } from '../kernel/sd-notify';
import { nativeAvailable, nativeLoadError } from '../kernel/addon';
import { formatDuration } from '../policy/duration';
import { badValue, fileProblem } from '../errors';
import { parseFlags, runUsage, type ParsedFlags } from './run-flags';
import { lockCodeAtStart, shedCodeOnceStarted } from './code-pages';
import { checkMemoryBrake, checkMemoryPressure, settingsFromFlags, type AdmissionAddress } from './run-settings';
import type { AdmissionListen } from '../kube/admission-server';

export { parseFlags, runUsage, type ParsedFlags } from './run-flags';
export { checkMemoryBrake, settingsFromFlags, type RunSettings } from './run-settings';

/**
 * The pod source and the eviction reporter (--pod-source api or kubelet), started, with their
 * metrics registered. Lazy: the Kubernetes parts load only when asked for.
 */
async function startKube(
  podSource: 'api' | 'kubelet',
  dryRun: boolean,
  flags: ParsedFlags,
  metrics: AgentMetrics,
  logger: pino.Logger,
): Promise<{ source: PodSpecSource; reporter?: EvictionReporter; kubeletVersion(): Promise<string>; close(): void }> {
  const { createKubeParts } = require('../kube/setup') as typeof import('../kube/setup');
  const kubeFlags: Parameters<typeof createKubeParts>[0] = { podSource, dryRun, kubeletInsecureTLS: flags['kubelet-insecure-tls'] === true };
  for (const [k, flag] of [
    ['kubeconfig', 'kubeconfig'],
    ['nodeName', 'node-name'],
    ['kubeletUrl', 'kubelet-url'],
  ] as const) {
    if (typeof flags[flag] === 'string') kubeFlags[k] = flags[flag] as string;
  }
  const parts = createKubeParts(kubeFlags, logger);
  await parts.source.start();
  const { registerKubeMetrics } = require('../kube/metrics') as typeof import('../kube/metrics');
  const { readKubeletVersion } = require('../kube/kubelet-version') as typeof import('../kube/kubelet-version');
  registerKubeMetrics(metrics.registry, { source: parts.source, ...(parts.reporter ? { reporter: parts.reporter } : {}) });
  return {
    source: parts.source,
    ...(parts.reporter ? { reporter: parts.reporter } : {}),
    kubeletVersion: () => readKubeletVersion(parts.client, parts.nodeName),
    close() {
      parts.source.stop();
      parts.close();
    },
  };
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
  // Opened first: a path that cannot be written is refused before anything starts.
  const recorder = s.record
    ? new Recorder({
        path: s.record.path,
        maxBytes: s.record.maxBytes,
        eviction: s.eviction,
        policy: s.policy,
        standingOrders: s.standingOrders,
        logger,
        startNs: Number(systemClock.now()),
      })
    : null;
  const layout = detectCgroups();
  checkMemoryBrake(s.policy, layout);
  checkMemoryPressure(s.policy, layout);
  const nodeDir = cgroupDir(layout.memoryMount, s.cgroupRoot);
  if (!fs.existsSync(nodeDir)) throw badValue('--cgroup-root', s.cgroupRoot, `no such memory cgroup (${nodeDir})`);
  const stateDirIssue = stateDirProblem(s.stateDir);
  if (stateDirIssue !== null) throw badValue('--state-dir', s.stateDir, stateDirIssue);
  // Not refused: the kubelet creates it at its own start, which may come after evictd's. Said,
  // because until it exists no pod is seen and none can be evicted.
  const podRootDir = cgroupDir(layout.memoryMount, s.podCgroupRoot);
  if (!fs.existsSync(podRootDir))
    logger.warn(
      { podCgroupRoot: s.podCgroupRoot, dir: podRootDir },
      'the pod cgroup root does not exist (yet): no pod is seen, and none evicted, until the kubelet creates it (--pod-cgroup-root)',
    );

  if (s.realtimePriority > 0) {
    // Before anything is armed: the kill threads start in their class. This thread (passes,
    // CRI calls, the wait for memory after a kill) keeps normal scheduling.
    try {
      setKillThreadPriority(s.realtimePriority);
    } catch (err) {
      // The node, not the flag, refuses it: evictd still does its job at normal priority, so it
      // runs (a DaemonSet would crash-loop otherwise) and says why. Seen with cgroup v1 RT group
      // scheduling, where a container's cpu cgroup has cpu.rt_runtime_us 0.
      logger.warn(
        { realtimePriority: s.realtimePriority, err: (err as Error).message },
        nativeAvailable()
          ? 'running without realtime priority: SCHED_FIFO refused (CAP_SYS_NICE missing, or a cpu cgroup with no realtime budget: cgroup v1 cpu.rt_runtime_us)'
          : 'running without realtime priority: the native addon did not load (see err)',
      );
    }
  }

  setReapAfterKill(s.reapKilled);

  const codeLocked = s.lockMemory && lockCodeAtStart(logger);

  const metrics = new AgentMetrics({
    processMetrics: true,
    buildInfo: {
      version: require('../../../package.json').version as string,
      nodejs_version: process.version,
      addon: nativeAvailable() ? 'loaded' : 'missing',
    },
    orderRefusals: () => {
      const c = orderCounts();
      return { 'memcg-threshold-eventfd': c.eventfd.refused, 'bpf-tripwire': c.tripwire.refused };
    },
    reaps: () => {
      const c = reapCounts();
      return { reaped: c.reaped, 'not-reaped': c.tasks - c.reaped };
    },
  });
  const observer = new NodeObserver({
    layout,
    cgroupRoot: s.cgroupRoot,
    podCgroupRoot: s.podCgroupRoot,
    nodefsPath: s.nodefsPath,
    hugePagesBytes: () => hugepageGate.hugePagesBytes(),
  });
  const runtime = CriRuntime.connect(s.endpoint);
  const kube = s.podSource === 'runtime' ? null : await startKube(s.podSource, s.dryRun, flags, metrics, logger);
  // Set by the operator, or as the node's kubelet release has it (read from its Node): before the first pass.
  const hugepageGate = new HugepageGate({
    set: s.eviction.featureGates?.HugepageAwareEviction,
    ...(kube ? { kubeletVersion: kube.kubeletVersion } : {}),
    hugePagesBytes: () => readHugePagesBytes(),
    clock: systemClock,
    logger,
  });
  await hugepageGate.start();
  const agent = new Agent({
    policy: s.policy,
    layout,
    observer,
    runtime,
    notifications: s.notifications === 'none' ? null : kernelNotifications(logger, 100, s.notifications === 'poll' ? 'poll' : 'best'),
    pods: kube?.source,
    trustSandboxAnnotations: s.trustSandboxAnnotations,
    reporter: kube?.reporter,
    logger,
    metrics,
    dryRun: s.dryRun,
    fastKill: s.fastKill,
    standingOrders: s.standingOrders,
    housekeepingIntervalMs: s.housekeepingIntervalMs,
    releaseTimeoutMs: s.releaseTimeoutMs,
    psi: s.psi,
    volumes: { kubeletRootDir: s.nodefsPath, periodMs: s.volumeStatsAggPeriodMs },
    stateDir: s.stateDir,
    ...(recorder ? { recorder } : {}),
  });
  const server = await startMetricsServer(s.metrics, metrics.registry, { live: () => agent.liveness(), ready: () => agent.health() }).catch(
    (err: NodeJS.ErrnoException) => {
      throw badValue('--metrics-address', `${s.metrics.host}:${s.metrics.port}`, err.code ?? err.message);
    },
  );
  // Metrics and health say what the node is under and why pods went: on a node's network, keep
  // them on loopback (the default) unless a scraper must reach them.
  if (bindsAllInterfaces(s.metrics.host))
    logger.warn(
      { flag: '--metrics-address', address: `${s.metrics.host}:${s.metrics.port}` },
      '--metrics-address listens on every interface of the node, not only loopback',
    );
  let closeAdmission = async (): Promise<void> => {};
  if (s.admission) {
    const { startAdmissionServer } = require('../kube/admission-server') as typeof import('../kube/admission-server');
    const { admit } = require('../policy/admission') as typeof import('../policy/admission');
    const listen = admissionListen(s.admission);
    // `--record`: each answer given goes in the recording, between the passes it came between.
    const onDecision = recorder ? recorder.admission.bind(recorder) : undefined;
    const a = await startAdmissionServer({
      decide: admit,
      conditions: () => agent.conditions(),
      stale: () => agent.conditionsStale(),
      ...(onDecision ? { onDecision } : {}),
      log: logger,
      listen,
    }).catch((err: NodeJS.ErrnoException) => {
      throw badValue(
        '--admission-address',
        'path' in s.admission! ? `unix:${s.admission!.path}` : `${s.admission!.host}:${s.admission!.port}`,
        err.code ?? err.message,
      );
    });
    logger.info({ address: a.address, tls: 'tls' in listen && listen.tls !== undefined }, 'admission endpoint: POST /admit');
    closeAdmission = () => a.close();
  }
  // Every stop signal a supervisor or a terminal sends ends the same clean way (brakes
  // released, orders withdrawn). Handled for good, not once, and from before the starting line
  // (a supervisor may signal as soon as it reads it): a second SIGTERM, or a SIGHUP from a
  // closing terminal, would otherwise end the process by default, brakes on.
  let stopping = false;
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const done = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'already stopping: the brakes are being released first');
      return;
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    stop();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => done(signal));
  // A bug that escapes (an exception or a rejection nobody handles) ends the process, but not
  // with a pod throttled behind it: the brakes come off and the orders are withdrawn first.
  const fatal = (err: unknown, origin: string) => {
    logger.fatal({ err, origin }, 'evictd failed: releasing its brakes, then exiting');
    try {
      agent.abandon();
    } finally {
      process.exit(1);
    }
  };
  process.on('uncaughtException', (err) => fatal(err, 'uncaughtException'));
  process.on('unhandledRejection', (err) => fatal(err, 'unhandledRejection'));
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
      standingOrders: s.standingOrders,
      housekeepingIntervalMs: s.housekeepingIntervalMs,
      notifications: s.notifications,
      podSource: s.podSource,
      realtimePriority: s.realtimePriority,
      reapKilled: s.reapKilled,
      memoryBrake: s.policy.memoryBrake
        ? { maxDuration: formatDuration(s.policy.memoryBrake.maxDurationNs), marginBytes: s.policy.memoryBrake.marginBytes, stateDir: s.stateDir }
        : false,
      thresholds: s.policy.thresholds.map((t) => `${t.signal}<${t.value.text} (${t.kind})`),
    },
    'evictd starting',
  );
  agent.start();
  const stopShedding = shedCodeOnceStarted(() => agent.conditionsStale() === null, codeLocked, logger);
  // Under a unit of Type=notify: ready now; with WatchdogSec=, alive while the loop completes
  // passes (not while the runtime is down: restarting evictd would not bring it back).
  notifySystemd(`READY=1\nSTATUS=watching ${s.policy.thresholds.length} thresholds`, logger);
  const watchdogMs = watchdogIntervalMs();
  const watchdog =
    watchdogMs === null
      ? null
      : setInterval(() => {
          if (agent.conditionsStale() === null) notifySystemd('WATCHDOG=1', logger);
        }, watchdogMs / 2);
  watchdog?.unref();
  await stopped;
  stopShedding();
  if (watchdog) clearInterval(watchdog);
  notifySystemd('STOPPING=1', logger);
  await agent.stop();
  await server.close();
  await closeAdmission();
  hugepageGate.stop();
  kube?.close();
  runtime.close();
  if (recorder) {
    await recorder.close();
    const r = recorder.stats;
    logger.info(
      {
        path: s.record!.path,
        ...r,
        bytesPerPass: r.passes ? Math.round(r.bytes / r.passes) : 0,
        serializeMsMean: r.passes ? r.serializeMsTotal / r.passes : 0,
      },
      'recording closed',
    );
    if (r.passes === 0) logger.warn({ path: s.record!.path }, 'recording: no pass completed, the file is empty (evictd simulate says so)');
  }
  logger.info({ passes: agent.controller.stats.passes, notifications: agent.controller.stats.notifications }, 'stopped');
  return 0;
}

let notifyFailureLogged = false;
let notifyFallbackLogged = false;

/**
 * sd_notify, never fatal: the agent keeps its job when it cannot tell systemd (no addon and no
 * systemd-notify, or the socket refused). Said once, with the real reason: under Type=notify
 * systemd then gives up on the start at its TimeoutStartSec. Without the addon the message goes
 * through systemd-notify, also said once, with the addon's load error.
 */
function notifySystemd(state: string, logger: Logger): void {
  try {
    const failed = (why: string) => {
      if (notifyFailureLogged) return;
      notifyFailureLogged = true;
      logger.error({ err: why, state: state.split('\n')[0] }, 'cannot notify systemd: systemd-notify failed (see err)');
    };
    if (sdNotify(state, failed) === 'systemd-notify' && !notifyFallbackLogged) {
      notifyFallbackLogged = true;
      logger.warn(
        { err: nativeLoadError()?.message, state: state.split('\n')[0] },
        'the native addon did not load (see err): systemd is notified through systemd-notify (the unit needs NotifyAccess=all)',
      );
    }
  } catch (err) {
    if (notifyFailureLogged) return;
    notifyFailureLogged = true;
    logger.error(
      { err: (err as Error).message, state: state.split('\n')[0], addon: nativeLoadError()?.message },
      nativeAvailable()
        ? 'cannot notify systemd (sd_notify failed)'
        : 'cannot notify systemd: the native addon did not load and systemd-notify cannot run (see err, addon)',
    );
  }
}

/** The TLS files of --admission-address read now: a file that cannot be read is refused by its flag. */
function admissionListen(a: AdmissionAddress): AdmissionListen {
  if ('path' in a) return { path: a.path };
  if (!a.tls) return { host: a.host, port: a.port };
  const read = (flag: string, file: string): string => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw badValue(flag, file, fileProblem(err));
    }
  };
  const tls = {
    cert: read('--admission-tls-cert-file', a.tls.certFile),
    key: read('--admission-tls-private-key-file', a.tls.keyFile),
    clientCa: read('--admission-client-ca-file', a.tls.clientCaFile),
  };
  // Not PEM, or a key that is not the certificate's: refused here, by name, not at the first client.
  try {
    createSecureContext({ cert: tls.cert, key: tls.key });
  } catch (err) {
    throw badValue('--admission-tls-private-key-file', a.tls.keyFile, `with --admission-tls-cert-file ${a.tls.certFile}: ${(err as Error).message}`);
  }
  try {
    createSecureContext({ ca: tls.clientCa });
  } catch (err) {
    throw badValue('--admission-client-ca-file', a.tls.clientCaFile, (err as Error).message);
  }
  return { host: a.host, port: a.port, tls };
}
