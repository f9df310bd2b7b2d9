/**
 * Shared setup of the agent's end-to-end tests: the project's containerd harness (brought up
 * when it is not running, taken down only if this process started it), a NodeLab per test, and
 * an in-process Agent wired to the real runtime, the real cgroups and the real kernel addon.
 */
import fs from 'node:fs';
import http from 'node:http';
import { after } from 'node:test';
import path from 'node:path';
import pino from 'pino';
import { Agent, type EvictionRecord } from '../../src/agent/agent';
import { CriRuntime } from '../../src/agent/adapters/cri-runtime';
import { kernelNotifications } from '../../src/agent/adapters/kernel-notifications';
import { AgentMetrics } from '../../src/agent/metrics';
import { Recorder } from '../../src/agent/recorder';
import { systemClock } from '../../src/agent/clock';
import { NodeLab, type NodeLabOptions } from '../../src/lab/node-lab';
import type { EvictionReporter, PodSpecSource, RuntimePort } from '../../src/agent/ports';
import { CriClient } from '../../src/cri';
import { ensureHarness, harnessMissing, type Harness } from '../../src/lab/harness';
import { NodeObserver } from '../../src/node/observer';
import { compileConfig, configFromFlags, type EvictionFlags } from '../../src/policy/config';
import { readRecording } from '../../src/sim/recording-reader';
import { differenceText, replay } from '../../src/sim/replay';
import { missingRoot, memcgV1Root, cgroup2Root, slow } from '../support/environment';

export const MiB = 1024 * 1024;

export function missingE2e(): string | null {
  return missingRoot() ?? harnessMissing() ?? (memcgV1Root() || cgroup2Root() ? null : 'needs a cgroup memory controller');
}

let harness: Harness | null = null;
let client: CriClient | null = null;

/**
 * The agent suites' own harness instance (own dir, socket and cgroup): they freeze containerd
 * and watch whole node cgroups, so they must not share a runtime with other suites.
 */
// scripts/with-agent-harness.sh (npm run test:agent) keeps this harness up for the whole suite.
export const AGENT_HARNESS_DIR = '/run/evictd-harness-agent';

export function containerdPid(): number | null {
  return harness?.containerdPid() ?? null;
}

/** containerd SIGKILLed and started again on the same socket (shims and containers live on). */
export async function restartContainerd(): Promise<void> {
  const pid = containerdPid();
  if (pid === null || !harness) throw new Error('no harness containerd to restart');
  process.kill(pid, 'SIGKILL');
  const alive = () => {
    try {
      return !/^State:\s*Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return false;
    }
  };
  while (alive()) await new Promise((r) => setTimeout(r, 20));
  const up = await harness.run(['up']);
  if (up.code !== 0) throw new Error(`harness up after the kill: ${up.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  // containerd answers before its CRI plugin has loaded ("server is not initialized yet"), the
  // kubelet waits for the runtime's Ready condition; a CRI call that succeeds is the same here.
  const { client: c } = await criClient();
  const end = Date.now() + slow(30_000);
  for (;;) {
    try {
      await c.listPodSandbox();
      return;
    } catch (err) {
      if (Date.now() > end) throw new Error(`the CRI plugin not ready after the restart: ${(err as Error).message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function criClient(): Promise<{ client: CriClient; endpoint: string }> {
  if (!harness) harness = await ensureHarness(AGENT_HARNESS_DIR, '/evictd-agent-harness');
  if (!client) client = CriClient.connect(harness.endpoint, { timeoutMs: slow(5000) });
  return { client, endpoint: harness.endpoint };
}

export async function releaseHarness(): Promise<void> {
  client?.close();
  client = null;
  await harness?.release();
  harness = null;
}

export async function newLab(name: string, opts: Omit<NodeLabOptions, 'name' | 'logRoot'> & { logRoot?: string }): Promise<NodeLab> {
  const { client: c } = await criClient();
  return NodeLab.create(c, { name: `evictd-agent-${name}`, logRoot: path.join(AGENT_HARNESS_DIR, 'agent-tests', `${name}-${process.pid}`), ...opts });
}

export interface TestAgent {
  agent: Agent;
  evictions: EvictionRecord[];
  metrics: AgentMetrics;
  logFile: string;
  runtime: CriRuntime;
  /** the agent's recording (evictd run --record): every pass it made, replayed when it stops */
  recordingFile: string;
  /** Stops the agent, then replays its recording: throws with the difference lines when a pass differs. */
  stop(): Promise<void>;
}

let agentsStarted = 0;

/**
 * The recording replayed as `evictd simulate FILE` replays it: the difference lines (empty when
 * every pass decided as recorded), and a cut last line is one too (the recorder was closed).
 */
export function replayDifferences(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  if (text === '') return [];
  const rec = readRecording(text);
  const r = replay(rec);
  return [...(rec.cut ? [`${file}: the last line is cut although the recorder was closed`] : []), ...r.differences.map(differenceText)];
}

/**
 * Stops every agent (each replaying its recording), then throws once with every agent's
 * differences: a suite's after() hook that calls it fails the file when a replay differs.
 */
export async function stopAgents(agents: readonly TestAgent[]): Promise<void> {
  const problems: string[] = [];
  for (const a of agents) await a.stop().catch((err: Error) => problems.push(err.message));
  if (problems.length) throw new Error(problems.join('\n'));
}

export async function startAgent(
  lab: NodeLab,
  o: {
    flags: EvictionFlags;
    dryRun?: boolean;
    fastKill?: boolean;
    housekeepingIntervalMs?: number;
    nodefsPath?: string;
    wrap?: (r: CriRuntime) => RuntimePort;
    pods?: PodSpecSource;
    reporter?: EvictionReporter;
    /** measure the pods' emptyDirs under nodefsPath this often (the kubelet's --volume-stats-agg-period) */
    volumeStatsAggPeriodMs?: number;
    /** where the memory brake keeps its record */
    stateDir?: string;
    /**
     * Why this agent's recording cannot be replayed exactly (the run is still recorded): only for
     * a stated reason, such as a fault the recording does not hold changing what a pass decides.
     */
    noReplay?: string;
  },
): Promise<TestAgent> {
  const { endpoint } = await criClient();
  const runtime = CriRuntime.connect(endpoint, slow(2000));
  const logFile = path.join('/tmp', `evictd-agent-test-${process.pid}-${lab.labId}.log`);
  const recordingFile = path.join('/tmp', `evictd-agent-test-${process.pid}-${lab.labId}-${++agentsStarted}.jsonl`);
  const logger = pino({ level: 'debug' }, pino.destination({ dest: logFile, sync: true }));
  const metrics = new AgentMetrics();
  const eviction = configFromFlags(o.flags);
  const policy = compileConfig(eviction);
  const fastKill = o.fastKill ?? true;
  // As evictd run --record does it: the agent's own passes, written as they happen.
  const recorder = new Recorder({
    path: recordingFile,
    maxBytes: 64 * MiB,
    eviction,
    policy,
    standingOrders: fastKill,
    logger,
    startNs: Number(systemClock.now()),
  });
  const agent = new Agent({
    policy,
    layout: lab.layout,
    observer: new NodeObserver({ layout: lab.layout, cgroupRoot: lab.root, podCgroupRoot: lab.podRoot, nodefsPath: o.nodefsPath ?? '/' }),
    runtime: o.wrap ? o.wrap(runtime) : runtime,
    ...(o.pods ? { pods: o.pods } : {}),
    // the lab writes every pod's evictd.io/* annotations (no API server here)
    trustSandboxAnnotations: true,
    ...(o.reporter ? { reporter: o.reporter } : {}),
    notifications: kernelNotifications(logger),
    logger,
    metrics,
    dryRun: o.dryRun ?? false,
    fastKill,
    housekeepingIntervalMs: o.housekeepingIntervalMs ?? 10_000,
    releaseTimeoutMs: 3000,
    psi: null,
    ...(o.volumeStatsAggPeriodMs ? { volumes: { kubeletRootDir: o.nodefsPath ?? '/', periodMs: o.volumeStatsAggPeriodMs } } : {}),
    ...(o.stateDir ? { stateDir: o.stateDir } : {}),
    recorder,
  });
  let stopped: Promise<void> | undefined;
  const evictions: EvictionRecord[] = [];
  agent.on('eviction', (r: EvictionRecord) => evictions.push(r));
  agent.start();
  return {
    agent,
    evictions,
    metrics,
    logFile,
    runtime,
    recordingFile,
    stop() {
      stopped ??= (async () => {
        await agent.stop();
        runtime.close();
        await recorder.close();
        if (o.noReplay !== undefined) return;
        const diffs = replayDifferences(recordingFile);
        if (diffs.length) throw new Error(`the replay of ${recordingFile} (${lab.labId}) differs from the live passes:\n${diffs.join('\n')}`);
      })();
      return stopped;
    },
  };
}

export const sleeper = (name: string, memoryLimitBytes?: number) => ({
  name,
  image: 'localhost/evictd/busybox:1',
  command: ['/bin/sh', '-c', 'while true; do sleep 1; done'],
  ...(memoryLimitBytes ? { memoryLimitBytes } : {}),
});

export const hog = (mibPerSecond: number, targetMiB: number, holdSeconds?: number) => ({
  name: 'hog',
  image: 'localhost/evictd/hog:1',
  args: [String(mibPerSecond), String(targetMiB), ...(holdSeconds !== undefined ? [String(holdSeconds)] : [])],
});

/** GET /healthz on 127.0.0.1:port: the status code, 0 when nothing answers within 2 s. */
export function healthz(port: number): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/healthz', timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0))
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy();
      });
  });
}

export function logTail(file: string, n = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-n).join('\n');
  } catch {
    return '';
  }
}

/** The labs and agents a suite starts: stopped and destroyed, then the harness released, after it. */
export function suiteCleanup(): { labs: NodeLab[]; agents: TestAgent[] } {
  const labs: NodeLab[] = [];
  const agents: TestAgent[] = [];
  after(async () => {
    // Every agent stopped and every lab destroyed before a replay's difference fails the file.
    const err = await stopAgents(agents).then(
      () => null,
      (e: Error) => e,
    );
    for (const l of labs) await l.destroy().catch(() => undefined);
    await releaseHarness();
    if (err) throw err;
  });
  return { labs, agents };
}
