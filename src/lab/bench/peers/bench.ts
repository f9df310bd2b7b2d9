/**
 * `evictd bench protect --peers`: on one node (the whole machine: in the lab, a pure cgroup v2
 * VM of fixed memory, no swap), the same pods (a Guaranteed pod holding the largest process, a
 * small Burstable pod, a BestEffort hog ramping toward more than the node has) and one
 * contender at a time, does the contender stop the hog before the kernel OOM killer, how soon
 * after the line, with how much memory left, and through the runtime or by a bare kill?
 *
 * Every kill is timed by the kernel (signal-trace.ts), every crossing by the hog itself
 * (reaction.ts); contenders are started fresh for each trial and interleaved trial by trial (a
 * noisy neighbour then hits all alike); each cell reports medians with a 95% interval.
 *
 * Time scale: emulated CPUs touch only about 250-300 MiB/s per vCPU, so the lab uses a small
 * line: what matters is the time from the line to the end of memory, line / rate. A row at a
 * lab rate r with a lab line L stands for a real node at r * M / L, where M is the real node's
 * margin (the kubelet's default memory.available<100Mi unless --real-margin-mib says otherwise).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detectCgroups } from '../../../node/cgroups';
import { badValue, UsageError } from '../../../errors';
import { describeEnvironment } from '../../environment';
import { harnessMissing } from '../../harness';
import { openLabSession } from '../../lab-session';
import { eachFlag, parseRates, parseWhole as whole } from '../../flags';
import { round } from '../../stats';
import type { Contender, ContenderContext, RunningContender } from './contender';
import { ContenderUnavailable, setOomScoreAdj } from './contender';
import { earlyoom } from './earlyoom';
import { evictd, evictdPageable, evictdPoll } from './evictd';
import { kernel } from './kernel';
import { kubelet } from './kubelet';
import { meminfo } from './meminfo';
import { nohang } from './nohang';
import { oomd } from './oomd';
import { replaceLostPods, startProtectedPods, type ProtectedPods } from './pods';
import { calibrate } from './calibrate';
import { describeLine, type Line } from './reaction';
import { cellOf, formatMs, notRunCell, ratios, renderConditions, renderTable, svg, toJson, type Cell, type Ratio } from './report';
import { whatFavoursWhom } from './fairness';
import { SignalTrace, tracefsMissing } from './signal-trace';
import { runTrial, settle, type Trial } from './trial';
import { systemdOomd } from './systemd-oomd';

const MiB = 1024 * 1024;

/** Every contender the bench knows; evictd-poll and evictd-pageable only when named (one evictd row per configuration users run). */
export const CONTENDERS: Contender[] = [evictd, evictdPoll, evictdPageable, kubelet, earlyoom, nohang, oomd, systemdOomd, kernel];
const DEFAULT_CONTENDERS = CONTENDERS.filter((c) => c !== evictdPoll && c !== evictdPageable);

const DEFAULT_TRIALS = 10;
const QUICK_TRIALS = 1;
const CALIBRATION_RAMPS = 3;

export const USAGE = `usage: evictd bench protect --peers[=LIST] [--rates LIST] [--trials N | --quick] [--line-mib N] [--json] [--svg FILE] [--from FILE]

  Runs on the whole machine as the node: use a pure cgroup v2 VM of fixed memory (the lab),
  with tracefs (every kill is timed by the kernel's signal_generate).
  --peers[=LIST]      contenders (default: ${DEFAULT_CONTENDERS.map((c) => c.name).join(',')}); also evictd-poll, evictd-pageable
  --rates LIST        hog ramp rates asked, MiB/s on this machine (default 50,200: in the lab 200 is
                      already what the hog reaches at most; 400 asked reached 45-214)
  --trials N          ramps per contender and rate, interleaved trial by trial (default ${DEFAULT_TRIALS})
  --quick             ${QUICK_TRIALS} trial per cell and 1 calibration ramp (a smoke run: no 95% interval)
  --line-mib N        the MemAvailable line every contender gets (default 32)
  --real-margin-mib N the real node's margin the rows are scaled to (default 100, the kubelet's line)
  --svg FILE          the chart (default ./evictd-bench-peers.svg)
  --json              a header line, one JSON line per trial as it ends, one per cell, then the summary
  --from FILE         run nothing: print the tables of a saved --json run and write its chart (a run
                      cut short, with no summary, is rendered from its header and trials)`;

interface Options {
  contenders: Contender[];
  rates: number[];
  trials: number;
  calibrationRamps: number;
  lineMiB: number;
  realMarginMiB: number;
  svg: string;
  json: boolean;
  force: boolean;
  /** render a saved --json run (its last line) instead of running */
  from: string | null;
}

/** What a run leaves (the last line of --json): enough to print its tables and picture again. */
export interface Summary {
  bench: 'protect-peers';
  environment: string;
  lineMiB: number;
  evictdLineMiB: number;
  oomdFreeLineMiB: number;
  calibration: string;
  realMarginMiB: number;
  rates: number[];
  trials: number;
  contenders: string[];
  cells: Cell[];
  configs: Record<string, string>;
  ran: Record<string, string>;
  errors: string[];
  seconds: number;
}

/** Prints the tables, the ratios and what favours whom, writes the picture; returns the ratios. */
export function printReport(s: Summary, log: (line: string) => void, svgPath: string): Ratio[] {
  const scale = s.realMarginMiB / s.lineMiB;
  const title = `bench protect --peers: ${s.environment}; common line MemAvailable < ${s.lineMiB} MiB (real-node rates for a ${s.realMarginMiB} MiB margin)`;
  fs.writeFileSync(svgPath, svg(s.cells, s.contenders, s.rates, title, scale));
  const r = ratios(s.cells, s.rates);
  log('\n' + renderTable(s.cells));
  log('\nwhat favours whom, per cell:\n' + renderConditions(s.cells));
  log("\nevictd against the best peer, from each one's own line (median [95% CI] / p95):\n" + r.map((x) => `  ${x.rateMiBs} MiB/s asked: ${x.text}`).join('\n'));
  log('\nwhat favours whom:\n' + whatFavoursWhom(s.cells).map((f) => `  - ${f}`).join('\n'));
  log('\nconfigurations:\n' + s.contenders.map((n) => `  ${n}: ${s.configs[n]}${s.ran[n] ? ` [ran: ${s.ran[n]}]` : ''}`).join('\n'));
  if (s.errors.length) log(`\ntrials that failed (not counted): ${s.errors.length}\n` + s.errors.map((e) => `  ${e}`).join('\n'));
  log(`picture: ${svgPath}   (${s.seconds} s)`);
  return r;
}

/** What a --json run says before its first trial: enough to render it if it is cut short. */
export type RunHeader = Omit<Summary, 'bench' | 'cells' | 'ran' | 'errors' | 'seconds'> & { ownLines: Record<string, string> };

const revive = (_k: string, v: unknown) => (v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v);

/**
 * The summary of a saved --json run, with the infinities toJson spelled out made numbers again.
 * A run cut short (no summary line) is summed up from its header and the trials it finished,
 * by the same cellOf as a whole run, and says how many trials it holds.
 */
export function readSummary(text: string): Summary {
  const lines = text
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l, revive) as Record<string, unknown>;
      } catch {
        return null;
      }
    });
  const last = lines[lines.length - 1] as Summary | null | undefined;
  if (last?.bench === 'protect-peers' && Array.isArray(last.cells) && Array.isArray(last.contenders)) return last;
  const header = lines.find((l) => l && 'run' in l)?.run as RunHeader | undefined;
  if (!header) throw new Error('it holds neither the summary of bench protect --peers --json nor a run header');
  const trials = lines.flatMap((l) => (l && 'trial' in l ? [l.trial as Trial] : []));
  const scale = header.realMarginMiB / header.lineMiB;
  const cells = header.rates.flatMap((rate) =>
    header.contenders.map((name) => {
      const cell = cellOf(name, rate, trials.filter((t) => t.contender === name && t.rateMiBs === rate), scale);
      cell.ownLine = header.ownLines[name] ?? '';
      return cell;
    }),
  );
  const { ownLines: _o, ...rest } = header;
  return { bench: 'protect-peers', ...rest, environment: `${header.environment}; cut short: ${trials.length} of ${header.rates.length * header.trials * header.contenders.length} trials`, cells, ran: {}, errors: [], seconds: 0 };
}

export function parse(argv: string[]): Options {
  const o: Options = { contenders: DEFAULT_CONTENDERS, rates: [50, 200], trials: DEFAULT_TRIALS, calibrationRamps: CALIBRATION_RAMPS, lineMiB: 32, realMarginMiB: 100, svg: path.resolve('evictd-bench-peers.svg'), json: false, force: false, from: null };
  let trials: number | null = null;
  let quick = false;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--peers') {
      if (!raw.includes('=')) return;
      const v = value();
      const names = v.split(',').map((x) => x.trim());
      const unknown = names.find((n) => !CONTENDERS.some((c) => c.name === n));
      if (unknown !== undefined) throw badValue('--peers', v, `unknown contender ${JSON.stringify(unknown)} (one of ${CONTENDERS.map((c) => c.name).join(', ')})`);
      o.contenders = CONTENDERS.filter((c) => names.includes(c.name));
    } else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else if (flag === '--trials') trials = whole('--trials', value(), 1, 100);
    else if (flag === '--quick') quick = true;
    else if (flag === '--line-mib') o.lineMiB = whole('--line-mib', value(), 8, 4096);
    else if (flag === '--real-margin-mib') o.realMarginMiB = whole('--real-margin-mib', value(), 8, 65536);
    else if (flag === '--svg') o.svg = path.resolve(value());
    else if (flag === '--json') o.json = true;
    else if (flag === '--force') o.force = true;
    else if (flag === '--from') o.from = value();
    else throw new UsageError(`bench protect --peers: unknown flag ${JSON.stringify(raw)}`);
  });
  // --trials wins over --quick's count, whatever the order.
  o.trials = trials ?? (quick ? QUICK_TRIALS : DEFAULT_TRIALS);
  if (quick) o.calibrationRamps = 1;
  return o;
}

/** The contenders in trial i's order: rotated, so none always runs first after the protected pods settle. */
export function trialOrder<T>(contenders: readonly T[], i: number): T[] {
  if (!contenders.length) return [];
  const k = i % contenders.length;
  return [...contenders.slice(k), ...contenders.slice(0, k)];
}

/** Why this machine cannot be the bench's node, or null. */
function machineMissing(force: boolean): string | null {
  const missing = harnessMissing();
  if (missing) return missing;
  if (detectCgroups().memoryVersion !== 2) return 'needs pure cgroup v2 (oomd and the whole-machine node): run it in the lab, e.g. scripts/v2vm/run --mem 1024 -- node bin/evictd.js bench protect --peers';
  const totalMiB = os.totalmem() / MiB;
  if (totalMiB > 8192 && !force) return `the whole machine (${Math.round(totalMiB)} MiB) is the node and would be filled: run it in a VM of 1-2 GiB (the lab), or pass --force`;
  return tracefsMissing();
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const o = parse(argv);
  if (o.from !== null) {
    let text: string;
    try {
      text = fs.readFileSync(o.from, 'utf8');
    } catch (err) {
      throw badValue('--from', o.from, (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message);
    }
    let s: Summary;
    try {
      s = readSummary(text);
    } catch (err) {
      throw badValue('--from', o.from, (err as Error).message);
    }
    printReport(s, (line) => void process.stdout.write(line + '\n'), o.svg);
    return 0;
  }
  const missing = machineMissing(o.force);
  if (missing) throw new UsageError(`bench protect --peers: ${missing}`);
  const log = (s: string): void => void (o.json ? process.stderr : process.stdout).write(s + '\n');
  const t0 = Date.now();
  // The bench (the kubelet's place on a node) and the runtime must outlive every trial.
  setOomScoreAdj(process.pid, -999);
  // Emulated CPUs under load: a first RunPodSandbox took over 5 s in the VM.
  const session = await openLabSession({ name: 'evictd-bench-peers', memoryLimitBytes: null, logDir: 'bench-peers', clientTimeoutMs: 30_000 });
  const { harness, lab } = session;
  const cpid = harness.containerdPid();
  if (cpid) setOomScoreAdj(cpid, -999);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-peers-'));
  const trace = SignalTrace.open(`evictd-peers-${process.pid}`);
  const ctx: ContenderContext = { lab, endpoint: harness.endpoint, lineMiB: o.lineMiB, evictdLineMiB: o.lineMiB, oomdFreeLineMiB: o.lineMiB, workDir };
  const scale = o.realMarginMiB / o.lineMiB;
  const configs: Record<string, string> = {};
  const ran: Record<string, string> = {};
  const notRun = new Map<string, string>();
  const trials: Trial[] = [];
  const errors: string[] = [];
  try {
    const m = meminfo();
    const bigMiB = Math.max(64, Math.floor((m.available / MiB) * 0.4));
    let pods: ProtectedPods = await startProtectedPods(lab, bigMiB);
    const env = `${describeEnvironment()} (${os.cpus()[0]?.model ?? ''}), MemTotal ${Math.round(m.total / MiB)} MiB, ${fs.readFileSync('/proc/meminfo', 'utf8').match(/^SwapTotal:\s+(\d+)/m)?.[1] === '0' ? 'no swap' : 'swap on'}`;
    log(`bench protect --peers: ${env}`);
    log(`  node = the whole machine; pods: Guaranteed ${bigMiB} MiB (the largest process, oom_score_adj -997), Burstable (request 32Mi), BestEffort hog (1000) ramping past MemAvailable`);
    const cal = await calibrate(lab, pods, o.rates[0]!, o.lineMiB, o.calibrationRamps, trace);
    pods = await replaceLostPods(lab, pods);
    ctx.evictdLineMiB = cal.evictdLineMiB;
    ctx.oomdFreeLineMiB = cal.oomdFreeLineMiB;
    const common: Line = { signal: 'MemAvailable', belowMiB: o.lineMiB };
    log(`  lines: common ${describeLine(common)}; evictd and kubelet memory.available < ${cal.evictdLineMiB} MiB, oomd MemFree < ${cal.oomdFreeLineMiB} MiB (${cal.note})`);
    log(`  time scale: ${o.lineMiB} MiB at r MiB/s leaves ${o.lineMiB}/r s, as ${o.realMarginMiB} MiB at ${round(scale, 2)}r does on a real node`);
    const runnable: Contender[] = [];
    for (const c of o.contenders) {
      configs[c.name] = c.config(ctx);
      const why = c.missing(ctx);
      if (why) {
        notRun.set(c.name, why);
        log(`  ${c.name}: not run: ${why}`);
      } else {
        runnable.push(c);
        log(`  ${c.name}: ${configs[c.name]}`);
      }
    }
    if (o.json) {
      const header: RunHeader = {
        environment: env,
        lineMiB: o.lineMiB,
        evictdLineMiB: ctx.evictdLineMiB,
        oomdFreeLineMiB: ctx.oomdFreeLineMiB,
        calibration: cal.note,
        realMarginMiB: o.realMarginMiB,
        rates: o.rates,
        trials: o.trials,
        contenders: runnable.map((c) => c.name),
        configs,
        ownLines: Object.fromEntries(o.contenders.map((c) => [c.name, describeLine(c.ownLine(ctx))])),
      };
      process.stdout.write(toJson({ run: header }) + '\n');
    }
    const startFailures = new Map<string, string[]>();
    for (const [ri, rate] of o.rates.entries()) {
      for (let i = 0; i < o.trials; i++) {
        for (const c of trialOrder(runnable, i + ri)) {
          if (notRun.has(c.name)) continue;
          const before = meminfo().available;
          let running: RunningContender;
          try {
            running = await c.start(ctx);
          } catch (err) {
            // A start that fails twice in a row is the contender's state, not chance: stop asking.
            const fails = [...(startFailures.get(c.name) ?? []), (err as Error).message];
            startFailures.set(c.name, fails);
            log(`    ${c.name} ${rate} MiB/s #${i + 1}: failed to start: ${(err as Error).message}`);
            if (err instanceof ContenderUnavailable) notRun.set(c.name, (err as Error).message);
            else if (fails.length >= 2) notRun.set(c.name, `failed to start: ${fails[fails.length - 1]}`);
            continue;
          }
          startFailures.delete(c.name);
          try {
            const { raw: _raw, ...t } = await runTrial(lab, c, pods, rate, i, { own: c.ownLine(ctx), common }, trace, { contenderPid: running.pid });
            trials.push(t);
            // Each trial as it ends: a run cut short still renders (--from).
            if (o.json) process.stdout.write(toJson({ trial: t }) + '\n');
            log(
              `    ${c.name} ${rate} MiB/s #${i + 1}: ${t.outcome} via ${t.via}, first kill ${t.kill ? `${t.kill.by === t.kill.sender.replace(/-\d+$/, '') ? t.kill.sender : `${t.kill.by} [${t.kill.sender}]`} sig ${t.kill.sig}` : '-'}, reaction own ${formatMs(t.ownReactionMs)}${t.ownInferred ? ' (inferred)' : ''} / common ${formatMs(t.commonReactionMs)} ms, left ${t.availableAtKillMiB ?? '-'} / ${t.kubeletAtKillMiB ?? '-'} MiB, reached ${round(t.reachedRateMiBs, 0) ?? '-'} MiB/s${t.protectedLost.length ? `, LOST ${t.protectedLost.join(' ')} (recreated)` : ''}`,
            );
          } catch (err) {
            // One trial's failure (a CRI call timing out under emulation) ends that trial only.
            errors.push(`${c.name} ${rate} MiB/s #${i + 1}: ${(err as Error).message}`);
            log(`    ${c.name} ${rate} MiB/s #${i + 1}: trial failed: ${(err as Error).message}`);
          } finally {
            // After the trial: what evictd armed is logged by its first pass, not at its start.
            if (running.ran) ran[c.name] = running.ran;
            await running.stop();
          }
          pods = await replaceLostPods(lab, pods);
          await settle(before);
        }
      }
    }
    const cells: Cell[] = o.rates.flatMap((rate) =>
      o.contenders.map((c) => {
        const ts = trials.filter((t) => t.contender === c.name && t.rateMiBs === rate);
        const why = notRun.get(c.name);
        const cell = why !== undefined && !ts.length ? notRunCell(c.name, rate, why) : cellOf(c.name, rate, ts, scale);
        cell.ownLine = describeLine(c.ownLine(ctx));
        return cell;
      }),
    );
    if (o.json) for (const cell of cells) process.stdout.write(toJson({ cell, config: configs[cell.contender] }) + '\n');
    const summary: Summary = { bench: 'protect-peers', environment: env, lineMiB: o.lineMiB, evictdLineMiB: ctx.evictdLineMiB, oomdFreeLineMiB: ctx.oomdFreeLineMiB, calibration: cal.note, realMarginMiB: o.realMarginMiB, rates: o.rates, trials: o.trials, contenders: o.contenders.map((c) => c.name), cells, configs, ran, errors, seconds: round((Date.now() - t0) / 1000, 0) ?? 0 };
    const r = printReport(summary, log, o.svg);
    if (o.json) process.stdout.write(toJson({ ...summary, ratios: r.map((x) => ({ rateMiBs: x.rateMiBs, own: x.own, common: x.common, p95BelowPeerMedian: x.p95BelowPeerMedian, peer: x.peer?.contender ?? null, text: x.text })), favours: whatFavoursWhom(cells), svg: o.svg }) + '\n');
  } finally {
    trace.close();
    await session.close();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
  return 0;
}
