/**
 * The kubelet's loop on cgroup v2: its memcg notifier is v1-only (kubernetes #106331), so it
 * decides every 10 s (housekeeping) on memory.available, one pod per pass. evictd with
 * notifications off and a 10 s housekeeping runs that same rule and ranking. The line is the
 * lab's (the kubelet default 100Mi scaled like every contender's: see the bench's time scale).
 */
import { startAgent } from './evictd';
import type { Contender } from './contender';

export const kubelet: Contender = {
  name: 'kubelet',
  stops: 'CRI',
  missing: () => null,
  config: (ctx) =>
    `evictd run --notifications none --housekeeping-interval 10s, memory.available<${ctx.evictdLineMiB}Mi: the kubelet's 10 s loop and ranking (its default 100Mi, scaled to the lab)`,
  ownLine: (ctx) => ({ signal: 'memory.available', belowMiB: ctx.evictdLineMiB }),
  start: (ctx) => startAgent(ctx, ['--notifications', 'none', '--housekeeping-interval', '10s'], false, 'kubelet'),
};
