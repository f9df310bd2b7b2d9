/**
 * evictd itself, as `evictd run` on the whole machine (`--cgroup-root /`, the lab's kubepods as
 * the pod cgroup root), with `memory.available<line` as its hard threshold. Two rows:
 * - evictd: the mechanism `evictd run` selects on this kernel (on cgroup v2: the eBPF tripwire
 *   on the root's page counter, or the adaptive poller where BPF cannot load; the row says
 *   which ran), plus the 10 s housekeeping;
 * - evictd-poll: `--notifications poll`, the node's line on the adaptive poller (5 ms near
 *   the line, 1 s far from it) and no BPF: what evictd does on a kernel without the tripwire.
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
  return {
    // Read when asked: the lines are armed by the first pass, which may log after the start.
    get ran() {
      const said = agent.lines.filter((l) => typeof l.msg === 'string' && /^memory line |fallback|unavailable/.test(l.msg));
      const text = said.map((l) => (typeof l.reason === 'string' ? `${l.msg} (${l.reason})` : (l.msg as string)));
      return text.length ? [...new Set(text)].join('; ') : undefined;
    },
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
  config: (ctx) =>
    `evictd run --notifications poll --cgroup-root / --eviction-hard memory.available<${ctx.evictdLineMiB}Mi: the line on the adaptive poller (/proc/meminfo, 5 ms near the line, 1 s far), no BPF, housekeeping 10 s`,
  start: (ctx) => startAgent(ctx, ['--notifications', 'poll']),
};
