/** No agent: the kernel OOM killer alone, ranking by oom_score (the kubelet's per-QoS adj). */
import type { Contender } from './contender';

export const kernel: Contender = {
  name: 'kernel',
  stops: 'kernel',
  missing: () => null,
  config: () => 'no agent: the kernel OOM killer alone, by oom_score (oom_score_adj per QoS class as the kubelet sets it)',
  start: async () => ({ stop: async () => undefined }),
};
