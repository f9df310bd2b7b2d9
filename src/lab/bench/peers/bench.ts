/**
 * `evictd bench protect --peers`: on one node (the whole machine: in the lab, a pure cgroup v2
 * VM of fixed memory, no swap), the same pods (a Guaranteed pod holding the largest process, a
 * small Burstable pod, a BestEffort hog ramping toward more than the node has) and one
 * contender at a time, does the contender stop the hog before the kernel OOM killer, how soon
 * after the line, with how much memory left, and through the runtime or by a bare kill?
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
import { setOomScoreAdj } from './contender';
import { earlyoom } from './earlyoom';
import { evictd, evictdPoll } from './evictd';
import { kernel } from './kernel';
import { kubelet } from './kubelet';
import { meminfo } from './meminfo';
import { nohang } from './nohang';
import { oomd } from './oomd';
import { startProtectedPods } from './pods';
import { calibrate } from './calibrate';
import { cellOf, notRunCell, ratios, renderTable, svg, type Cell } from './report';
import { runTrial, settle, type Trial } from './trial';
import { systemdOomd } from './systemd-oomd';

const MiB = 1024 * 1024;

export const CONTENDERS: Contender[] = [evictd, evictdPoll, kubelet, earlyoom, nohang, oomd, systemdOomd, kernel];

export const USAGE = `usage: evictd bench protect --peers[=LIST] [--rates LIST] [--trials N] [--line-mib N] [--json] [--svg FILE]

  Runs on the whole machine as the node: use a pure cgroup v2 VM of fixed memory (the lab).
  --peers[=LIST]      contenders (default all): ${CONTENDERS.map((c) => c.name).join(',')}
  --rates LIST        hog ramp rates in MiB/s on this machine (default 50,100,200,300)
  --trials N          ramps per contender and rate (default 3)
  --line-mib N        the free-memory line every contender gets (default 32)
  --real-margin-mib N the real node's margin the rows are scaled to (default 100, the kubelet's line)
  --svg FILE          the chart (default ./evictd-bench-peers.svg)
  --json              one JSON line per cell, then the summary`;

interface Options {
  contenders: Contender[];
  rates: number[];
  trials: number;
  lineMiB: number;
  realMarginMiB: number;
  svg: string;
  json: boolean;
  force: boolean;
}

function parse(argv: string[]): Options {
  const o: Options = { contenders: CONTENDERS, rates: [50, 100, 200, 300], trials: 3, lineMiB: 32, realMarginMiB: 100, svg: path.resolve('evictd-bench-peers.svg'), json: false, force: false };
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--peers') {
      if (!raw.includes('=')) return;
      const v = value();
      const names = v.split(',').map((x) => x.trim());
      const unknown = names.find((n) => !CONTENDERS.some((c) => c.name === n));
      if (unknown !== undefined) throw badValue('--peers', v, `unknown contender ${JSON.stringify(unknown)} (one of ${CONTENDERS.map((c) => c.name).join(', ')})`);
      o.contenders = CONTENDERS.filter((c) => names.includes(c.name));
    } else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else if (flag === '--trials') o.trials = whole('--trials', value(), 1, 100);
    else if (flag === '--quick') o.trials = 1;
    else if (flag === '--line-mib') o.lineMiB = whole('--line-mib', value(), 8, 4096);
    else if (flag === '--real-margin-mib') o.realMarginMiB = whole('--real-margin-mib', value(), 8, 65536);
    else if (flag === '--svg') o.svg = path.resolve(value());
    else if (flag === '--json') o.json = true;
    else if (flag === '--force') o.force = true;
    else throw new UsageError(`bench protect --peers: unknown flag ${JSON.stringify(raw)}`);
  });
  return o;
}

/** Why this machine cannot be the bench's node, or null. */
function machineMissing(force: boolean): string | null {
  const missing = harnessMissing();
  if (missing) return missing;
  if (detectCgroups().memoryVersion !== 2) return 'needs pure cgroup v2 (oomd and the whole-machine node): run it in the lab, e.g. scripts/v2vm/run --mem 1024 -- node bin/evictd.js bench protect --peers';
  const totalMiB = os.totalmem() / MiB;
  if (totalMiB > 8192 && !force) return `the whole machine (${Math.round(totalMiB)} MiB) is the node and would be filled: run it in a VM of 1-2 GiB (the lab), or pass --force`;
  return null;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const o = parse(argv);
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
  const ctx: ContenderContext = { lab, endpoint: harness.endpoint, lineMiB: o.lineMiB, evictdLineMiB: o.lineMiB, workDir };
  const scale = o.realMarginMiB / o.lineMiB;
  const cells: Cell[] = [];
  const configs: Record<string, string> = {};
  const ran: Record<string, string> = {};
  const trials: Trial[] = [];
  try {
    const m = meminfo();
    const bigMiB = Math.max(64, Math.floor((m.available / MiB) * 0.4));
    const pods = await startProtectedPods(lab, bigMiB);
    const env = `${describeEnvironment()} (${os.cpus()[0]?.model ?? ''}), MemTotal ${Math.round(m.total / MiB)} MiB, ${fs.readFileSync('/proc/meminfo', 'utf8').match(/^SwapTotal:\s+(\d+)/m)?.[1] === '0' ? 'no swap' : 'swap on'}`;
    log(`bench protect --peers: ${env}`);
    log(`  node = the whole machine; pods: Guaranteed ${bigMiB} MiB (the largest process, oom_score_adj -997), Burstable (request 32Mi), BestEffort hog (1000) ramping past MemAvailable`);
    const before = meminfo().available;
    const cal = await calibrate(lab, pods, o.rates[0]!, o.lineMiB);
    await settle(before);
    ctx.evictdLineMiB = cal.evictdLineMiB;
    log(`  evictd's line: memory.available<${cal.evictdLineMiB}Mi (${cal.note})`);
    log(`  line: ${o.lineMiB} MiB free for every contender; ${o.lineMiB} MiB at r MiB/s leaves ${o.lineMiB}/r s, as ${o.realMarginMiB} MiB at ${round(scale, 2)}r does on a real node`);
    for (const c of o.contenders) {
      configs[c.name] = c.config(ctx);
      const why = c.missing(ctx);
      if (why) {
        for (const rate of o.rates) cells.push(notRunCell(c.name, rate, why));
        log(`  ${c.name}: not run: ${why}`);
        continue;
      }
      let running: RunningContender;
      try {
        running = await c.start(ctx);
      } catch (err) {
        const reason = `failed to start: ${(err as Error).message}`;
        for (const rate of o.rates) cells.push(notRunCell(c.name, rate, reason));
        log(`  ${c.name}: not run: ${reason}`);
        continue;
      }
      log(`  ${c.name}: ${configs[c.name]}${running.ran ? ` [ran: ${running.ran}]` : ''}`);
      try {
        for (const rate of o.rates) {
          const ts: Trial[] = [];
          for (let i = 0; i < o.trials; i++) {
            const before = meminfo().available;
            const { samples: _samples, ...t } = await runTrial(lab, c, pods, rate, i, o.lineMiB);
            ts.push(t);
            log(`    ${c.name} ${rate} MiB/s #${i + 1}: ${t.outcome} via ${t.via}, reaction ${t.reactionMs === null ? '-' : round(t.reactionMs, 0)} ms, ${t.availableAtKillMiB ?? '-'} MiB left, rate ${round(t.measuredRateMiBs, 0)} MiB/s, PSI some avg10 max ${t.psiSomeAvg10Max ?? '-'}%${t.protectedLost.length ? `, LOST ${t.protectedLost.join(' ')}` : ''}`);
            if (t.protectedLost.length) throw new Error(`protected pods lost (${t.protectedLost.join(', ')}): the node is no longer the same for the next trial`);
            await settle(before);
          }
          trials.push(...ts);
          const cell = cellOf(c.name, rate, ts, scale);
          cells.push(cell);
          if (o.json) process.stdout.write(JSON.stringify({ cell, config: configs[c.name] }) + '\n');
        }
      } catch (err) {
        const reason = `aborted: ${(err as Error).message}`;
        for (const rate of o.rates) if (!cells.some((x) => x.contender === c.name && x.rateMiBs === rate)) cells.push(notRunCell(c.name, rate, reason));
        log(`  ${c.name}: ${reason}`);
      } finally {
        // After the trials: what evictd armed is logged by its first pass, not at its start.
        if (running.ran) ran[c.name] = running.ran;
        await running.stop();
      }
      if (cells.some((x) => x.contender === c.name && x.notRun?.startsWith('aborted'))) break;
    }
    const names = o.contenders.map((c) => c.name);
    const ordered = o.rates.flatMap((r) => names.flatMap((n) => cells.filter((c) => c.contender === n && c.rateMiBs === r)));
    const title = `bench protect --peers: ${env}; line MemAvailable < ${o.lineMiB} MiB (evictd: memory.available<${ctx.evictdLineMiB}Mi) (real-node rates for a ${o.realMarginMiB} MiB margin)`;
    fs.writeFileSync(o.svg, svg(ordered, names, o.rates, title, scale));
    const r = ratios(ordered, o.rates);
    log('\n' + renderTable(ordered));
    log('\nevictd against the best peer, per rate:\n' + r.map((x) => `  ${x.rateMiBs} MiB/s: ${x.text}`).join('\n'));
    log('\nconfigurations:\n' + names.map((n) => `  ${n}: ${configs[n]}${ran[n] ? ` [ran: ${ran[n]}]` : ''}`).join('\n'));
    log(`picture: ${o.svg}   (${round((Date.now() - t0) / 1000, 0)} s)`);
    if (o.json) process.stdout.write(JSON.stringify({ bench: 'protect-peers', environment: env, lineMiB: o.lineMiB, evictdLineMiB: ctx.evictdLineMiB, calibration: cal.note, realMarginMiB: o.realMarginMiB, rates: o.rates, trials: o.trials, cells: ordered, ratios: r.map((x) => ({ rateMiBs: x.rateMiBs, text: x.text })), configs, ran, svg: o.svg }) + '\n');
  } finally {
    await session.close();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
  return 0;
}
