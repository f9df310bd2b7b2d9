/**
 * No agent: the kernel OOM killer alone, ranking by oom_score (the kubelet's per-QoS adj). It has
 * no line of its own; its row is timed from the common one.
 */
import type { Contender } from './contender';

export const kernel: Contender = {
  name: 'kernel',
  stops: 'kernel',
  missing: () => null,
  config: () => 'no agent: the kernel OOM killer alone, by oom_score (oom_score_adj per QoS class as the kubelet sets it)',
  ownLine: (ctx) => ({ signal: 'MemAvailable', belowMiB: ctx.lineMiB }),
  start: async () => ({ stop: async () => undefined }),
};
