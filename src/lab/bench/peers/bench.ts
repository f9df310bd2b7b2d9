/**
 * `evictd bench protect --peers`: on one node (the whole machine: in the lab, a pure cgroup v2
 * VM of fixed memory, no swap), the same pods (a Guaranteed pod holding the largest process, a
 * small Burstable pod, a BestEffort hog ramping toward more than the node has) and one
 * contender at a time, does the contender stop the hog before the kernel OOM killer, how soon
 * after the line, with how much memory left, and through the runtime or by a bare kill?
 *
 * The headline is what the node's other pods feel: from the common line (the hog's first reading
 * with MemAvailable below it) until the probe in the protected Guaranteed pod reads memory back
 * above it (probe.ts), with that pod's worst stall beside it. Every kill is timed by the kernel
 * (signal-trace.ts), every crossing by the hog itself (reaction.ts). Contenders run as on a
 * node: per cell (rate) each is started once, warmed with one throwaway ramp and kept running,
 * frozen while another's trial runs (freezer.ts); trials are interleaved in a Williams design
 * (williams.ts, seeded), so a noisy neighbour hits all alike and every contender follows every
 * other equally often; each cell reports medians with a 95% interval, and evictd's ratio to the
 * best peer a bootstrap interval (bootstrap.ts).
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
import { onInterrupt } from '../../interrupt';
import { openLabSession } from '../../lab-session';
import { round } from '../../stats';
import type { Contender, ContenderContext, RunningContender } from './contender';
import { ContenderUnavailable, setOomScoreAdj } from './contender';
import { ContenderGroups, ownCgroupDir, schedulingOf } from './freezer';
import { designRows, trialOrders } from './williams';
import { BOOTSTRAP_REPS, BOOTSTRAP_SEED } from './bootstrap';
import { stderrLine, stdoutLine } from './out';
import { shipped, startAgent } from './evictd';
import { meminfo } from './meminfo';
import { parse, USAGE } from './options';
import { replaceLostPods, startProtectedPods, type ProtectedPods } from './pods';
import { calibrateCell, calibrateEmpty, FLOOR_LINE_MIB } from './calibrate';
import { LineTracker } from './line-tracker';
import { describeLine, type Line } from './reaction';
import { cellOf, formatMs, notRunCell, toJson, withMovedLine, type Cell } from './report';
import { whatFavoursWhom } from './fairness';
import { printReport, readSummary, type RunHeader, type Summary } from './summary';
import { SignalTrace, tracefsMissing } from './signal-trace';
import { runTrial, settle, type Trial } from './trial';

const MiB = 1024 * 1024;

/** Ramps with no agent at the run's start: a reference only (what evictd's presence moves). */
const REFERENCE_RAMPS = 2;
/** Every contender, thawed, gets the same time before its ramp starts: to catch up on what it missed while frozen. */
const SETTLE_AFTER_THAW_MS = 2000;

/** Why this machine cannot be the bench's node, or null. */
function machineMissing(force: boolean): string | null {
  const missing = harnessMissing();
  if (missing) return missing;
  if (detectCgroups().memoryVersion !== 2)
    return 'needs pure cgroup v2 (oomd and the whole-machine node): run it in the lab, e.g. scripts/v2vm/run --mem 1024 -- node bin/evictd.js bench protect --peers';
  const totalMiB = os.totalmem() / MiB;
  if (totalMiB > 8192 && !force)
    return `the whole machine (${Math.round(totalMiB)} MiB) is the node and would be filled: run it in a VM of 1-2 GiB (the lab), or pass --force`;
  return tracefsMissing();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const log = (s: string): void => (o.json ? stderrLine : stdoutLine)(s);
  const t0 = Date.now();
  // The bench (the kubelet's place on a node) and the runtime must outlive every trial.
  setOomScoreAdj(process.pid, -999);
  // Emulated CPUs under load: a first RunPodSandbox took over 5 s in the VM.
  const session = await openLabSession({ name: 'evictd-bench-peers', memoryLimitBytes: null, logDir: 'bench-peers', clientTimeoutMs: 30_000 });
  const { harness, lab } = session;
  const cpid = harness.containerdPid();
  if (cpid) setOomScoreAdj(cpid, -999);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-peers-'));
  fs.mkdirSync(o.logs, { recursive: true });
  const trace = SignalTrace.open(`evictd-peers-${process.pid}`);
  const ctx: ContenderContext = {
    lab,
    endpoint: harness.endpoint,
    lineMiB: o.lineMiB,
    evictdLineMiB: o.lineMiB,
    oomdFreeLineMiB: o.lineMiB,
    workDir,
    scheduling: o.scheduling,
    logDir: o.logs,
  };
  const groups = new ContenderGroups(path.join(ownCgroupDir(), `evictd-bench-peers-${process.pid}`));
  const scale = o.realMarginMiB / o.lineMiB;
  const configs: Record<string, string> = {};
  const ran: Record<string, string> = {};
  const notRun = new Map<string, string>();
  const trials: Trial[] = [];
  const errors: string[] = [];
  const orders: Record<string, string[][]> = {};
  const cellLines: NonNullable<Summary['cellLines']> = {};
  const lineMoves: NonNullable<Summary['lineMoves']> = {};
  const live = new Map<string, RunningContender>();
  /** the line each running contender on the kubelet's signal was started with, MiB (it moves through a cell: line-tracker.ts) */
  const lineOf = new Map<string, number>();
  /** the cell's readings of the kubelet's number at the common line */
  let tracker: LineTracker | null = null;
  const onKubeletSignal = (c: Contender) => c.ownLine(ctx).signal === 'memory.available';
  // At the end, or on SIGINT/SIGTERM mid-run: the contenders thawed and stopped, their groups
  // and the lab's pods removed (once, whichever comes first).
  let ending: Promise<void> | null = null;
  const cleanUp = (): Promise<void> =>
    (ending ??= (async () => {
      for (const name of [...live.keys()]) {
        await groups.freeze(name, false).catch(() => undefined);
        await live
          .get(name)!
          .stop()
          .catch(() => undefined);
      }
      groups.close();
      trace.close();
      await session.close();
      fs.rmSync(workDir, { recursive: true, force: true });
    })());
  const forget = onInterrupt(cleanUp);
  try {
    const m = meminfo();
    const bigMiB = Math.max(64, Math.floor((m.available / MiB) * 0.4));
    let pods: ProtectedPods = await startProtectedPods(lab, bigMiB, o.lineMiB * 1024);
    const env = `${describeEnvironment()} (${os.cpus()[0]?.model ?? ''}), MemTotal ${Math.round(m.total / MiB)} MiB, ${fs.readFileSync('/proc/meminfo', 'utf8').match(/^SwapTotal:\s+(\d+)/m)?.[1] === '0' ? 'no swap' : 'swap on'}`;
    log(`bench protect --peers: ${env}`);
    log(
      `  node = the whole machine; pods: Guaranteed ${bigMiB} MiB (the largest process, oom_score_adj -997; its process is the probe: a page touched every 1 ms, its stalls and MemAvailable < ${o.lineMiB} MiB logged), Burstable (request 32Mi), BestEffort hog (1000) ramping past MemAvailable`,
    );
    log(
      `  scheduling: ${o.scheduling}; order seed ${o.seed}; logs in ${o.logs}; ${o.warmUp ? 'one warm-up ramp per contender and cell (not counted)' : 'no warm-up ramp (--quick)'}`,
    );
    const startFailures = new Map<string, string[]>();
    const sched = new Map<string, string>();

    /** Starts the contender for this cell, in its own group, and freezes it; false when it could not start. */
    const startOne = async (c: Contender, rate: number, tag = `${rate}MiBs`): Promise<boolean> => {
      let running: RunningContender;
      try {
        running = await c.start({ ...ctx, logTag: tag });
      } catch (err) {
        // A start that fails twice in a row is the contender's state, not chance: stop asking.
        const fails = [...(startFailures.get(c.name) ?? []), (err as Error).message];
        startFailures.set(c.name, fails);
        log(`    ${c.name} ${rate} MiB/s: failed to start: ${(err as Error).message}`);
        if (err instanceof ContenderUnavailable) notRun.set(c.name, (err as Error).message);
        else if (fails.length >= 2) notRun.set(c.name, `failed to start: ${fails[fails.length - 1]}`);
        return false;
      }
      startFailures.delete(c.name);
      live.set(c.name, running);
      if (onKubeletSignal(c)) lineOf.set(c.name, ctx.evictdLineMiB);
      if (running.pid) {
        groups.place(c.name, running.pid);
        const how = schedulingOf(running.pid);
        if (how) sched.set(c.name, how);
        await groups.freeze(c.name, true);
      }
      return true;
    };

    const stopOne = async (name: string): Promise<void> => {
      const running = live.get(name);
      if (!running) return;
      live.delete(name);
      lineOf.delete(name);
      // A frozen process cannot act on SIGTERM: thaw it first.
      if (running.pid) await groups.freeze(name, false).catch(() => undefined);
      if (running.ran) ran[name] = running.ran;
      await running.stop();
    };

    const runnable = o.contenders.filter((c) => c.missing(ctx) === null);
    // A reference: where the signals part on a node with no agent. Each cell then takes its own
    // lines as its evictd trials find the node (calibrate.ts calibrateCell).
    const ref = await calibrateEmpty(lab, pods, o.rates[0]!, o.lineMiB, Math.min(REFERENCE_RAMPS, o.calibrationRamps), trace, log);
    pods = await replaceLostPods(lab, pods);
    ctx.evictdLineMiB = ref.evictdLineMiB;
    ctx.oomdFreeLineMiB = ref.oomdFreeLineMiB;
    const common: Line = { signal: 'MemAvailable', belowMiB: o.lineMiB };
    log(`  lines: common ${describeLine(common)}; evictd's, the kubelet's and oomd's calibrated per cell`);
    log(`  time scale: ${o.lineMiB} MiB at r MiB/s leaves ${o.lineMiB}/r s, as ${o.realMarginMiB} MiB at ${round(scale, 2)}r does on a real node`);
    for (const c of o.contenders) {
      const why = c.missing(ctx);
      if (why) {
        notRun.set(c.name, why);
        log(`  ${c.name}: not run: ${why}`);
      }
    }
    const rows = designRows(runnable.length);
    log(
      `  order: a Williams design of ${rows} rows over ${runnable.length} contenders, labels shuffled by seed ${o.seed}${o.trials % rows === 0 ? '' : ` (${o.trials} trials is not a multiple of ${rows}: the last ${o.trials % rows} rows are a partial square, so the balance is not exact)`}`,
    );
    const header: RunHeader = {
      environment: env,
      lineMiB: o.lineMiB,
      evictdLineMiB: ctx.evictdLineMiB,
      oomdFreeLineMiB: ctx.oomdFreeLineMiB,
      calibration: ref.note,
      calibrationSets: { ...(ref.noAgent ? { noAgent: ref.noAgent } : {}) },
      cellLines,
      lineMoves,
      realMarginMiB: o.realMarginMiB,
      rates: o.rates,
      trials: o.trials,
      contenders: runnable.map((c) => c.name),
      scheduling: o.scheduling,
      seed: o.seed,
      warmUp: o.warmUp,
      orders,
      configs,
      ownLines: Object.fromEntries(o.contenders.map((c) => [c.name, describeLine(c.ownLine(ctx))])),
    };
    const ownLinesAt: Record<string, Record<string, string>> = {};
    o.rates.forEach(
      (rate, ri) =>
        (orders[String(rate)] = trialOrders(
          runnable.map((c) => c.name),
          o.trials,
          o.seed + ri,
        )),
    );
    if (o.json) stdoutLine(toJson({ run: header }));
    /** One ramp against the contender, thawed for it and frozen again after; counted or a warm-up. */
    const oneTrial = async (c: Contender, rate: number, index: number | string, counted: boolean): Promise<void> => {
      const label = `${c.name} ${rate} MiB/s ${counted ? `#${Number(index) + 1}` : 'warm-up'}`;
      const from = lineOf.get(c.name);
      const to = counted && from !== undefined && live.get(c.name)?.alive?.() !== false ? (tracker?.moveFrom(from) ?? null) : null;
      if (to !== null && from !== undefined) {
        // The cell's own readings put the line elsewhere: restarted on it, and warmed again.
        const readings = tracker!.readings();
        log(
          `    ${c.name}: line moved from memory.available < ${from} to < ${to} MiB (the median of ${readings.length} readings where MemAvailable crossed the common line); restarted and warmed again`,
        );
        lineMoves[String(rate)]!.push({ contender: c.name, beforeTrial: Number(index) + 1, fromMiB: from, toMiB: to, readings: readings.length });
        await stopOne(c.name);
        ctx.evictdLineMiB = to;
        if (!(await startOne(c, rate, `${rate}MiBs-line${to}`))) return;
        configs[c.name] = c.config(ctx);
        await oneTrial(c, rate, 'warm', false);
      }
      // Each contender on the kubelet's signal is timed against the line it runs with.
      const line = lineOf.get(c.name);
      if (line !== undefined) ctx.evictdLineMiB = line;
      let running = live.get(c.name);
      if (running?.alive && !running.alive()) {
        log(`    ${label}: it had exited: started again`);
        await stopOne(c.name);
        running = undefined;
      }
      if (!running) {
        if (notRun.has(c.name) || !(await startOne(c, rate))) return;
        running = live.get(c.name)!;
      }
      const before = meminfo().available;
      if (running.pid) await groups.freeze(c.name, false);
      await sleep(SETTLE_AFTER_THAW_MS);
      try {
        const { raw: _raw, ...measured } = await runTrial(lab, c, pods, rate, index, { own: c.ownLine(ctx), common }, trace, { contenderPid: running.pid });
        const t: Trial = line === undefined ? measured : { ...measured, ownLineMiB: line };
        // The trials of the peers on MemAvailable read the kubelet's number at the common line, uncensored (they never act before it).
        if (c.ownLine(ctx).signal === 'MemAvailable') tracker?.add(t.kubeletAtCommonMiB);
        if (counted) trials.push(t);
        // Each trial as it ends: a run cut short still renders (--from). Warm-ups are recorded apart, with the probe's events but not the hog's readings.
        if (o.json) stdoutLine(toJson(counted ? { trial: t } : { warmUp: { ...t, readings: undefined } }));
        log(
          `    ${label}: ${t.outcome} via ${t.via}, first kill ${t.kill ? `${t.kill.by === t.kill.sender.replace(/-\d+$/, '') ? t.kill.sender : `${t.kill.by} [${t.kill.sender}]`} sig ${t.kill.sig}` : '-'}; common line -> memory back ${formatMs(t.commonToBackMs ?? null)} ms, -> exit ${formatMs(t.commonToExitMs ?? null)} ms; worst stall ${formatMs(t.worstStallMs ?? null)} ms; MemAvailable min ${t.minAvailableMiB ?? '-'} MiB; reaction own ${formatMs(t.ownReactionMs)}${t.ownInferred ? ' (inferred)' : ''} ms; reached ${round(t.reachedRateMiBs, 0) ?? '-'} MiB/s${t.protectedLost.length ? `, LOST ${t.protectedLost.join(' ')} (recreated)` : ''}`,
        );
      } catch (err) {
        // One trial's failure (a CRI call timing out under emulation) ends that trial only.
        if (counted) errors.push(`${label}: ${(err as Error).message}`);
        log(`    ${label}: trial failed: ${(err as Error).message}`);
      } finally {
        if (running.pid && running.alive?.() !== false) await groups.freeze(c.name, true).catch((err: Error) => log(`    ${c.name}: ${err.message}`));
        // What evictd armed is logged by its first pass, not at its start.
        if (running.ran) ran[c.name] = running.ran;
      }
      pods = await replaceLostPods(lab, pods);
      await settle(before);
    };

    for (const rate of o.rates) {
      log(`  cell ${rate} MiB/s asked: starting ${runnable.map((c) => c.name).join(', ')}, each in a frozen cgroup of its own`);
      try {
        // The peers on MemAvailable first: resident and frozen while the cell's lines are taken.
        for (const c of runnable) if (!notRun.has(c.name) && c.ownLine(ctx).signal === 'MemAvailable') await startOne(c, rate);
        const startArmed = () =>
          startAgent({ ...ctx, evictdLineMiB: FLOOR_LINE_MIB, logTag: `calibration-${rate}` }, shipped(ctx), true, `evictd-calibration-${rate}`);
        const cal = await calibrateCell(lab, pods, rate, o.lineMiB, o.calibrationRamps, trace, startArmed, ref, o.warmUp, log);
        pods = await replaceLostPods(lab, pods);
        ctx.evictdLineMiB = cal.evictdLineMiB;
        ctx.oomdFreeLineMiB = cal.oomdFreeLineMiB;
        tracker = o.trackLine ? new LineTracker(cal.withEvictd?.kubeletMiB ?? []) : null;
        lineMoves[String(rate)] = [];
        cellLines[String(rate)] = {
          evictdLineMiB: cal.evictdLineMiB,
          oomdFreeLineMiB: cal.oomdFreeLineMiB,
          note: cal.note,
          ...(cal.withEvictd ? { withEvictd: cal.withEvictd } : {}),
        };
        ownLinesAt[String(rate)] = Object.fromEntries(o.contenders.map((c) => [c.name, describeLine(c.ownLine(ctx))]));
        if (o.json) stdoutLine(toJson({ cellLines: { rateMiBs: rate, ...cellLines[String(rate)]!, ownLines: ownLinesAt[String(rate)] } }));
        log(`  lines at ${rate} MiB/s: evictd and kubelet memory.available < ${cal.evictdLineMiB} MiB, oomd MemFree < ${cal.oomdFreeLineMiB} MiB`);
        for (const c of runnable) {
          if (notRun.has(c.name)) continue;
          configs[c.name] = c.config(ctx);
          log(`  ${c.name}: ${configs[c.name]}`);
          if (!live.has(c.name)) await startOne(c, rate);
        }
        if (o.warmUp) for (const c of runnable) if (!notRun.has(c.name)) await oneTrial(c, rate, 'warm', false);
        for (const [i, row] of orders[String(rate)]!.entries()) {
          for (const name of row) {
            const c = runnable.find((x) => x.name === name)!;
            if (!notRun.has(c.name)) await oneTrial(c, rate, i, true);
          }
        }
      } finally {
        for (const name of [...live.keys()]) await stopOne(name);
        tracker = null;
        // The moves, recorded as the cell ends (--from reads them with the cell's lines).
        if (o.json && lineMoves[String(rate)]?.length) stdoutLine(toJson({ lineMoves: { rateMiBs: rate, moves: lineMoves[String(rate)] } }));
      }
    }
    for (const [name, how] of sched) ran[name] = ran[name] ? `${ran[name]}; scheduling as read: ${how}` : `scheduling as read: ${how}`;
    const cells: Cell[] = o.rates.flatMap((rate) =>
      o.contenders.map((c) => {
        const ts = trials.filter((t) => t.contender === c.name && t.rateMiBs === rate);
        const why = notRun.get(c.name);
        const cell = why !== undefined && !ts.length ? notRunCell(c.name, rate, why) : cellOf(c.name, rate, ts, scale);
        cell.ownLine = ownLinesAt[String(rate)]?.[c.name] ?? describeLine(c.ownLine(ctx));
        return withMovedLine(cell);
      }),
    );
    if (o.json) for (const cell of cells) stdoutLine(toJson({ cell, config: configs[cell.contender] }));
    const { ownLines: _o, ...rest } = header;
    const summary: Summary = {
      bench: 'protect-peers',
      ...rest,
      contenders: o.contenders.map((c) => c.name),
      cells,
      ran,
      errors,
      seconds: round((Date.now() - t0) / 1000, 0) ?? 0,
    };
    const r = printReport(summary, log, o.svg);
    if (o.json)
      stdoutLine(
        toJson({
          ...summary,
          ratios: r.map((x) => ({
            rateMiBs: x.rateMiBs,
            reachedRateMiBs: x.evictd?.reachedRateMiBs ?? null,
            peer: x.peer?.contender ?? null,
            ratio: x.headline?.ratio ?? null,
            lo: x.headline?.lo ?? null,
            hi: x.headline?.hi ?? null,
            loses: x.loses,
            text: x.text,
          })),
          bootstrap: { reps: BOOTSTRAP_REPS, seed: BOOTSTRAP_SEED },
          favours: whatFavoursWhom(cells, o.scheduling),
          svg: o.svg,
          logs: o.logs,
        }),
      );
  } finally {
    forget();
    await cleanUp();
  }
  return 0;
}
