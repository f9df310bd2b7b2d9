/**
 * The options of `evictd bench protect --peers`: its contenders, its flags and their defaults.
 */
import path from 'node:path';
import { badValue, UsageError } from '../../../errors';
import { eachFlag, parseRates, parseWhole as whole } from '../../flags';
import type { Contender, Scheduling } from './contender';
import { earlyoom } from './earlyoom';
import { evictd, evictdBase, evictdNoReap, evictdPageable, evictdPoll } from './evictd';
import { kernel } from './kernel';
import { kubelet } from './kubelet';
import { nohang } from './nohang';
import { oomd } from './oomd';
import { systemdOomd } from './systemd-oomd';

/** Every contender the bench knows; evictd-poll and evictd-pageable only when named (one evictd row per configuration users run). */
export const CONTENDERS: Contender[] = [evictd, evictdPoll, evictdPageable, evictdNoReap, evictdBase, kubelet, earlyoom, nohang, oomd, systemdOomd, kernel];
/** evictd's other configurations and the A/B rows run only when named: one evictd row per configuration users run. */
const NAMED_ONLY: readonly Contender[] = [evictdPoll, evictdPageable, evictdNoReap, evictdBase];
const DEFAULT_CONTENDERS = CONTENDERS.filter((c) => !NAMED_ONLY.includes(c));

const DEFAULT_TRIALS = 20;
const QUICK_TRIALS = 1;
/**
 * Calibration ramps per cell: fewer when the run is short. The kubelet's number sits a
 * different distance above MemAvailable in each ramp (121-142 MiB in one run of 18, constant
 * within a ramp's last 80 MiB), so its median needs more than a few ramps: 8 put it within
 * about 2.5 MiB (one standard error), 2 within about 5.
 */
const CALIBRATION_RAMPS = 8;
const CALIBRATION_RAMPS_SHORT = 4;
export const USAGE = `usage: evictd bench protect --peers[=LIST] [--rates LIST] [--trials N | --quick] [--scheduling tight|normal] [--seed N]
                     [--line-mib N] [--logs DIR] [--json] [--svg FILE] [--from FILE]

  Runs on the whole machine as the node: use a pure cgroup v2 VM of fixed memory (the lab),
  with tracefs (every kill is timed by the kernel's signal_generate).
  --peers[=LIST]      contenders (default: ${DEFAULT_CONTENDERS.map((c) => c.name).join(',')}); also ${NAMED_ONLY.map((c) => c.name).join(', ')}
                      (evictd-base: the build at $EVICTD_BENCH_BASELINE, for an A/B)
  --rates LIST        hog ramp rates asked, MiB/s on this machine (default 50,200: in the lab 200 is
                      already what the hog reaches at most; 400 asked reached 45-214)
  --trials N          counted ramps per contender and rate (default ${DEFAULT_TRIALS}); a multiple of the design's
                      rows (the number of contenders run, twice that when it is odd) balances the order
  --quick             ${QUICK_TRIALS} trial per cell, 1 calibration ramp per cell (no first ramp), no warm-up ramp (a smoke run: no 95% interval)
                      (calibration: ${CALIBRATION_RAMPS} ramps per cell, ${CALIBRATION_RAMPS_SHORT} under ${DEFAULT_TRIALS} trials, after one not used)
  --scheduling V      tight (default): each contender at its tightest documented setting (earlyoom -p,
                      nohang SCHED_RR 1 as its unit documents, evictd --realtime-priority=10 as shipped);
                      normal: every one at normal scheduling. The kubelet and kernel rows are the same in both
  --seed N            shuffles the contenders' places in the trial order (default: from the clock; printed)
  --line-mib N        the MemAvailable line every contender gets (default 32)
  --real-margin-mib N the real node's margin the rows are scaled to (default 100, the kubelet's line)
  --logs DIR          every contender's log, kept (default ./evictd-bench-peers-logs)
  --svg FILE          the chart (default ./evictd-bench-peers.svg)
  --json              a header line, one JSON line per trial as it ends, one per cell, then the summary
  --from FILE         run nothing: print the tables of a saved --json run and write its chart (a run
                      cut short, with no summary, is rendered from its header and trials)`;

interface Options {
  contenders: Contender[];
  rates: number[];
  trials: number;
  calibrationRamps: number;
  warmUp: boolean;
  /** evictd's line moves with the cell's readings (line-tracker.ts); not in a smoke run, whose one trial has nothing to follow */
  trackLine: boolean;
  scheduling: Scheduling;
  seed: number;
  lineMiB: number;
  realMarginMiB: number;
  logs: string;
  svg: string;
  json: boolean;
  force: boolean;
  /** render a saved --json run (its last line) instead of running */
  from: string | null;
}

export function parse(argv: string[], now = Date.now()): Options {
  const o: Options = {
    contenders: DEFAULT_CONTENDERS,
    rates: [50, 200],
    trials: DEFAULT_TRIALS,
    calibrationRamps: CALIBRATION_RAMPS,
    warmUp: true,
    trackLine: true,
    scheduling: 'tight',
    seed: now % 1_000_000_007,
    lineMiB: 32,
    realMarginMiB: 100,
    logs: path.resolve('evictd-bench-peers-logs'),
    svg: path.resolve('evictd-bench-peers.svg'),
    json: false,
    force: false,
    from: null,
  };
  let trials: number | null = null;
  let quick = false;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--peers') {
      if (!raw.includes('=')) return;
      const v = value();
      const names = v.split(',').map((x) => x.trim());
      const unknown = names.find((n) => !CONTENDERS.some((c) => c.name === n));
      if (unknown !== undefined)
        throw badValue('--peers', v, `unknown contender ${JSON.stringify(unknown)} (one of ${CONTENDERS.map((c) => c.name).join(', ')})`);
      o.contenders = CONTENDERS.filter((c) => names.includes(c.name));
    } else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else if (flag === '--trials') trials = whole('--trials', value(), 1, 100);
    else if (flag === '--quick') quick = true;
    else if (flag === '--scheduling') {
      const v = value();
      if (v !== 'tight' && v !== 'normal') throw badValue('--scheduling', v, 'must be tight or normal');
      o.scheduling = v;
    } else if (flag === '--seed') o.seed = whole('--seed', value(), 0, 2 ** 31 - 1);
    else if (flag === '--line-mib') o.lineMiB = whole('--line-mib', value(), 8, 4096);
    else if (flag === '--real-margin-mib') o.realMarginMiB = whole('--real-margin-mib', value(), 8, 65536);
    else if (flag === '--logs') o.logs = path.resolve(value());
    else if (flag === '--svg') o.svg = path.resolve(value());
    else if (flag === '--json') o.json = true;
    else if (flag === '--force') o.force = true;
    else if (flag === '--from') o.from = value();
    else throw new UsageError(`bench protect --peers: unknown flag ${JSON.stringify(raw)}`);
  });
  // --trials wins over --quick's count, whatever the order.
  o.trials = trials ?? (quick ? QUICK_TRIALS : DEFAULT_TRIALS);
  o.calibrationRamps = quick ? 1 : o.trials < DEFAULT_TRIALS ? CALIBRATION_RAMPS_SHORT : CALIBRATION_RAMPS;
  o.warmUp = !quick;
  o.trackLine = !quick;
  return o;
}
