/**
 * `evictd bench memory-pressure`: how soon KEP-5986 acts once a container's memory.events says
 * so, woken by the kernel, against the same agent that looks only on the kubelet's 10 s cycle.
 *
 * Two `evictd run` agents, each started once on its own lab node (768 MiB) and left running:
 * `kernel` (the default: a memory.events watch and a PSI trigger per container wake a pass) and
 * `cycle` (`--notifications none`: a pass every 10 s, the kubelet's housekeeping, as the KEP's
 * loop; grace-period ends are still timed). Both take the KEP's fields: memory.events high and
 * max rates above 1/s, a grace period of --grace (default 2 s). Each trial runs, in one pod each:
 * - a container held at its memory.high (48 MiB of a 256 MiB limit) by a dd filling a RAM
 *   filesystem with 160 MiB (shmem: nothing to reclaim, so it throttles): stage 1;
 * - a container writing synced page cache to a disk through its 48 MiB memory.max: stage 2.
 * Both start their trouble 12 s after they start, so that a pass of either agent has seen them
 * (the rate counts from a pass's sample, as the KEP's counts from a cycle's).
 *
 * The clock is CLOCK_MONOTONIC throughout: this process watches each container's memory.events
 * (kernfs notification) and stamps the first event and the crossing (the counter past 10 events:
 * 1/s over the 10 s window); the agent stamps the relax (memory.high read back as max) and the
 * stop it sent. Reported: from the crossing to the action, less the grace period (what the
 * agent adds), per mode and stage: median with its 95% interval, p95, and cycle / kernel as a
 * bootstrap ratio. The trial order alternates which agent goes first (ABBA).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../../errors';
import { watchCgroupEvents } from '../../kernel';
import { parseDuration } from '../../policy/duration';
import { eachFlag, parseWhole } from '../flags';
import { IMAGES } from '../harness';
import { openLabSession } from '../lab-session';
import { NodeLab, type LabPod } from '../node-lab';
import { AgentProcess, type LogLine } from '../ramp-lab';
import { round } from '../stats';
import { pipeTable } from '../text-table';
import { diskDir, onRamFilesystem } from '../workload';
import { bootstrapRatio } from './peers/bootstrap';
import { summarize, type MedianSummary } from './peers/median-interval';
import { formatSummary } from './peers/report';
import { benchStart } from './start';
import { onInterrupt } from '../interrupt';

const MiB = 1024 * 1024;
const NODE_MIB = 768;
/** the rate threshold (events/s): crossed when the counter passes 10x it within the 10 s window */
const RATE = 1;
const CROSSING_EVENTS = RATE * 10;
/** longer than one housekeeping interval: a pass of either agent has sampled the container */
const DELAY_S = 12;
/** the wait for an action: the delay, two cycles and the grace period, with room for emulated CPUs */
const ACTION_DEADLINE_MS = 90_000;
const MODES = {
  kernel: [] as string[],
  cycle: ['--notifications', 'none', '--housekeeping-interval', '10s'],
};
type Mode = keyof typeof MODES;
type Stage = 'relax' | 'evict';

const USAGE = `usage: evictd bench memory-pressure [--json] [--quick] [--trials N] [--grace DURATION]

  KEP-5986 on a real containerd and real cgroup v2: from a container's memory.events crossing
  (1/s over 10 s) to its stage-1 relax and to its stage-2 stop, past the grace period, with
  passes woken by the kernel (kernel) and on the kubelet's 10 s cycle alone (cycle).
  --trials N         trials per mode (default 20; --quick: 2)
  --grace DURATION   memoryPressureEvictionGracePeriod (default 2s)
  --json             print the results as one JSON object (last line)`;

interface Options {
  json: boolean;
  trials: number;
  graceMs: number;
}

function parse(argv: string[]): Options | null {
  const o: Options = { json: false, trials: 20, graceMs: 2000 };
  if (argv.includes('--help') || argv.includes('-h')) return null;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--json') o.json = true;
    else if (flag === '--quick') o.trials = 2;
    else if (flag === '--trials') o.trials = parseWhole('--trials', value(), 1, 200);
    else if (flag === '--grace') {
      const text = value();
      let ns = NaN;
      try {
        ns = parseDuration(text);
      } catch {
        // refused below, naming the flag
      }
      if (!(ns >= 0 && ns <= 60e9)) throw new UsageError(`--grace: ${JSON.stringify(text)}: must be a duration from 0s to 60s`);
      o.graceMs = ns / 1e6;
    } else throw new UsageError(`bench memory-pressure: unknown flag ${JSON.stringify(raw)}`);
  });
  return o;
}

interface Trial {
  mode: Mode;
  stage: Stage;
  n: number;
  /** ms from the crossing to the action, less the grace period; null: no action in time */
  pastGraceMs: number | null;
  /** ms from the container's first memory.events change of the kind to the action */
  fromFirstMs: number | null;
  /** stage 1: the ms of it the runtime's UpdateContainerResources took */
  runtimeMs: number | null;
  outcome: string;
}

/** A directory on a RAM filesystem: a file there is shmem, charged to who writes it, never reclaimed. */
function ramDir(): string {
  for (const base of ['/dev/shm', '/run']) if (fs.existsSync(base) && onRamFilesystem(base)) return fs.mkdtempSync(path.join(base, 'evictd-bench-'));
  throw new UsageError('bench memory-pressure: needs a RAM filesystem at /dev/shm or /run (tmpfs) for the throttled container');
}

/** The container's memory.events, watched from here: the first change with `key` > 0 and the one past the crossing. */
class EventsStamp {
  first: bigint | null = null;
  crossed: bigint | null = null;
  private readonly w;

  constructor(file: string, key: 'high' | 'max') {
    this.w = watchCgroupEvents(file);
    this.w.on('event', (e) => {
      const v = e.counters?.[key] ?? 0;
      if (v > 0) this.first ??= e.monotonicNs;
      if (v > CROSSING_EVENTS) this.crossed ??= e.monotonicNs;
    });
    this.w.on('error', () => undefined);
  }

  close(): void {
    this.w.close();
  }
}

function containerEventsFile(lab: NodeLab, pod: LabPod, container: string): string {
  const id = pod.containers[container]!;
  const podDir = lab.memoryDir(pod.cgroupPath);
  const dir = fs.readdirSync(podDir).find((d) => d.includes(id));
  if (!dir) throw new Error(`bench memory-pressure: no cgroup for container ${container} under ${podDir}`);
  return path.join(podDir, dir, 'memory.events');
}

async function trial(lab: NodeLab, agent: AgentProcess, mode: Mode, n: number, graceMs: number): Promise<Trial[]> {
  const fill = ramDir();
  const disk = diskDir('evictd-bench-kep5986-');
  const pods: LabPod[] = [];
  const stamps: EventsStamp[] = [];
  try {
    const throttled = await lab.runPod({
      name: `throttled-${mode}-${n}`,
      namespace: 'bench',
      qos: 'Burstable',
      containers: [
        {
          name: 'app',
          image: IMAGES.busybox,
          command: ['/bin/sh', '-c', `sleep ${DELAY_S}; dd if=/dev/zero of=/fill/f bs=1M count=160 2>/dev/null; echo filled; exec sleep 100000`],
          memoryLimitBytes: 256 * MiB,
          memoryHighBytes: 48 * MiB,
          mounts: [{ containerPath: '/fill', hostPath: fill }],
        },
      ],
    });
    pods.push(throttled);
    const writer = await lab.runPod({
      name: `writer-${mode}-${n}`,
      namespace: 'bench',
      qos: 'Burstable',
      containers: [
        {
          name: 'app',
          image: IMAGES.busybox,
          command: [
            '/bin/sh',
            '-c',
            `sleep ${DELAY_S}; i=0; while :; do dd if=/dev/zero of=/data/f$((i % 32)) bs=1M count=4 conv=fsync 2>/dev/null; i=$((i + 1)); done`,
          ],
          memoryLimitBytes: 48 * MiB,
          mounts: [{ containerPath: '/data', hostPath: disk }],
        },
        // no limit: the pod cgroup stays unlimited, so the writer's own memory.max is the one hit
        { name: 'idle', image: IMAGES.busybox, command: ['sleep', '100000'] },
      ],
    });
    pods.push(writer);
    const high = new EventsStamp(containerEventsFile(lab, throttled, 'app'), 'high');
    const max = new EventsStamp(containerEventsFile(lab, writer, 'app'), 'max');
    stamps.push(high, max);
    const key = (p: LabPod) => `${p.namespace}/${p.name}`;
    const relaxed = (l: LogLine) => l.msg === 'memory.high relaxed to memory.max (KEP-5986 stage 1)' && l.pod === key(throttled);
    const stopped = (l: LogLine) => (l.msg === 'evicted pod' || l.msg === 'eviction failed; trying the next candidate') && l.pod === key(writer);
    const [r, s] = await Promise.all([
      agent.waitFor(relaxed, ACTION_DEADLINE_MS).catch(() => null),
      agent.waitFor(stopped, ACTION_DEADLINE_MS).catch(() => null),
    ]);
    const relaxAt = r && typeof r.at === 'string' ? BigInt(r.at) : null;
    const at = s?.at as { stopSent?: string } | undefined;
    const stopAt = at?.stopSent ? BigInt(at.stopSent) : null;
    const measure = (stage: Stage, stamp: EventsStamp, t: bigint | null, outcome: string, runtimeMs: number | null = null): Trial => ({
      mode,
      stage,
      n,
      pastGraceMs: t !== null && stamp.crossed !== null ? round(Number(t - stamp.crossed) / 1e6 - graceMs, 1) : null,
      fromFirstMs: t !== null && stamp.first !== null ? round(Number(t - stamp.first) / 1e6, 1) : null,
      runtimeMs,
      outcome,
    });
    return [
      measure('relax', high, relaxAt, r ? String(r.outcome) : 'none in time', typeof r?.runtimeMs === 'number' ? round(r.runtimeMs, 1) : null),
      measure('evict', max, stopAt, s ? (s.msg === 'evicted pod' ? 'evicted' : 'stop failed') : 'none in time'),
    ];
  } finally {
    for (const s of stamps) s.close();
    for (const p of pods) await lab.removePod(p).catch(() => undefined);
    fs.rmSync(fill, { recursive: true, force: true });
    fs.rmSync(disk, { recursive: true, force: true });
  }
}

interface Cell {
  mode: Mode;
  stage: Stage;
  trials: number;
  acted: number;
  pastGrace: MedianSummary | null;
  /** stage 1: the runtime's share (UpdateContainerResources) */
  runtime: MedianSummary | null;
}

function cells(trials: readonly Trial[]): Cell[] {
  const out: Cell[] = [];
  for (const stage of ['relax', 'evict'] as const)
    for (const mode of Object.keys(MODES) as Mode[]) {
      const ts = trials.filter((t) => t.mode === mode && t.stage === stage);
      const xs = ts.flatMap((t) => (t.pastGraceMs !== null ? [t.pastGraceMs] : []));
      const runtime = ts.flatMap((t) => (t.runtimeMs !== null ? [t.runtimeMs] : []));
      out.push({ mode, stage, trials: ts.length, acted: xs.length, pastGrace: summarize(xs), runtime: summarize(runtime) });
    }
  return out;
}

export async function run(argv: string[]): Promise<number> {
  const start = benchStart(argv, 'bench memory-pressure', parse, USAGE);
  if (!start) return 0;
  const { o, log } = start;
  const t0 = Date.now();
  const session = await openLabSession({ name: 'evictd-bench-kep5986-a', memoryLimitBytes: NODE_MIB * MiB, logDir: 'bench-kep5986', clientTimeoutMs: 30_000 });
  const { harness, client } = session;
  const labs: Record<Mode, NodeLab> = {
    kernel: session.lab,
    cycle: NodeLab.create(client, {
      name: 'evictd-bench-kep5986-b',
      memoryLimitBytes: NODE_MIB * MiB,
      logRoot: path.join(harness.dir, 'bench-kep5986', `${process.pid}-b`),
    }),
  };
  const agents: Partial<Record<Mode, AgentProcess>> = {};
  const trials: Trial[] = [];
  // At the end, or on SIGINT/SIGTERM mid-run: the agents stopped, both nodes removed (once).
  let ending: Promise<void> | null = null;
  const end = (): Promise<void> =>
    (ending ??= (async () => {
      for (const a of Object.values(agents)) await a.stop().catch(() => undefined);
      await labs.cycle.destroy().catch(() => undefined);
      await session.close();
    })());
  const forget = onInterrupt(end);
  try {
    if (session.lab.layout.memoryVersion !== 2)
      throw new UsageError(
        'bench memory-pressure: needs cgroup v2 (memory.events, memory.high); run it in the pure cgroup v2 VM: scripts/v2vm/run -- evictd bench memory-pressure',
      );
    const kep = [
      '--feature-gates',
      'MemoryHighEviction=true',
      '--memory-high-eviction-threshold',
      String(RATE),
      '--memory-max-eviction-threshold',
      String(RATE),
      '--memory-pressure-eviction-grace-period',
      `${o.graceMs}ms`,
    ];
    for (const mode of Object.keys(MODES) as Mode[])
      agents[mode] = await AgentProcess.start({
        lab: labs[mode],
        endpoint: harness.endpoint,
        evictionHard: 'memory.available<0%',
        extraArgs: [...kep, ...MODES[mode]],
        startTimeoutMs: 120_000,
      });
    log(
      `bench memory-pressure: KEP-5986 with memory.events high and max above ${RATE}/s, grace ${o.graceMs} ms; ${o.trials} trial(s) per mode, kernel-woken vs the 10 s cycle (${os.cpus().length} CPUs, kernel ${os.release()})`,
    );
    for (let n = 0; n < o.trials; n++) {
      // ABBA: which agent goes first alternates in pairs, so a drift over the run favours neither
      const order: Mode[] = n % 4 === 0 || n % 4 === 3 ? ['kernel', 'cycle'] : ['cycle', 'kernel'];
      for (const mode of order) {
        const agent = agents[mode]!;
        const gone = agent.gone();
        if (gone) throw new Error(`bench memory-pressure: the ${mode} agent is gone: ${gone}`);
        const ts = await trial(labs[mode], agent, mode, n, o.graceMs);
        trials.push(...ts);
        log(
          `  ${String(n + 1).padStart(3)}/${o.trials} ${mode.padEnd(6)} ${ts.map((t) => `${t.stage} ${t.pastGraceMs ?? '-'} ms past grace (${t.outcome})`).join(', ')}`,
        );
      }
    }
  } finally {
    forget();
    await end();
  }
  const table = cells(trials);
  const ratios = (['relax', 'evict'] as const).map((stage) => {
    const of = (mode: Mode) =>
      trials.filter((t) => t.mode === mode && t.stage === stage).flatMap((t) => (t.pastGraceMs !== null ? [Math.max(t.pastGraceMs, 0.1)] : []));
    return { stage, ...bootstrapRatio(of('cycle'), of('kernel')) };
  });
  log('');
  log('from the memory.events crossing to the action, less the grace period (ms): median [95% interval] / p95');
  for (const line of pipeTable(
    ['stage', 'mode', 'acted', 'past grace', 'of it, UpdateContainerResources'],
    table.map((c) => [
      c.stage === 'relax' ? 'stage 1 relax' : 'stage 2 stop',
      c.mode,
      `${c.acted}/${c.trials}`,
      formatSummary(c.pastGrace),
      formatSummary(c.runtime),
    ]),
  ))
    log(line);
  for (const r of ratios) {
    const ci = r.lo !== null ? ` [${round(r.lo, 1)}, ${round(r.hi, 1)}]` : '';
    log(`${r.stage}: cycle / kernel = ${r.ratio !== null ? round(r.ratio, 1) : '-'}${ci} (bootstrap of medians, ${r.reps} reps, seed ${r.seed})`);
    if (r.ratio !== null && r.ratio < 1) log(`  WHERE WE LOSE: the kernel-woken agent was slower than the 10 s cycle at ${r.stage}`);
  }
  log(`(${round((Date.now() - t0) / 1000, 0)} s)`);
  if (o.json)
    process.stdout.write(
      JSON.stringify({ bench: 'memory-pressure', graceMs: o.graceMs, rate: RATE, trials: o.trials, cells: table, ratios, raw: trials }) + '\n',
    );
  return 0;
}
