/**
 * The demo's page-cache ramp: page cache pushes the node's usage far past the line
 * while the kubelet's signal (capacity - (usage - inactive_file)) stays above it, and nobody is
 * evicted, though a standing order stands on the line the whole time.
 *
 * A BestEffort "ballast" pod first holds anonymous memory that brings the node near its hard
 * line (the kubelet's signal inside the zone where each pass leaves a standing order, on the
 * ballast, the kubelet's pick). A second BestEffort pod then writes files on a
 * disk mount, 16 MiB at a time, each synced: clean, reclaimable page cache, as much as the node
 * has memory. Usage crosses the line (on cgroup v1 the usage line the order thread watches; on
 * v2 the BPF program may count the cache before the kernel folds it) and the order thread reads
 * the kubelet's numbers fresh and refuses. Both pods must still be running at the end.
 */
import fs from 'node:fs';
import http from 'node:http';
import { readCgroupMemory } from '../node/memory';
import { nearMarginBytes } from '../policy/standing-order';
import type { AgentProcess } from './ramp-lab';
import type { NodeLab } from './node-lab';
import { IMAGES } from './harness';
import { diskDir } from './workload';

const MiB = 1024 * 1024;
const CHUNK_MiB = 16;

/**
 * How far above the line the ballast brings the kubelet's signal: inside the near zone (orders
 * are placed there), and above twice the line where the zone allows, since the demo's replay asks
 * "what if the line were twice as high" and should name only the hogs.
 */
function aboveLineMiB(lineMiB: number): number {
  const zone = nearMarginBytes(lineMiB * MiB) / MiB;
  return zone > lineMiB ? (lineMiB + zone) / 2 : zone / 2;
}

export interface CacheRampResult {
  spared: boolean;
  /** the node at the end: its usage, the kubelet's working set and memory.available, and the line, MiB */
  usageMiB: number;
  workingSetMiB: number;
  availableMiB: number;
  lineMiB: number;
  /** page cache written, MiB */
  writtenMiB: number;
  /** the standing order stood on the ballast during the write */
  orderStood: boolean;
  /** crossings the order threads refused (evictd_standing_order_refusals_total over the ramp) */
  refusals: number | null;
  evicted: string[];
  /** evictd's own account of each of those evictions (its log lines, as written), when there were any */
  why?: Record<string, unknown>[];
}

async function metric(address: string | null, name: string): Promise<number | null> {
  if (!address) return null;
  const body = await new Promise<string>((resolve) => {
    http
      .get(`http://${address}/metrics`, (res) => {
        let b = '';
        res.on('data', (d: Buffer) => (b += d.toString()));
        res.on('end', () => resolve(b));
      })
      .on('error', () => resolve(''));
  });
  let sum = 0;
  let seen = false;
  for (const m of body.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) {
    sum += Number(m[1]);
    seen = true;
  }
  return seen ? sum : null;
}

async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A directory on a disk filesystem for the pod's files (tmpfs pages are shmem, which the kubelet counts). */
export async function cacheRamp(lab: NodeLab, agent: AgentProcess, o: { nodeMiB: number; thresholdMiB: number; namespace: string }): Promise<CacheRampResult> {
  const node = () => readCgroupMemory(lab.memoryDir(), lab.layout.memoryVersion);
  const lineMiB = o.thresholdMiB;
  const start = node();
  const wsMiB = (start?.workingSetBytes ?? 0) / MiB;
  const ballastMiB = Math.max(0, Math.floor(o.nodeMiB - lineMiB - aboveLineMiB(lineMiB) - wsMiB));
  const fromLine = agent.lines.length;
  const ballast = await lab.runPod({
    name: 'ballast',
    namespace: o.namespace,
    qos: 'BestEffort',
    containers: [{ name: 'hog', image: IMAGES.hog, args: ['400', String(ballastMiB)] }],
  });
  await until(() => lab.podLog(ballast, 'hog').some((l) => Number(l.split(' ')[1]) >= ballastMiB), 60_000);
  const placed = (): boolean =>
    agent.lines.slice(fromLine).some((l) => l.msg === 'standing order placed' && typeof l.pod === 'string' && l.pod.endsWith('/ballast'));
  await until(placed, 10_000);
  const refusals0 = await metric(agent.metricsAddress, 'evictd_standing_order_refusals_total');

  const dir = diskDir('evictd-demo-cache-');
  const writtenMiB = Math.ceil(o.nodeMiB / CHUNK_MiB) * CHUNK_MiB;
  const script = `i=0; while [ $i -lt ${writtenMiB / CHUNK_MiB} ]; do dd if=/dev/zero of=/cache/f$i bs=1M count=${CHUNK_MiB} conv=fsync 2>/dev/null || exit 1; i=$((i+1)); done; echo written; exec sleep 100000`;
  const writer = await lab.runPod({
    name: 'cache-writer',
    namespace: o.namespace,
    qos: 'BestEffort',
    containers: [{ name: 'writer', image: IMAGES.busybox, command: ['/bin/sh', '-c', script], mounts: [{ containerPath: '/cache', hostPath: dir }] }],
  });
  try {
    await until(() => lab.podLog(writer, 'writer').includes('written') || !lab.containerAlive(writer, 'writer'), 120_000);
    // Two passes' worth, so whatever the agent would do on these numbers it has done.
    await new Promise((r) => setTimeout(r, 2500));
    const end = node();
    const refusals1 = await metric(agent.metricsAddress, 'evictd_standing_order_refusals_total');
    const spared =
      (await lab.sandboxReady(ballast)) && (await lab.sandboxReady(writer)) && lab.containerAlive(writer, 'writer') && lab.containerAlive(ballast, 'hog');
    const evictions = agent.lines
      .slice(fromLine)
      .filter((l) => typeof l.msg === 'string' && (l.msg.startsWith('evicted pod') || l.msg.startsWith('standing order used')) && typeof l.pod === 'string');
    const evicted = evictions.map((l) => String(l.pod));
    return {
      // An eviction here is a wrong kill unless the kubelet's number crossed: what evictd saw and why it acted says which.
      ...(evictions.length > 0 ? { why: evictions } : {}),
      spared: spared && evicted.length === 0,
      usageMiB: Math.round((end?.usageBytes ?? 0) / MiB),
      workingSetMiB: Math.round((end?.workingSetBytes ?? 0) / MiB),
      availableMiB: Math.round((end?.availableBytes ?? 0) / MiB),
      lineMiB,
      writtenMiB,
      orderStood: placed(),
      refusals: refusals0 !== null && refusals1 !== null ? refusals1 - refusals0 : null,
      evicted,
    };
  } finally {
    await lab.removePod(writer);
    await lab.removePod(ballast);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
