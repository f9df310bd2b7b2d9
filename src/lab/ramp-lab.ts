/**
 * Memory ramps against a real `evictd run`, for the demo and `evictd bench protect`: the agent
 * runs as a child process on a NodeLab's node cgroup, a BestEffort hog pod ramps toward the
 * node's limit, and each ramp ends evicted (the agent's log says so) or OOM-killed (the
 * kernel's counter in the hog's cgroups says so).
 *
 * Timing, all on CLOCK_MONOTONIC (the hog, the kernel event and the agent share it):
 * - crossing: when the node's available memory fell below the threshold line. The agent logs
 *   the available memory it observed and when; the hog logs "<ns> <MiB held>" per MiB (or every
 *   `stepKiB`).
 *   Counting back from the MiB held at the observation by the deficit below the line gives the
 *   step (a MiB, or `stepKiB`: HOG_STEP_KIB) during which the line was crossed; its START is
 *   taken as the crossing (an upper bound on the reaction: at most one step early).
 * - reaction: crossing -> the kill (fast kill) or StopPodSandbox was sent.
 * - freed: crossing -> the pod's memory was back (the agent's release wait).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { walkCgroups } from '../node/cgroups';
import { Quantity } from '../policy/quantity';
import { adoptChild } from './interrupt';
import { hogSteps, type LabPod, type NodeLab } from './node-lab';
import { SHIPPED_NODE_ARGS } from './shipped';

export interface AgentProcessOptions {
  /** another build's bin/evictd.js (an A/B against a baseline tree); default this tree's */
  bin?: string;
  /** more arguments to node itself, after the shipped ones (shipped.ts), before the script (e.g. the crash-point tests' --require) */
  nodeArgs?: string[];
  lab: NodeLab;
  endpoint: string;
  evictionHard: string;
  /** extra `evictd run` flags, e.g. ['--notifications', 'none', '--housekeeping-interval', '1s'] */
  extraArgs?: string[];
  /** how long `evictd run` may take to log its start (default 60 s: a bound on a failure, and emulated CPUs on a busy host need tens of seconds) */
  startTimeoutMs?: number;
  /** the node cgroup (default: the lab's node cgroup; '/' when the whole machine is the node) */
  cgroupRoot?: string;
  /** the pod cgroup root, when it is not <cgroup-root>/kubepods */
  podCgroupRoot?: string;
  /** more environment for the process (e.g. EVICTD_CRASH_AT, with nodeArgs loading test/support/crash-at.ts) */
  env?: Record<string, string>;
  /** the subcommand and what comes before the flags (default ['run']; ['record', FILE] observes) */
  command?: string[];
}

/** One JSON log line of the agent. */
export type LogLine = Record<string, unknown> & { msg?: string; pod?: string };

/** `evictd run` as a child process, its JSON log lines collected. */
export class AgentProcess {
  readonly lines: LogLine[] = [];
  private readonly waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  metricsAddress: string | null = null;
  exited: Promise<number | null>;
  /** the last 16 KiB the agent wrote to stderr (a crash's stack, a native abort) */
  stderrTail = '';

  private constructor(readonly child: ChildProcess) {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (text) => {
      let l: LogLine;
      try {
        l = JSON.parse(text) as LogLine;
      } catch {
        return;
      }
      this.lines.push(l);
      if (l.msg === 'evictd starting' && typeof l.metricsAddress === 'string') this.metricsAddress = l.metricsAddress;
      for (const w of [...this.waiters]) {
        if (w.match(l)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(l);
        }
      }
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static async start(o: AgentProcessOptions): Promise<AgentProcess> {
    const bin = o.bin ?? path.resolve(__dirname, '..', '..', '..', 'bin', 'evictd.js');
    const args = [
      ...SHIPPED_NODE_ARGS,
      ...(o.nodeArgs ?? []),
      bin,
      ...(o.command ?? ['run']),
      '--cgroup-root',
      o.cgroupRoot ?? o.lab.root,
      ...(o.podCgroupRoot ? ['--pod-cgroup-root', o.podCgroupRoot] : []),
      '--container-runtime-endpoint',
      o.endpoint,
      '--eviction-hard',
      o.evictionHard,
      '--metrics-address',
      '127.0.0.1:0',
      '--release-timeout',
      '3s',
      // The lab's pods declare priority and requests on their sandboxes (no API server here),
      // and the lab writes every pod: their author is the operator.
      '--trust-sandbox-annotations',
      ...(o.extraArgs ?? []),
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(o.env ? { env: { ...process.env, ...o.env } } : {}) });
    adoptChild(child);
    const p = new AgentProcess(child);
    child.stderr!.on('data', (d: Buffer) => (p.stderrTail = (p.stderrTail + d.toString()).slice(-16 * 1024)));
    const started = await Promise.race([
      p.waitFor((l) => l.msg === 'evictd starting', o.startTimeoutMs ?? 60_000).catch(() => null),
      p.exited.then(() => null),
    ]);
    if (!started) {
      child.kill('SIGKILL');
      throw new Error(`evictd run did not start: ${p.stderrTail.trim().split('\n').slice(-3).join(' | ')}`);
    }
    return p;
  }

  /** Why the agent is gone ("exit 1", "signal SIGSEGV") with its last words, or null while it runs. */
  gone(): string | null {
    const { exitCode, signalCode } = this.child;
    if (exitCode === null && signalCode === null) return null;
    const last = this.lines.slice(-3).map((l) => JSON.stringify(l));
    return `${signalCode ? `signal ${signalCode}` : `exit ${exitCode}`}; last log lines: ${last.join(' | ')}; stderr: ${this.stderrTail.trim().split('\n').slice(-12).join(' | ')}`;
  }

  /** Resolves with the first line (already seen or to come) that matches. */
  waitFor(match: (l: LogLine) => boolean, timeoutMs: number): Promise<LogLine> {
    const seen = this.lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = { match, resolve: (l: LogLine) => (clearTimeout(timer), resolve(l)) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error('timeout'));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** CPU seconds (user + system) the agent has used so far, from /proc/<pid>/stat. */
  cpuSeconds(): number {
    const stat = fs.readFileSync(`/proc/${this.child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

export interface RampResult {
  pod: string;
  labPod: LabPod;
  rateMiBs: number;
  outcome: 'evicted' | 'oom-killed' | 'survived';
  /** kernel OOM kills of the hog: its cgroups' counters, or containerd's "OOMKilled" exit reason */
  oomKills: number;
  crossingMiB?: number;
  reactionMs?: number;
  /** kernel event -> kill sent */
  eventReactionMs?: number;
  /** crossing -> decision */
  decisionMs?: number;
  freedMs?: number;
  /** crossing -> StopPodSandbox done */
  stoppedMs?: number;
  action?: string;
  signal?: string;
  threshold?: string;
  observedAvailableMiB?: number;
  reasons?: string[];
}

/**
 * Kernel OOM kills of a pod. cgroup v1 counts an OOM kill (memory.oom_control oom_kill) only in
 * the victim's own memcg, a container cgroup under the pod's: sum the tree. cgroup v2's
 * memory.events is hierarchical: the pod cgroup's count is the total.
 */
function oomKillsUnder(dir: string, version: 1 | 2): number {
  const read = (d: string): number => {
    try {
      const text = fs.readFileSync(path.join(d, version === 1 ? 'memory.oom_control' : 'memory.events'), 'utf8');
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
  if (version === 2) return read(dir);
  let total = 0;
  walkCgroups(dir, (d) => {
    total += read(d);
  });
  return total;
}

const MiB = 1024 * 1024;

/** Bytes of a threshold as logged ("100Mi" or "10%") for a capacity. */
function lineBytes(quantity: string, capacity: number): number {
  if (quantity.endsWith('%')) return Math.trunc((capacity * Number(quantity.slice(0, -1))) / 100);
  return Quantity.parse(quantity).value();
}

/**
 * One ramp: a BestEffort hog pod ramps at `rateMiBs` to `targetMiB` (past the node's limit)
 * and is either evicted by the agent or OOM-killed by the kernel.
 */
export async function runRamp(
  lab: NodeLab,
  agent: AgentProcess,
  o: { name: string; rateMiBs: number; targetMiB: number; namespace?: string; startDelayMs?: number; stepKiB?: number },
): Promise<RampResult> {
  if (o.startDelayMs) await new Promise((r) => setTimeout(r, o.startDelayMs));
  // With `stepKiB` the hog logs every stepKiB, placing the crossing within that, not a whole MiB
  // (bench protect --pods on the host). Not by default: every line goes through the runtime's
  // log pipe, and under emulation 16 lines a MiB slow the hog far below its rate.
  const env = o.stepKiB ? { HOG_STEP_KIB: String(o.stepKiB) } : undefined;
  const pod: LabPod = await lab.runPod({
    name: o.name,
    namespace: o.namespace ?? 'demo',
    qos: 'BestEffort',
    containers: [{ name: 'hog', image: 'localhost/evictd/hog:1', args: [String(o.rateMiBs), String(o.targetMiB), '0'], ...(env ? { env } : {}) }],
  });
  const podKey = `${pod.namespace}/${pod.name}`;
  const rampMs = (o.targetMiB / o.rateMiBs) * 1000;
  const evicted = agent.waitFor((l) => l.msg === 'evicted pod' && l.pod === podKey, rampMs + 10_000).catch(() => null);
  // The ramp is over when the hog's processes are gone (killed either way) or its time is up.
  const deadline = Date.now() + rampMs + 10_000;
  let started = false;
  while (Date.now() < deadline) {
    const alive = lab.containerAlive(pod, 'hog');
    // The log only grows: read it only until the hog has begun.
    if (!started && lab.podLog(pod, 'hog').length > 0) started = true;
    if (started && !alive) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  // Give the agent's eviction line (written after its release wait) a moment to arrive; not
  // long when containerd already says the kernel OOM-killed the hog.
  const oomReason = await lab.containerOomKilled(pod, 'hog');
  const line = await Promise.race([evicted, new Promise<null>((r) => setTimeout(() => r(null), oomReason ? 300 : 4000))]);
  const oomKills = Math.max(
    oomKillsUnder(lab.memoryDir(pod.cgroupPath), lab.layout.memoryVersion),
    oomReason || (await lab.containerOomKilled(pod, 'hog')) ? 1 : 0,
  );
  const steps = hogSteps(lab.podLog(pod, 'hog'));
  const result: RampResult = {
    pod: podKey,
    labPod: pod,
    rateMiBs: o.rateMiBs,
    oomKills,
    outcome: line && oomKills === 0 ? 'evicted' : oomKills > 0 ? 'oom-killed' : 'survived',
  };
  if (line) {
    const at = line.at as Record<string, string | undefined>;
    const threshold = line.threshold as { quantity: string; observed: { available: number; capacity: number } } | null;
    result.action = String(line.action);
    result.signal = String(line.signal);
    result.reasons = line.reasons as string[];
    if (threshold) {
      result.threshold = threshold.quantity;
      result.observedAvailableMiB = threshold.observed.available / MiB;
      const decision = BigInt(at.decision!);
      // Where the hog was when the numbers the agent decided on were read: by the pass, or, for a
      // standing order's kill, by the order's own thread at its wake-up (the confirming pass
      // reports the value the order saw, at.event).
      const observed = BigInt(line.action === 'standing-order' && at.event ? at.event : (at.observed ?? at.decision!));
      const before = steps.filter((s) => s.ns <= observed);
      const held = before.length ? before[before.length - 1]!.mib : 0;
      const deficit = lineBytes(threshold.quantity, threshold.observed.capacity) - threshold.observed.available;
      // Counting back from there by the deficit below the line: the crossing lies in the first
      // step (a MiB, or HOG_STEP_KIB of one) that reaches that point; it began at the stamp before.
      const crossMiB = held - Math.max(0, deficit) / MiB;
      const index = steps.findIndex((s) => s.mib > 0 && s.mib >= crossMiB);
      const startOfStep = index > 0 ? steps[index - 1] : steps[0];
      if (startOfStep) {
        const cross = startOfStep.ns;
        const sent = BigInt(at.killSent ?? at.stopSent!);
        result.crossingMiB = index >= 0 ? steps[index]!.mib : held;
        result.reactionMs = Number(sent - cross) / 1e6;
        result.decisionMs = Number(decision - cross) / 1e6;
        if (at.released) result.freedMs = Number(BigInt(at.released) - cross) / 1e6;
        // After a fast kill the runtime's stop completes in the background: its own line says when.
        const stopped = at.stopDone ?? (await agent.waitFor((l) => l.msg === 'pod sandbox stopped' && l.pod === podKey, 3000).catch(() => null))?.stopDone;
        if (typeof stopped === 'string') result.stoppedMs = Number(BigInt(stopped) - cross) / 1e6;
      }
      if (at.event) result.eventReactionMs = Number(BigInt(at.killSent ?? at.stopSent!) - BigInt(at.event)) / 1e6;
    }
  }
  return result;
}
