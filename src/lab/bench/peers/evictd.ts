/**
 * evictd itself, as `evictd run` on the whole machine (`--cgroup-root /`, the lab's kubepods as
 * the pod cgroup root), with `memory.available<line` as its hard threshold:
 * - evictd: `evictd run` as the DaemonSet and the systemd unit ship it (deploy/: the mechanism it
 *   selects on this kernel, `--realtime-priority=10` with --scheduling tight, 0 with normal,
 *   housekeeping 10 s). One row, the one users
 *   run; the bench takes no best-of across modes.
 * - evictd-poll (only when asked for with --peers): the same with `--notifications poll`, the
 *   node's line on the adaptive poller and no BPF: what evictd does where the tripwire cannot
 *   load. A configuration of its own, reported as such, never merged into evictd's row.
 * - evictd-pageable (only when asked for): the shipped configuration with `--lock-memory=false`,
 *   its code left pageable: what the lock is worth near the end of memory, trial by trial.
 * Each stops the pod through the runtime: the fast kill of the pod's cgroup, then StopPodSandbox,
 * so the sandbox is NOTREADY and Kubernetes sees an eviction.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AgentProcess } from '../../ramp-lab';
import type { Contender, ContenderContext, RunningContender } from './contender';
import { logFileOf, setOomScoreAdj } from './contender';

/**
 * As deploy/daemonset.yaml and deploy/evictd.service pass it (--scheduling tight): SCHED_FIFO 10
 * for its kill thread only; --scheduling normal: --realtime-priority=0, every thread normal.
 */
export function shipped(ctx: Pick<ContenderContext, 'scheduling'>): string[] {
  return [ctx.scheduling === 'tight' ? '--realtime-priority=10' : '--realtime-priority=0'];
}

/**
 * Starts `evictd run`; with `waitArmed`, resolves once its first pass has armed the node's
 * memory line (a trial whose ramp began before that would time evictd's start, not its
 * reaction), or after 60 s, whatever it logged.
 */
export async function startAgent(ctx: ContenderContext, extraArgs: string[], waitArmed: boolean, name = 'evictd', bin?: string): Promise<RunningContender> {
  const agent = await AgentProcess.start({
    ...(bin ? { bin } : {}),
    lab: ctx.lab,
    endpoint: ctx.endpoint,
    evictionHard: `memory.available<${ctx.evictdLineMiB}Mi`,
    cgroupRoot: '/',
    podCgroupRoot: ctx.lab.podRoot,
    extraArgs,
    // Under TCG, after a ramp has pushed the node's code out of the page cache, starting takes long.
    startTimeoutMs: 90_000,
  });
  if (agent.child.pid) setOomScoreAdj(agent.child.pid, -999);
  if (waitArmed) await agent.waitFor((l) => typeof l.msg === 'string' && /^memory line node/.test(l.msg), 60_000).catch(() => undefined);
  return {
    pid: agent.child.pid,
    alive: () => agent.child.exitCode === null && agent.child.signalCode === null,
    // Read when asked: the lines are armed by the first pass, which may log after the start.
    get ran() {
      const said = agent.lines.filter((l) => typeof l.msg === 'string' && /^memory line |fallback|unavailable/.test(l.msg));
      const text = said.map((l) => (typeof l.reason === 'string' ? `${l.msg} (${l.reason})` : (l.msg as string)));
      return text.length ? [...new Set(text)].join('; ') : undefined;
    },
    stop: async () => {
      await agent.stop();
      // Its log, kept beside the run's output (--logs): every line it wrote, then its stderr's tail.
      try {
        fs.writeFileSync(
          logFileOf(ctx, name),
          agent.lines.map((l) => JSON.stringify(l)).join('\n') + (agent.stderrTail ? `\n--- stderr (tail) ---\n${agent.stderrTail}` : '') + '\n',
        );
      } catch {
        // no log directory: the run goes on
      }
      // EVICTD_BENCH_AGENT_LOG=1: the agent's log of the trial on stderr, to see why it acted when it did.
      if (process.env.EVICTD_BENCH_AGENT_LOG === '1') for (const l of agent.lines) process.stderr.write(`  agent ${JSON.stringify(l)}\n`);
    },
  };
}

export const evictd: Contender = {
  name: 'evictd',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) =>
    `evictd run --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi ${shipped(ctx).join(' ')}: ${ctx.scheduling === 'tight' ? 'as the DaemonSet and the unit ship it (its kill thread SCHED_FIFO 10)' : 'normal scheduling'} (the mechanism evictd run selects here, housekeeping 10 s); the kubelet's victim, fast kill + StopPodSandbox`,
  ownLine: (ctx) => ({ signal: 'memory.available', belowMiB: ctx.evictdLineMiB }),
  start: (ctx) => startAgent(ctx, shipped(ctx), true),
};

export const evictdPoll: Contender = {
  name: 'evictd-poll',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) =>
    `evictd run --notifications poll --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi ${shipped(ctx).join(' ')}: the line on the adaptive poller (/proc/meminfo, 5 ms near the line, 1 s far), no BPF, housekeeping 10 s`,
  ownLine: (ctx) => ({ signal: 'memory.available', belowMiB: ctx.evictdLineMiB }),
  start: (ctx) => startAgent(ctx, ['--notifications', 'poll', ...shipped(ctx)], true, 'evictd-poll'),
};

export const evictdPageable: Contender = {
  name: 'evictd-pageable',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) =>
    `evictd run --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi ${shipped(ctx).join(' ')} --lock-memory=false: as shipped but with its code pageable (not locked in RAM)`,
  ownLine: (ctx) => ({ signal: 'memory.available', belowMiB: ctx.evictdLineMiB }),
  start: (ctx) => startAgent(ctx, [...shipped(ctx), '--lock-memory=false'], true, 'evictd-pageable'),
};

/**
 * An A/B of the kill path (only when named): evictd-noreap is the shipped configuration with
 * `--reap-killed=false` (each killed task frees its own memory as it exits); evictd-base runs
 * another build of evictd, the tree named by $EVICTD_BENCH_BASELINE (its bin/evictd.js, built:
 * e.g. a worktree of the commit before a change), with the same flags. Interleaved trial by
 * trial with evictd, they say what a change buys from the kill to memory back.
 */
export const evictdNoReap: Contender = {
  name: 'evictd-noreap',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) =>
    `evictd run --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi ${shipped(ctx).join(' ')} --reap-killed=false: as evictd, the killed tasks left to free their own memory`,
  ownLine: (ctx) => ({ signal: 'memory.available', belowMiB: ctx.evictdLineMiB }),
  start: (ctx) => startAgent(ctx, [...shipped(ctx), '--reap-killed=false'], true, 'evictd-noreap'),
};

const baselineBin = (): string | null => (process.env.EVICTD_BENCH_BASELINE ? path.join(process.env.EVICTD_BENCH_BASELINE, 'bin', 'evictd.js') : null);

export const evictdBase: Contender = {
  name: 'evictd-base',
  stops: 'CRI',
  missing: () => {
    const bin = baselineBin();
    if (bin === null) return 'no baseline tree: set EVICTD_BENCH_BASELINE to a built checkout of evictd';
    return fs.existsSync(bin) ? null : `${bin} does not exist (EVICTD_BENCH_BASELINE)`;
  },
  config: (ctx) =>
    `the baseline build at ${process.env.EVICTD_BENCH_BASELINE ?? '(unset)'}: evictd run --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi ${shipped(ctx).join(' ')}`,
  ownLine: (ctx) => ({ signal: 'memory.available', belowMiB: ctx.evictdLineMiB }),
  start: (ctx) => startAgent(ctx, shipped(ctx), true, 'evictd-base', baselineBin() ?? undefined),
};
