/**
 * evictd itself, as `evictd run` on the whole machine (`--cgroup-root /`, the lab's kubepods as
 * the pod cgroup root), with `memory.available<line` as its hard threshold. Two rows:
 * - evictd: the mechanism `evictd run` selects on this kernel (on cgroup v2: whatever
 *   notifications exist for the root, plus the 10 s housekeeping);
 * - evictd-poll: notifications off and a 100 ms housekeeping, the polling evictd falls back
 *   to. (The adaptive poller of the bpf branch has no flag on main yet: the row says what ran.)
 * Both stop the pod through the runtime: the fast kill of the pod's cgroup, then StopPodSandbox,
 * so the sandbox is NOTREADY and Kubernetes sees an eviction.
 */
import { AgentProcess } from '../../ramp-lab';
import type { Contender, ContenderContext, RunningContender } from './contender';
import { setOomScoreAdj } from './contender';

export async function startAgent(ctx: ContenderContext, extraArgs: string[]): Promise<RunningContender> {
  const agent = await AgentProcess.start({
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
  const fallbacks = agent.lines.filter((l) => typeof l.msg === 'string' && /fallback|unavailable/.test(l.msg)).map((l) => l.msg as string);
  return {
    ran: fallbacks.length ? [...new Set(fallbacks)].join('; ') : undefined,
    stop: async () => void (await agent.stop()),
  };
}

export const evictd: Contender = {
  name: 'evictd',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) => `evictd run --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi: the mechanism evictd run selects here, housekeeping 10 s; the kubelet's victim, fast kill + StopPodSandbox`,
  start: (ctx) => startAgent(ctx, []),
};

export const evictdPoll: Contender = {
  name: 'evictd-poll',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) => `evictd run --notifications none --housekeeping-interval 100ms, memory.available<${ctx.evictdLineMiB}Mi: a 100 ms poll of /proc/meminfo (fixed: the adaptive poller has no flag on main yet)`,
  start: (ctx) => startAgent(ctx, ['--notifications', 'none', '--housekeeping-interval', '100ms']),
};
