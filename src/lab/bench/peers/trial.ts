/**
 * One ramp of `bench protect --peers`: a BestEffort hog ramps at the given rate toward more
 * memory than the machine has; something stops it (the contender, or the kernel OOM killer).
 * Everything is measured from outside the contender, the same way for every row:
 *
 * - the line: the bench samples /proc/meminfo every ~10 ms during the ramp (CLOCK_MONOTONIC,
 *   the hog's clock); the line is MemAvailable < L (what earlyoom and nohang read; evictd's
 *   memory.available line is calibrated to cross at the same moment, see calibrate.ts); the
 *   crossing is interpolated between the last sample above the line and the first below it. (Reading MemAvailable at the start and counting the hog's MiB
 *   does not work: near the end the kernel reclaims page cache and the hog slows, so memory
 *   does not fall one MiB per MiB the hog touches.)
 * - the kill: a SIGTERM makes the hog log "<ns> term" (earlyoom and nohang send it first);
 *   a SIGKILL (evictd's fast kill, oomd, the kernel) leaves its last step, at most one MiB step
 *   (1/rate s) before the kill: a lower bound on the reaction, the same for every contender.
 * - kernel OOM: the hog's pod cgroup's memory.events oom_kill (hierarchical on v2) or
 *   containerd's "OOMKilled" exit reason; /proc/vmstat oom_kill counts kills anywhere.
 * - CRI or bare kill: whether the pod's sandbox went NOTREADY (the runtime stopped it, so
 *   Kubernetes sees an eviction) or stayed READY with its container dead (a bare kill).
 */
import fs from 'node:fs';
import path from 'node:path';
import { cgroupPids } from '../../../node/cgroups';
import { hogSteps, type NodeLab } from '../../node-lab';
import { IMAGES } from '../../harness';
import type { Contender } from './contender';
import { applyOomScoreAdj, lostPods, vmstatOomKills, type ProtectedPods } from './pods';
import { kubeletAvailable, meminfo } from './meminfo';

const MiB = 1024 * 1024;

export interface Trial {
  contender: string;
  rateMiBs: number;
  /** the rate the hog actually reached (MiB/s between 10% of its ramp and the line) */
  measuredRateMiBs: number | null;
  outcome: 'stopped' | 'oom-killed' | 'survived';
  /** kernel OOM kills during the trial, anywhere on the machine */
  oomKills: number;
  /** the line crossed -> the kill (or stop) reached the hog, ms; null when the line was never crossed */
  reactionMs: number | null;
  /** MemAvailable at the last sample before the kill, MiB */
  availableAtKillMiB: number | null;
  /** how the pod ended: 'CRI' (sandbox NOTREADY), 'bare kill' (container dead, sandbox up), 'kernel' */
  via: 'CRI' | 'bare kill' | 'kernel' | 'none';
  protectedLost: string[];
  /**
   * The highest memory PSI `some avg10` of the machine during the ramp, %: what systemd-oomd's
   * only no-swap rule (ManagedOOMMemoryPressure) compares with its limit.
   */
  psiSomeAvg10Max: number | null;
}

/** /proc/pressure/memory's `some avg10`, or null without PSI. */
function psiSomeAvg10(): number | null {
  try {
    const m = /^some avg10=([\d.]+)/m.exec(fs.readFileSync('/proc/pressure/memory', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** The longest a ramp may take, however slowly the hog progresses. */
const HARD_CAP_MS = 180_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

export interface Sample {
  ns: bigint;
  /** MemAvailable, MiB */
  available: number;
  /** the kubelet's memory.available (MemFree + Inactive(file)), MiB */
  kubelet: number;
}

/**
 * One ramp against the running contender. `killBelowMiB` makes the bench itself SIGKILL the hog
 * once MemAvailable falls below it (the calibration ramp, which must not end in an OOM kill).
 */
export async function runTrial(lab: NodeLab, contender: Contender, pods: ProtectedPods, rate: number, index: number, lineMiB: number, killBelowMiB?: number): Promise<Trial & { samples: Sample[] }> {
  const oom0 = vmstatOomKills();
  const m0 = meminfo();
  const targetMiB = Math.ceil(m0.available / MiB) + 128;
  const pod = await lab.runPod({ name: `hog-${contender.name}-${rate}-${index}`, namespace: 'bench', qos: 'BestEffort', containers: [{ name: 'hog', image: IMAGES.hog, args: [String(rate), String(targetMiB), '0'] }] });
  applyOomScoreAdj(lab, pod, 1000);
  // The ramp ends when the hog dies. On a host shared with other VMs the hog can run at a
  // fraction of the asked rate, so the deadline is not from the asked rate alone: while the hog
  // still logs progress it is extended, 5 s at a time, up to HARD_CAP_MS.
  const t0 = Date.now();
  let deadline = t0 + (targetMiB / rate) * 1000 + 15_000;
  let progress = -1;
  const samples: Sample[] = [];
  let started = false;
  let psiMax: number | null = null;
  for (;;) {
    if (Date.now() >= deadline) {
      const logged = lab.podLog(pod, 'hog').length;
      if (logged <= progress || Date.now() - t0 > HARD_CAP_MS) break;
      progress = logged;
      deadline = Date.now() + 5_000;
    }
    const m = meminfo();
    const psi = psiSomeAvg10();
    if (psi !== null) psiMax = Math.max(psiMax ?? 0, psi);
    samples.push({ ns: process.hrtime.bigint(), available: m.available / MiB, kubelet: kubeletAvailable(m) / MiB });
    if (killBelowMiB !== undefined && m.available / MiB < killBelowMiB) killAll(cgroupPids(path.join(lab.memoryDir(pod.cgroupPath), pod.containers.hog!)));
    const alive = lab.containerAlive(pod, 'hog');
    if (alive) started = true;
    else if (started || lab.podLog(pod, 'hog').length > 0) {
      started = true;
      break;
    }
    await sleep(10);
  }
  const lines = lab.podLog(pod, 'hog');
  const steps = hogSteps(lines);
  const term = lines.map((l) => /^(\d+) term$/.exec(l.trim())).find((m) => m !== null);
  let oomKilled = await lab.containerOomKilled(pod, 'hog');
  try {
    oomKilled ||= Number(/^oom_kill (\d+)$/m.exec(fs.readFileSync(path.join(lab.memoryDir(pod.cgroupPath), 'memory.events'), 'utf8'))?.[1] ?? 0) > 0;
  } catch {
    // the pod cgroup is gone (evictd removed the sandbox): no kernel kill was counted there
  }
  const dead = started && !lab.containerAlive(pod, 'hog');
  let via: Trial['via'] = 'none';
  if (dead) {
    if (oomKilled) via = 'kernel';
    else {
      // evictd's StopPodSandbox follows its fast kill (it took over 5 s under a loaded TCG VM);
      // a peer's kill leaves the sandbox up.
      const until = Date.now() + (contender.stops === 'CRI' ? 15_000 : 300);
      let ready = await lab.sandboxReady(pod);
      while (ready && Date.now() < until) {
        await sleep(50);
        ready = await lab.sandboxReady(pod);
      }
      via = ready ? 'bare kill' : 'CRI';
    }
  }
  const protectedLost = lostPods(lab, pods);
  const oomKills = Math.max(vmstatOomKills() - oom0, oomKilled ? 1 : 0);
  await lab.removePod(pod);

  let reactionMs: number | null = null;
  let availableAtKillMiB: number | null = null;
  let measuredRateMiBs: number | null = null;
  const below = samples.findIndex((x) => x.available < lineMiB);
  let crossNs: bigint | null = null;
  if (below > 0) {
    // Linear between the last sample above the line and the first below it.
    const a = samples[below - 1]!;
    const b = samples[below]!;
    const f = (a.available - lineMiB) / Math.max(1e-9, a.available - b.available);
    crossNs = a.ns + BigInt(Math.round(Number(b.ns - a.ns) * f));
  } else if (below === 0) crossNs = samples[0]!.ns;
  if (steps.length) {
    const last = steps[steps.length - 1]!;
    const killNs = term ? BigInt(term[1]!) : last.ns;
    if (crossNs !== null && dead) reactionMs = Number(killNs - crossNs) / 1e6;
    const before = samples.filter((x) => x.ns <= killNs);
    if (dead && before.length) availableAtKillMiB = Math.round(before[before.length - 1]!.available);
    // The hog's own pace over the middle of its ramp (before reclaim near the end slows it).
    const from = steps[Math.floor(steps.length * 0.1)]!;
    const to = steps[Math.floor(steps.length * 0.7)]!;
    if (to.ns > from.ns) measuredRateMiBs = ((to.mib - from.mib) * 1e9) / Number(to.ns - from.ns);
  }
  const outcome: Trial['outcome'] = !dead ? 'survived' : oomKilled || oomKills > 0 ? 'oom-killed' : 'stopped';
  return { contender: contender.name, rateMiBs: rate, measuredRateMiBs, outcome, oomKills, reactionMs, availableAtKillMiB, via, protectedLost, psiSomeAvg10Max: psiMax, samples };
}

/** Waits (up to 10 s) for MemAvailable to come back near where it was before the trial. */
export async function settle(availableBefore: number): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until && meminfo().available < availableBefore - 16 * MiB) await sleep(100);
  await sleep(500);
}
