/**
 * earlyoom 1.7 (Debian's package) as its unit runs it (`earlyoom $EARLYOOM_ARGS`, Debian's
 * default `-r 3600`), with the line given in KiB: `-M <line KiB>`, and `-p`. earlyoom compares
 * MemAvailable with -M (SIGTERM below it, SIGKILL below half) and, with no swap, its swap
 * condition is always met; it picks the victim by oom_score, which the lab's pods carry as the
 * kubelet sets them per QoS class. Its kill is a bare signal to one process.
 *
 * Its tightest setting: 1.7 has no flag for its poll interval (an adaptive sleep of 100-1000 ms
 * from a built-in 6000 MiB/s fill rate; near the line it is 100 ms), so the only lever left is
 * `-p` (niceness -20, oom_score_adj -100), its counterpart of evictd's --realtime-priority:
 * with --scheduling tight; with --scheduling normal, without it.
 */
import { startDaemon, which, type Contender, type ContenderContext } from './contender';

const args = (ctx: ContenderContext): string[] => ['-M', String(ctx.lineMiB * 1024), '-r', '3600', ...(ctx.scheduling === 'tight' ? ['-p'] : [])];

export const earlyoom: Contender = {
  name: 'earlyoom',
  stops: 'bare kill',
  missing: () => (which('earlyoom') ? null : 'earlyoom is not installed (apt-get install earlyoom)'),
  config: (ctx) =>
    `earlyoom ${args(ctx).join(' ')}: SIGTERM when MemAvailable < ${ctx.lineMiB} MiB (SIGKILL below half), victim by oom_score; Debian's unit args with -M set to the line${ctx.scheduling === 'tight' ? ' and -p (nice -20, its only scheduling setting)' : ', normal scheduling (no -p)'}; 1.7 has no poll-interval flag: 100 ms near the line`,
  ownLine: (ctx) => ({ signal: 'MemAvailable', belowMiB: ctx.lineMiB }),
  start: (ctx) => startDaemon(ctx, 'earlyoom', 'earlyoom', args(ctx), /sending SIGTERM when/),
};
