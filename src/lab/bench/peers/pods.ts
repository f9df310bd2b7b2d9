/**
 * The node's pods for `bench protect --peers`, with the oom_score_adj the kubelet gives each QoS
 * class (pkg/kubelet/qos/policy.go): Guaranteed -997, BestEffort 1000, Burstable
 * 1000 - 1000 * request / capacity kept within 3..999, the sandbox (pause) -998. earlyoom, nohang
 * and the kernel rank by oom_score, so without these values they would not rank as on a node.
 * runc here does not set them (restrict_oom_score_adj, and the lab's CRI configs carry none):
 * they are written once the processes exist, before the hog has allocated much.
 *
 * The protected pods make the hard case for a process-level killer: the largest process of the
 * node belongs to a Guaranteed pod, and the grower to a BestEffort one. The Guaranteed pod's
 * process is also the probe (hog.c HOG_PROBE, probe.ts): once it holds its memory it works
 * every millisecond and logs its own stalls and MemAvailable's crossings of the common line,
 * which is how the race measures what the node's other pods feel.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cgroupPids } from '../../../node/cgroups';
import { hogSteps, type LabPod, type NodeLab } from '../../node-lab';
import { IMAGES } from '../../harness';
import { setOomScoreAdj } from './contender';
import { meminfo } from './meminfo';

const MiB = 1024 * 1024;

/** The kubelet's oom_score_adj for a container of a pod in this class. */
export function kubeletOomScoreAdj(qos: LabPod['qos'], memoryRequestBytes: number, capacityBytes: number): number {
  if (qos === 'Guaranteed') return -997;
  if (qos === 'BestEffort') return 1000;
  const adj = 1000 - Math.floor((1000 * memoryRequestBytes) / capacityBytes);
  if (adj < 3) return 3;
  if (adj === 1000) return 999;
  return adj;
}

/** Writes the kubelet's values into a pod's processes: pause -998, containers per QoS. */
export function applyOomScoreAdj(lab: NodeLab, pod: LabPod, containerAdj: number): void {
  const dir = lab.memoryDir(pod.cgroupPath);
  const containerDirs = new Set(Object.values(pod.containers).map((id) => path.join(dir, id)));
  for (const pid of cgroupPids(dir)) setOomScoreAdj(pid, -998);
  for (const d of containerDirs) for (const pid of cgroupPids(d)) setOomScoreAdj(pid, containerAdj);
}

export interface ProtectedPods {
  guaranteed: LabPod;
  burstable: LabPod;
  guaranteedMiB: number;
  /** the probe's line, KiB of MemAvailable (the common line) */
  probeLineKb: number;
}

const BURSTABLE_REQUEST = 32 * MiB;

/**
 * A Guaranteed pod holding `bigMiB` (the largest process on the node) and a small Burstable pod.
 * Resolves when the Guaranteed pod holds its memory.
 */
export async function startProtectedPods(lab: NodeLab, bigMiB: number, probeLineKb: number): Promise<ProtectedPods> {
  const capacity = meminfo().total;
  const guaranteed = await lab.runPod({
    name: 'guaranteed-big',
    namespace: 'bench',
    qos: 'Guaranteed',
    // The hog image holds what it allocated until stopped (no hold argument).
    containers: [
      { name: 'app', image: IMAGES.hog, args: ['400', String(bigMiB)], env: { HOG_PROBE: String(probeLineKb) }, memoryLimitBytes: (bigMiB + 32) * MiB },
    ],
    annotations: { 'evictd.io/requests': `memory=${bigMiB + 32}Mi,cpu=100m`, 'evictd.io/limits': `memory=${bigMiB + 32}Mi,cpu=100m` },
  });
  applyOomScoreAdj(lab, guaranteed, kubeletOomScoreAdj('Guaranteed', 0, capacity));
  const burstable = await lab.runPod({
    name: 'burstable-small',
    namespace: 'bench',
    qos: 'Burstable',
    containers: [{ name: 'app', image: IMAGES.busybox, command: ['/bin/sh', '-c', 'while true; do sleep 1; done'], memoryLimitBytes: 64 * MiB }],
    annotations: { 'evictd.io/requests': 'memory=32Mi', 'evictd.io/limits': 'memory=64Mi' },
  });
  applyOomScoreAdj(lab, burstable, kubeletOomScoreAdj('Burstable', BURSTABLE_REQUEST, capacity));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const steps = hogSteps(lab.podLog(guaranteed, 'app'));
    if (steps.length && steps[steps.length - 1]!.mib >= bigMiB) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { guaranteed, burstable, guaranteedMiB: bigMiB, probeLineKb };
}

/** Which protected pods lost their process (stopped or killed by anyone). */
export function lostPods(lab: NodeLab, p: ProtectedPods): string[] {
  return [p.guaranteed, p.burstable].filter((pod) => !lab.containerAlive(pod, 'app')).map((pod) => `${pod.namespace}/${pod.name}`);
}

/** Global kernel OOM kills so far (/proc/vmstat). */
export function vmstatOomKills(): number {
  return Number(/^oom_kill (\d+)$/m.exec(fs.readFileSync('/proc/vmstat', 'utf8'))?.[1] ?? 0);
}

/**
 * After a trial that lost a protected pod: remove what is left of the lost ones and start them
 * again, so the next trial (another contender's) finds the same node. Only that trial counts the
 * loss; the run goes on.
 */
export async function replaceLostPods(lab: NodeLab, p: ProtectedPods): Promise<ProtectedPods> {
  const lost = lostPods(lab, p);
  if (!lost.length) return p;
  await Promise.all([p.guaranteed, p.burstable].map((pod) => lab.removePod(pod)));
  return startProtectedPods(lab, p.guaranteedMiB, p.probeLineKb);
}
