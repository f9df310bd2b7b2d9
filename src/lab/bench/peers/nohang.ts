/**
 * nohang 0.2 (Debian's package) as its unit runs it (`nohang --monitor --config FILE`), with
 * the stock /etc/nohang/nohang.conf and only the memory thresholds moved to the line:
 * soft_threshold_min_mem (SIGTERM) = the line, hard_threshold_min_mem (SIGKILL) = half of it,
 * as earlyoom's pair. nohang reads MemAvailable with an adaptive sleep (0.1-3 s, from its
 * fill-rate settings) and picks the victim by badness = oom_score. A bare kill.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, which, type Contender, type ContenderContext } from './contender';

const STOCK = '/etc/nohang/nohang.conf';

function configFile(ctx: ContenderContext): string {
  const stock = fs.readFileSync(STOCK, 'utf8');
  const text = stock
    .replace(/^soft_threshold_min_mem\s*=.*$/m, `soft_threshold_min_mem = ${ctx.lineMiB} M`)
    .replace(/^hard_threshold_min_mem\s*=.*$/m, `hard_threshold_min_mem = ${Math.max(1, Math.floor(ctx.lineMiB / 2))} M`);
  const file = path.join(ctx.workDir, 'nohang.conf');
  fs.writeFileSync(file, text);
  return file;
}

export const nohang: Contender = {
  name: 'nohang',
  stops: 'bare kill',
  missing: () => (!which('nohang') ? 'nohang is not installed (apt-get install --no-install-recommends nohang)' : !fs.existsSync(STOCK) ? `${STOCK} missing` : null),
  config: (ctx) =>
    `nohang --monitor --config <stock ${STOCK} with soft_threshold_min_mem = ${ctx.lineMiB} M, hard_threshold_min_mem = ${Math.max(1, Math.floor(ctx.lineMiB / 2))} M>: SIGTERM when MemAvailable < the line, SIGKILL below half; victim by oom_score`,
  start: (ctx) => startDaemon(ctx, 'nohang', 'nohang', ['--monitor', '--config', configFile(ctx)], /[Mm]onitoring has started/),
};
