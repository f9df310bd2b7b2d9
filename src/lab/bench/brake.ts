/**
 * `evictd bench protect --brake`: does the memory brake turn a soft eviction that the OOM killer
 * would beat into a graceful stop, and does it slow anyone else?
 *
 * A 512 MiB node; a soft threshold memory.available<200Mi with a 5 s grace period (no hard one),
 * evictionMaxPodGracePeriod 30. A BestEffort hog that writes a checkpoint from its SIGTERM
 * handler ramps at each rate toward 700 MiB; the same `evictd run` drives it with and without
 * `--memory-brake`. Per ramp: graceful (checkpoint written, exit 0, no OOM kill), OOM-killed, or
 * killed otherwise; how long the brake held; how far the hog got.
 *
 * Beside it a Guaranteed pod keeps allocating (and freeing) 1 MiB at 50 MiB/s and logs how long
 * each took: its allocation latency before the ramp (baseline) and while the brake is on (or,
 * without the brake, while the hog lives) says whether the brake slows the pods it protects.
 * Every time is CLOCK_MONOTONIC: the hogs, the agent's log and this process share it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../../errors';
import { eachFlag, parseRates, parseWhole } from '../flags';
import { openLabSession } from '../lab-session';
import { NodeLab, hogSteps, type LabPod } from '../node-lab';
import { AgentProcess } from '../ramp-lab';
import { percentile, round } from '../stats';
import { pipeTable } from '../text-table';
import { benchStart } from './start';

const MiB = 1024 * 1024;
const NODE_MIB = 512;
const TARGET_MIB = 700;
const BASELINE_MS = 1500;
/** the soft grace (5 s) + the pod grace (30 s) + the slowest ramp, with room for emulated CPUs */
const RAMP_DEADLINE_MS = 90_000;
const SOFT = ['--eviction-soft', 'memory.available<200Mi', '--eviction-soft-grace-period', 'memory.available=5s', '--eviction-max-pod-grace-period', '30'];

const USAGE = `usage: evictd bench protect --brake [--json] [--quick] [--trials N] [--rates LIST]

  A SIGTERM-checkpointing hog ramps on a ${NODE_MIB} MiB node under a soft threshold
  (memory.available<200Mi, 5 s grace), with and without --memory-brake; a Guaranteed pod's
  allocation latency is measured before the ramp and while the brake is on.
  --trials N     ramps per rate and mode (default 2; --quick: 1)
  --rates LIST   hog ramp rates in MiB/s (default 100,500,1000,2000)
  --json         print the results as one JSON object (last line)`;

type Outcome = 'graceful' | 'oom-killed' | 'killed' | 'survived';

interface Trial {
  mode: 'brake' | 'no-brake';
  rateMiBs: number;
  outcome: Outcome;
  oomKills: number;
  exitCode: number | null;
  checkpoint: boolean;
  peakMiB: number;
  /** brake on -> the hog's SIGTERM handler ran */
  brakedMs: number | null;
  /** the agent's "eviction failed" lines for the hog (a runtime call past its deadline) */
  stopFailures: number;
  /** the protected pod's allocation latency, ms per MiB, during the window (brake on, or the hog's life) */
  latency: number[];
}

interface Options {
  json: boolean;
  trials: number;
  rates: number[];
}

function parse(argv: string[]): Options | null {
  const o: Options = { json: false, trials: 2, rates: [100, 500, 1000, 2000] };
  if (argv.includes('--help') || argv.includes('-h')) return null;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--brake') return;
    if (flag === '--json') o.json = true;
    else if (flag === '--quick') o.trials = 1;
    else if (flag === '--trials') o.trials = parseWhole('--trials', value(), 1, 100);
    else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else throw new UsageError(`bench protect --brake: unknown flag ${JSON.stringify(raw)}`);
  });
  return o;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mono = (): bigint => process.hrtime.bigint();

/** The protected pod's "<ns> lat <ns>" lines inside [from, to]. */
function latencies(lab: NodeLab, pod: LabPod, from: bigint, to: bigint): number[] {
  const out: number[] = [];
  for (const l of lab.podLog(pod, 'hog')) {
    const m = /^(\d+) lat (\d+)$/.exec(l.trim());
    if (!m) continue;
    const at = BigInt(m[1]!);
    if (at >= from && at <= to) out.push(Number(m[2]) / 1e6);
  }
  return out;
}

function oomKills(lab: NodeLab, pod: LabPod): number {
  try {
    return Number(/^oom_kill (\d+)$/m.exec(fs.readFileSync(path.join(lab.memoryDir(pod.cgroupPath), 'memory.events'), 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

async function ramp(
  lab: NodeLab,
  agent: AgentProcess,
  protectedPod: LabPod,
  mode: Trial['mode'],
  rate: number,
  n: number,
): Promise<{ trial: Trial; baseline: number[] }> {
  const baseFrom = mono();
  await sleep(BASELINE_MS);
  const ckptDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-bench-ckpt-'));
  const checkpointFile = path.join(ckptDir, 'checkpoint');
  const pod = await lab.runPod({
    name: `hog-${mode}-${rate}-${n}`,
    namespace: 'bench',
    qos: 'BestEffort',
    containers: [
      {
        name: 'hog',
        image: 'localhost/evictd/hog:1',
        args: [String(rate), String(TARGET_MIB)],
        env: { HOG_CHECKPOINT: '/ckpt/checkpoint' },
        mounts: [{ containerPath: '/ckpt', hostPath: ckptDir }],
      },
    ],
  });
  const key = `${pod.namespace}/${pod.name}`;
  const deadline = Date.now() + RAMP_DEADLINE_MS;
  let started = false;
  while (Date.now() < deadline) {
    if (lab.podLog(pod, 'hog').length > 0) started = true;
    if (started && !lab.containerAlive(pod, 'hog')) break;
    await sleep(20);
  }
  const alive = lab.containerAlive(pod, 'hog');
  const exit = alive ? await lab.containerExit(pod, 'hog') : await lab.containerExited(pod, 'hog', 10_000);
  const lines = lab.podLog(pod, 'hog');
  const steps = hogSteps(lines);
  const term = lines.map((l) => /^(\d+) term$/.exec(l.trim())).find(Boolean);
  const checkpoint = fs.existsSync(checkpointFile) && /^checkpoint \d+ \d+\n$/.test(fs.readFileSync(checkpointFile, 'utf8'));
  const kills = Math.max(oomKills(lab, pod), exit?.reason === 'OOMKilled' ? 1 : 0);
  const outcome: Outcome = alive
    ? 'survived'
    : kills > 0
      ? 'oom-killed'
      : checkpoint && exit?.state === 'CONTAINER_EXITED' && exit.exitCode === 0
        ? 'graceful'
        : 'killed';
  const on = agent.lines.find((l) => l.msg === 'memory brake on' && l.pod === key);
  const endNs = term ? BigInt(term[1]!) : (steps[steps.length - 1]?.ns ?? mono());
  const from = on ? BigInt(String(on.at)) : (steps[0]?.ns ?? endNs);
  const trial: Trial = {
    mode,
    rateMiBs: rate,
    outcome,
    oomKills: kills,
    exitCode: exit?.exitCode ?? null,
    checkpoint,
    peakMiB: steps.length ? Math.max(...steps.map((s) => s.mib)) : 0,
    stopFailures: agent.lines.filter((l) => l.msg === 'eviction failed; trying the next candidate' && l.pod === key).length,
    brakedMs: on && term ? round(Number(BigInt(term[1]!) - BigInt(String(on.at))) / 1e6, 0) : null,
    latency: latencies(lab, protectedPod, from, endNs),
  };
  const baseline = latencies(lab, protectedPod, baseFrom, steps[0]?.ns ?? endNs);
  await lab.removePod(pod);
  fs.rmSync(ckptDir, { recursive: true, force: true });
  return { trial, baseline };
}

export async function run(argv: string[]): Promise<number> {
  const start = benchStart(argv, 'bench protect --brake', parse, USAGE);
  if (!start) return 0;
  const { o, log } = start;
  const t0 = Date.now();
  // The lab's own calls (run, stop, status) are not what is measured: on emulated CPUs on a
  // busy host a RunPodSandbox took more than 5 s, so give them room.
  const session = await openLabSession({ name: 'evictd-bench-brake', memoryLimitBytes: NODE_MIB * MiB, logDir: 'bench-brake', clientTimeoutMs: 30_000 });
  const { harness, lab } = session;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-bench-state-'));
  const trials: Trial[] = [];
  const baseline: number[] = [];
  const seen = new Set<object>();
  try {
    if (lab.layout.memoryVersion !== 2)
      throw new UsageError(
        'bench protect --brake: needs cgroup v2 (memory.high); run it in the pure cgroup v2 VM: scripts/v2vm/run -- evictd bench protect --brake',
      );
    const protectedPod = await lab.runPod({
      name: 'protected',
      namespace: 'bench',
      qos: 'Guaranteed',
      containers: [{ name: 'hog', image: 'localhost/evictd/hog:1', args: ['50', '8'], env: { HOG_CHURN: '1' }, memoryLimitBytes: 64 * MiB }],
      // An ordinary candidate (ranked after the hog, which exceeds its request): if the agent
      // ever touches it, the trial says so below ("PROTECTED POD").
      annotations: { 'evictd.io/requests': 'memory=64Mi,cpu=100m', 'evictd.io/limits': 'memory=64Mi,cpu=100m' },
    });
    log(
      `bench protect --brake: node ${NODE_MIB} MiB, soft memory.available<200Mi (5 s grace), a checkpointing hog to ${TARGET_MIB} MiB at ${o.rates.join(', ')} MiB/s, ${o.trials} trial(s) each`,
    );
    for (const mode of ['brake', 'no-brake'] as const) {
      const extra = [...SOFT, ...(mode === 'brake' ? ['--memory-brake', '--state-dir', stateDir] : [])];
      const agent = await AgentProcess.start({
        lab,
        endpoint: harness.endpoint,
        evictionHard: 'memory.available<0%',
        extraArgs: extra,
        startTimeoutMs: 120_000,
      });
      try {
        for (const rate of o.rates) {
          for (let n = 0; n < o.trials; n++) {
            const r = await ramp(lab, agent, protectedPod, mode, rate, n);
            trials.push(r.trial);
            baseline.push(...r.baseline);
            const t = r.trial;
            log(
              `  ${mode.padEnd(8)} ${String(rate).padStart(5)} MiB/s: ${t.outcome}, peak ${t.peakMiB} MiB, exit ${t.exitCode}, checkpoint ${t.checkpoint ? 'yes' : 'no'}, OOM kills ${t.oomKills}${t.brakedMs !== null ? `, braked ${t.brakedMs} ms` : ''}${t.stopFailures ? `, CRI stop failures ${t.stopFailures}` : ''}`,
            );
            // The protected pod must never be touched: say so loudly if the agent did.
            const touched = agent.lines.filter((l) => l.pod === 'bench/protected' && !seen.has(l));
            for (const l of touched) {
              seen.add(l);
              log(`    PROTECTED POD: ${String(l.msg)} ${JSON.stringify({ why: l.why, memoryHigh: l.memoryHigh, threshold: l.threshold })}`);
            }
            if (!lab.containerAlive(protectedPod, 'hog')) log('    PROTECTED POD: its process is gone');
            if (process.env.EVICTD_BENCH_DEBUG) {
              for (const l of agent.lines.filter(
                (x) => !seen.has(x) && (Number(x.level) >= 40 || x.msg === 'node conditions changed' || x.msg === 'memory brake off'),
              )) {
                seen.add(l);
                process.stderr.write(`    agent: ${JSON.stringify(l).slice(0, 700)}\n`);
              }
            }
          }
        }
      } finally {
        await agent.stop();
      }
    }
  } finally {
    await session.close();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
  const cells = summarize(trials, o.rates);
  const base = { p50Ms: round(percentile(baseline, 50), 2), p99Ms: round(percentile(baseline, 99), 2), samples: baseline.length };
  log('\n' + renderTable(cells, base));
  log(`(${round((Date.now() - t0) / 1000, 0)} s)`);
  if (o.json)
    process.stdout.write(
      JSON.stringify({
        bench: 'protect --brake',
        nodeMiB: NODE_MIB,
        rates: o.rates,
        trials: o.trials,
        cells,
        protectedBaseline: base,
        raw: trials.map((t) => ({ ...t, latency: undefined })),
      }) + '\n',
    );
  return 0;
}

interface Cell {
  mode: Trial['mode'];
  rateMiBs: number;
  trials: number;
  graceful: number;
  oomKills: number;
  peakMiB: number;
  brakedMsP50: number | null;
  protectedP50Ms: number | null;
  protectedP99Ms: number | null;
}

function summarize(trials: Trial[], rates: number[]): Cell[] {
  const out: Cell[] = [];
  for (const mode of ['brake', 'no-brake'] as const) {
    for (const rate of rates) {
      const ts = trials.filter((t) => t.mode === mode && t.rateMiBs === rate);
      if (ts.length === 0) continue;
      const lat = ts.flatMap((t) => t.latency);
      out.push({
        mode,
        rateMiBs: rate,
        trials: ts.length,
        graceful: ts.filter((t) => t.outcome === 'graceful').length,
        oomKills: ts.reduce((s, t) => s + t.oomKills, 0),
        peakMiB: Math.max(...ts.map((t) => t.peakMiB)),
        brakedMsP50: percentile(
          ts.flatMap((t) => (t.brakedMs !== null ? [t.brakedMs] : [])),
          50,
        ),
        protectedP50Ms: round(percentile(lat, 50), 2),
        protectedP99Ms: round(percentile(lat, 99), 2),
      });
    }
  }
  return out;
}

function renderTable(cells: Cell[], base: { p50Ms: number | null; p99Ms: number | null; samples: number }): string {
  const head = ['mode', 'rate MiB/s', 'graceful stop', 'kernel OOM kills', 'hog peak MiB', 'braked (p50)', 'protected pod alloc p50/p99 per MiB'];
  const rows = cells.map((c) => [
    c.mode,
    String(c.rateMiBs),
    `${c.graceful}/${c.trials}`,
    String(c.oomKills),
    String(c.peakMiB),
    c.brakedMsP50 !== null ? `${c.brakedMsP50} ms` : '-',
    c.protectedP50Ms !== null ? `${c.protectedP50Ms}/${c.protectedP99Ms} ms` : '-',
  ]);
  rows.push(['(baseline)', '-', '-', '-', '-', '-', `${base.p50Ms ?? '-'}/${base.p99Ms ?? '-'} ms (${base.samples} samples, before each ramp)`]);
  return [
    'graceful = checkpoint written by the SIGTERM handler, exit 0, no kernel OOM kill; protected latency: while braked (brake), while the hog lived (no-brake)',
    ...pipeTable(head, rows),
  ].join('\n');
}
