/**
 * nohang 0.2 (Debian's package) as its unit runs it (`nohang --monitor --config FILE`), with
 * the stock /etc/nohang/nohang.conf and these keys moved:
 * - soft_threshold_min_mem (SIGTERM) = the line, hard_threshold_min_mem (SIGKILL) = half of it,
 *   as earlyoom's pair;
 * - min_sleep = 0.01, its tightest ("valid values: >= 0.01" in the stock file; stock 0.1): nohang
 *   sleeps (MemAvailable - threshold) / fill_rate_mem, clamped to [min_sleep, max_sleep], so near
 *   the line it reads MemAvailable every 10 ms.
 * It picks the victim by badness = oom_score. A bare kill.
 *
 * Scheduling: Debian's nohang.service documents realtime scheduling for it
 * ("# Set realtime CPU scheduling policy if you want", CPUSchedulingPolicy=rr,
 * CPUSchedulingPriority=1, commented out); --scheduling tight applies exactly that (chrt -r 1,
 * which execs nohang: the same pid), --scheduling normal runs it SCHED_OTHER at nice 0.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, which, type Contender, type ContenderContext } from './contender';

const STOCK = '/etc/nohang/nohang.conf';
const MIN_SLEEP = '0.01';
/** nohang.service's documented CPUSchedulingPolicy=rr, CPUSchedulingPriority=1. */
const UNIT_RR_PRIORITY = '1';

/** The stock file with the keys above replaced; a key the file lacks is an error, not a silent default. */
export function nohangConfig(stock: string, lineMiB: number): string {
  const set: [string, string][] = [
    ['soft_threshold_min_mem', `${lineMiB} M`],
    ['hard_threshold_min_mem', `${Math.max(1, Math.floor(lineMiB / 2))} M`],
    ['min_sleep', MIN_SLEEP],
  ];
  let text = stock;
  for (const [key, value] of set) {
    const re = new RegExp(`^${key}\\s*=.*$`, 'm');
    if (!re.test(text)) throw new Error(`${STOCK} has no ${key} line: not the nohang 0.2 configuration this bench knows`);
    text = text.replace(re, `${key} = ${value}`);
  }
  return text;
}

function configFile(ctx: ContenderContext): string {
  const file = path.join(ctx.workDir, 'nohang.conf');
  fs.writeFileSync(file, nohangConfig(fs.readFileSync(STOCK, 'utf8'), ctx.lineMiB));
  return file;
}

export const nohang: Contender = {
  name: 'nohang',
  stops: 'bare kill',
  missing: (ctx) =>
    !which('nohang')
      ? 'nohang is not installed (apt-get install --no-install-recommends nohang)'
      : !fs.existsSync(STOCK)
        ? `${STOCK} missing`
        : ctx.scheduling === 'tight' && !which('chrt')
          ? 'chrt (util-linux) is missing: SCHED_RR cannot be applied'
          : null,
  config: (ctx) =>
    `nohang --monitor --config <stock ${STOCK} with soft_threshold_min_mem = ${ctx.lineMiB} M, hard_threshold_min_mem = ${Math.max(1, Math.floor(ctx.lineMiB / 2))} M, min_sleep = ${MIN_SLEEP}>: SIGTERM when MemAvailable < the line, SIGKILL below half; victim by oom_score; ${ctx.scheduling === 'tight' ? `SCHED_RR ${UNIT_RR_PRIORITY} (chrt -r ${UNIT_RR_PRIORITY}), as nohang.service documents` : 'SCHED_OTHER nice 0'}`,
  ownLine: (ctx) => ({ signal: 'MemAvailable', belowMiB: ctx.lineMiB }),
  start: (ctx) => {
    const args = ['--monitor', '--config', configFile(ctx)];
    return ctx.scheduling === 'tight'
      ? startDaemon(ctx, 'nohang', 'chrt', ['-r', UNIT_RR_PRIORITY, 'nohang', ...args], /[Mm]onitoring has started/)
      : startDaemon(ctx, 'nohang', 'nohang', args, /[Mm]onitoring has started/);
  },
};
