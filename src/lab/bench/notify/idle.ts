/** Idle cost: the CPU of 100 armed watchers, against 100 pollers at 100 ms. */
import type { CgroupLayout } from '../../../node/cgroups';
import { watchCgroupEvents } from '../../../kernel/cgroup-events';
import { watchMemcgThreshold } from '../../../kernel/memcg';
import { pollMemoryUsage } from '../../../kernel/polling';
import { watchPsi } from '../../../kernel/psi';
import type { Watcher } from '../../../kernel/types';
import { round } from '../../stats';
import { ScratchCgroup } from '../../workload';
import { MiB, sleep } from './line';

export interface IdleResult {
  watchers: number;
  seconds: number;
  cpuMs: number;
  cpuPercent: number;
  pollers: number;
  pollSeconds: number;
  pollCpuPercent: number;
}

async function cpuOver(seconds: number): Promise<number> {
  const before = process.cpuUsage();
  await sleep(seconds * 1000);
  const d = process.cpuUsage(before);
  return (d.user + d.system) / 1000;
}

/** Idle CPU of this process with 100 armed watchers, then with 100 pollers at 100 ms. */
export async function benchIdle(layout: CgroupLayout, plan: { idleSeconds: number; pollIdleSeconds: number }): Promise<IdleResult> {
  const memcg = layout.memoryVersion === 1 ? ScratchCgroup.create(layout.memoryMount, 'notify', 1) : null;
  const unified = layout.unifiedMount !== null ? ScratchCgroup.create(layout.unifiedMount, 'notify', 2) : null;
  const watchers: Watcher[] = [];
  try {
    for (let i = 0; watchers.length < 100; i++) {
      if (memcg !== null && i % 2 === 0) watchers.push(watchMemcgThreshold(memcg.dir, (i + 1) * 64 * MiB));
      else if (unified !== null && i % 4 === 1) watchers.push(watchCgroupEvents(unified.file('cgroup.events')));
      else if (unified !== null) watchers.push(watchPsi(unified.file('memory.pressure'), { kind: 'some', stallUs: 100_000, windowUs: 2_000_000 }));
      else throw new Error('no cgroup mount to arm watchers on');
    }
    await Promise.all(watchers.map((w) => w.ready()));
    const cpuMs = await cpuOver(plan.idleSeconds);
    await Promise.all(watchers.splice(0).map((w) => w.close()));

    const usageDir = memcg?.dir ?? (unified as ScratchCgroup).dir;
    const pollers: Watcher[] = [];
    for (let i = 0; i < 100; i++) pollers.push(pollMemoryUsage(usageDir, (i + 1) * 64 * MiB, 100));
    watchers.push(...pollers);
    const pollCpuMs = await cpuOver(plan.pollIdleSeconds);
    return {
      watchers: 100,
      seconds: plan.idleSeconds,
      cpuMs: round(cpuMs) ?? 0,
      cpuPercent: Math.round((cpuMs / (plan.idleSeconds * 1000)) * 100000) / 1000,
      pollers: 100,
      pollSeconds: plan.pollIdleSeconds,
      pollCpuPercent: Math.round((pollCpuMs / (plan.pollIdleSeconds * 1000)) * 100000) / 1000,
    };
  } finally {
    await Promise.all(watchers.map((w) => w.close()));
    await memcg?.remove();
    await unified?.remove();
  }
}
