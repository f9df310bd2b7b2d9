/**
 * One ramp of `bench protect --peers`: a BestEffort hog ramps at the given rate toward more
 * memory than the machine has; something stops it (the contender, or the kernel OOM killer).
 * Everything is measured from outside the contender, the same way for every row:
 * - what the node's other pods feel (the headline): the probe in the Guaranteed pod (probe.ts)
 *   says when memory came back above the common line after the kill's send, and how long it
 *   stalled; from the common line's crossing to memory back is the headline.
 *
 * - the crossings: the hog runs with HOG_METER, so after every MiB it reads /proc/meminfo itself
 *   and logs the three fields every contender's signal is made of, and near the lines
 *   (HOG_METER_FINE: MemAvailable below the common line + FINE_MARGIN_MIB) after every 64 KiB;
 *   the crossing of a line is the start of the chunk whose reading first fell below it
 *   (reaction.ts). No sampler of the bench's, no interpolation.
 * - the kill: the kernel's signal_generate (signal-trace.ts), the first SIGKILL or SIGTERM sent
 *   to the hog, with the sending task; sched_process_exit says when the hog was gone.
 * - kernel OOM: oom/mark_victim for the hog, the hog's pod cgroup's memory.events oom_kill or
 *   containerd's "OOMKilled"; /proc/vmstat oom_kill counts kills anywhere.
 * - CRI or bare kill: whether the pod's sandbox went NOTREADY (the runtime stopped it, so
 *   Kubernetes sees an eviction) or stayed READY with its container dead (a bare kill).
 *
 * The bench's own loop (every 25 ms) only watches that the hog is alive, reads PSI and, on a
 * calibration ramp, kills the hog at the line: it times nothing.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cgroupPids } from '../../../node/cgroups';
import { hogSteps, type NodeLab } from '../../node-lab';
import { IMAGES } from '../../harness';
import type { Contender } from './contender';
import { applyOomScoreAdj, lostPods, vmstatOomKills, type ProtectedPods } from './pods';
import { meminfo } from './meminfo';
import { compactProbe, felt } from './probe';
import { compactReadings, majorFaults, nodeMeminfo, psiSomeAvg10, readProbeLog, rssMiB, type NodeMeminfo } from './readings';
import { crossingOf, exitNs, firstKill, oomVictim, reachedRate, reactionMs, readingAt, senderOf, signalMiB, type Line, type Step } from './reaction';
import type { SignalTrace, TraceEvent } from './signal-trace';

const MiB = 1024 * 1024;

export interface Trial {
  contender: string;
  rateMiBs: number;
  /** the rate the hog reached over the 64 MiB before the common line (or the kill), MiB/s */
  reachedRateMiBs: number | null;
  outcome: 'stopped' | 'oom-killed' | 'survived';
  /** kernel OOM kills during the trial, anywhere on the machine */
  oomKills: number;
  /**
   * reaction from the contender's own line and from the common line, ms: the kill's send time -
   * the crossing; -Infinity when it acted before the hog's readings reached the line, +Infinity
   * when it did not stop the hog (reaction.ts), null when neither applies
   */
  ownReactionMs: number | null;
  commonReactionMs: number | null;
  /** the own-line crossing was inferred (the hog killed inside the crossing MiB, before reading) */
  ownInferred: boolean;
  /** the crossing MiB's touch, start to reading, ms: how far the crossing stamp can be early */
  windowMs: number | null;
  /** how much sooner the contender's own line was crossed than the common line, ms */
  ownLeadMs: number | null;
  /** the kill as the kernel saw it: signal, sending task ("comm-pid"), and who that is for the row */
  kill: { sig: number; sender: string; by: string } | null;
  /** the kill's send -> the hog's exit, ms (signal delivery, a SIGTERM handler, the exit's unmap) */
  exitAfterKillMs: number | null;
  /** the hog's last reading before the send, MiB: what was left at the kill */
  availableAtKillMiB: number | null;
  kubeletAtKillMiB: number | null;
  /**
   * the kubelet's memory.available in the hog's first reading with MemAvailable below the common
   * line, MiB; null when no reading fell below it. Over a cell's trials, where a line on the
   * kubelet's signal had to sit to cross with the common one: a check of the calibration.
   */
  kubeletAtCommonMiB?: number | null;
  /**
   * for a contender on the kubelet's signal (evictd, the kubelet row), the memory.available line
   * it ran this trial with, MiB: it moves through a cell with the cell's readings (line-tracker.ts).
   * Absent for the peers and in runs before 2026-11-28b.
   */
  ownLineMiB?: number;
  /** how the pod ended: 'CRI' (sandbox NOTREADY), 'bare kill' (container dead, sandbox up), 'kernel' */
  via: 'CRI' | 'bare kill' | 'kernel' | 'none';
  protectedLost: string[];
  /**
   * The highest memory PSI `some avg10` of the machine during the ramp, %: what systemd-oomd's
   * only no-swap rule (ManagedOOMMemoryPressure) compares with its limit.
   */
  psiSomeAvg10Max: number | null;
  /** the contender's resident memory at the ramp's start, MiB (what it takes from the node) */
  contenderRssMiB: number | null;
  /**
   * the contender's major page faults during the ramp: pages of its own (code, mapped files) it
   * had to read back from disk, each a wait on a disk that reclaim keeps busy near the end of
   * memory; what locking its pages (evictd --lock-memory, earlyoom's and nohang's mlockall) avoids
   */
  contenderMajorFaults?: number | null;
  /**
   * The headline, from the probe in the Guaranteed pod (probe.ts): the common line's crossing ->
   * memory back (the probe's first reading at or above the line after the kill's send), ms, and
   * -> the hog's exit; -Infinity / +Infinity / null as the reactions. Absent in runs before the probe.
   */
  commonToBackMs?: number | null;
  commonToExitMs?: number | null;
  /** the probe's longest gap overlapping [ramp start, memory back + 1 s], ms */
  worstStallMs?: number | null;
  /** MemAvailable's minimum during the trial (the hog's readings and the probe's), MiB */
  minAvailableMiB?: number | null;
  /** the hog's readings: [ns, MiB held, MemAvailable, MemFree, Inactive(file), kubelet's memory.available] (kB; -1 when not read) */
  readings?: number[][];
  /** the probe's events in the trial's window: [ns, kind, ...] (probe.ts compactProbe) */
  probe?: (number | string)[][];
  /**
   * /proc/meminfo where the bench's loop (every 25 ms) saw MemAvailable at its lowest, MiB: what
   * parts the two signals there, kernel memory outside anon and file (the kubelet counts it as
   * available) against active file pages (MemAvailable counts them). Absent in runs before 2026-11-28.
   */
  nodeAtLowest?: NodeMeminfo | null;
}

/** The longest a ramp may take, however slowly the hog progresses. */
const HARD_CAP_MS = 180_000;
const LOOP_MS = 25;
/**
 * How long the hog may log nothing before the ramp is given up as survived: the smoke runs saw
 * the whole emulated node stall for 8-19 s on the first ramps after the contenders started (the
 * probe's gaps), and a hog given up for 5 s of such a stall was counted as not stopped.
 */
const PROGRESS_WAIT_MS = 20_000;
/**
 * Near the lines the hog reads after every FINE_KIB: a MiB takes 5-30 ms to touch under
 * emulation, a window wider than a millisecond's reaction. The region starts FINE_MARGIN_MIB of
 * MemAvailable above the common line, which covers every own line (calibrated to cross where
 * MemAvailable is near the common one) at every rate the lab drives.
 */
const FINE_KIB = 64;
const FINE_MARGIN_MIB = 96;

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

export interface TrialLines {
  own: Line;
  common: Line;
}

export interface TrialOptions {
  /** the bench itself SIGKILLs the hog once MemAvailable falls below this (calibration ramps) */
  killBelowMiB?: number;
  contenderPid?: number | undefined;
}

/** What a trial leaves for the calibration: the hog's readings and the kernel's events. */
export interface TrialRaw {
  steps: Step[];
  events: TraceEvent[];
}

/**
 * Every ramp, calibration's and trials', starts from the same page cache: written back and
 * dropped, with the reclaimable slab (drop_caches 3). Measured without this (2026-11-28, one
 * run): over the run the logs' and images' page cache came and went, Inactive(file) at the
 * common line fell from 25-33 to 10 MiB, and the kubelet's memory.available where MemAvailable
 * crossed 32 MiB drifted from 170-184 to 146-165 MiB, so no fixed line on the kubelet's signal
 * could cross with the common one trial after trial. Locked pages (the contenders' code) stay.
 */
function dropCaches(): void {
  spawnSync('sync', { stdio: 'ignore' });
  try {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
  } catch {
    // not root: the ramp starts from the cache as it is (a bench run is root in the lab)
  }
}

/** One ramp against the running contender. */
export async function runTrial(
  lab: NodeLab,
  contender: Contender,
  pods: ProtectedPods,
  rate: number,
  index: number | string,
  lines: TrialLines,
  trace: SignalTrace,
  o: TrialOptions = {},
): Promise<Trial & { raw: TrialRaw }> {
  dropCaches();
  const oom0 = vmstatOomKills();
  const m0 = meminfo();
  const targetMiB = Math.ceil(m0.available / MiB) + 128;
  const contenderRssMiB = rssMiB(o.contenderPid);
  const faults0 = majorFaults(o.contenderPid);
  trace.clear();
  const pod = await lab.runPod({
    name: `hog-${contender.name}-${rate}-${index}`,
    namespace: 'bench',
    qos: 'BestEffort',
    containers: [
      {
        name: 'hog',
        image: IMAGES.hog,
        args: [String(rate), String(targetMiB), '0'],
        env: { HOG_METER: '1', HOG_METER_FINE: `${FINE_KIB}:${Math.ceil(lines.common.belowMiB + FINE_MARGIN_MIB)}` },
      },
    ],
  });
  applyOomScoreAdj(lab, pod, 1000);
  const hogDir = path.join(lab.memoryDir(pod.cgroupPath), pod.containers.hog!);
  let hogPid: number | null = null;
  // The ramp ends when the hog dies. On a host shared with other VMs the hog can run at a
  // fraction of the asked rate, so the deadline is not from the asked rate alone: while the hog
  // still logs progress it is extended, PROGRESS_WAIT_MS at a time, up to HARD_CAP_MS.
  const t0 = Date.now();
  let deadline = t0 + (targetMiB / rate) * 1000 + 15_000;
  let progress = -1;
  let started = false;
  let psiMax: number | null = null;
  let lowest: NodeMeminfo | null = null;
  for (;;) {
    if (Date.now() >= deadline) {
      const logged = lab.podLog(pod, 'hog').length;
      if (logged <= progress || Date.now() - t0 > HARD_CAP_MS) break;
      progress = logged;
      deadline = Date.now() + PROGRESS_WAIT_MS;
    }
    const psi = psiSomeAvg10();
    if (psi !== null) psiMax = Math.max(psiMax ?? 0, psi);
    const pids = cgroupPids(hogDir);
    if (hogPid === null && pids.length) hogPid = pids[0]!;
    const text = fs.readFileSync('/proc/meminfo', 'utf8');
    if (lowest === null || meminfo(text).available / MiB < lowest.MemAvailable) lowest = nodeMeminfo(text);
    if (o.killBelowMiB !== undefined && meminfo(text).available / MiB < o.killBelowMiB) killAll(pids);
    if (pids.length) started = true;
    else if (started || lab.podLog(pod, 'hog').length > 0) {
      started = true;
      break;
    }
    await sleep(LOOP_MS);
  }
  const faults1 = majorFaults(o.contenderPid);
  const events = trace.read();
  // A hog that died before the loop saw its pid: the first signal or exit of a task named hog
  // that is not the Guaranteed pod's.
  if (hogPid === null) {
    const theirs = new Set(cgroupPids(path.join(lab.memoryDir(pods.guaranteed.cgroupPath), pods.guaranteed.containers.app!)));
    const e = events.find(
      (x) => (x.event === 'signal_generate' || x.event === 'sched_process_exit') && x.fields.comm === 'hog' && !theirs.has(Number(x.fields.pid)),
    );
    if (e) hogPid = Number(e.fields.pid);
  }
  const log = lab.podLog(pod, 'hog');
  const steps: Step[] = hogSteps(log);
  const startNs = log.map((l) => /^(\d+) start$/.exec(l.trim())).find((m) => m !== null)?.[1];
  const schedule = startNs === undefined ? null : { startNs: BigInt(startNs), stepNs: BigInt(Math.round(1e9 / rate)) };

  let oomKilled = await lab.containerOomKilled(pod, 'hog');
  try {
    oomKilled ||= Number(/^oom_kill (\d+)$/m.exec(fs.readFileSync(path.join(lab.memoryDir(pod.cgroupPath), 'memory.events'), 'utf8'))?.[1] ?? 0) > 0;
  } catch {
    // the pod cgroup is gone (evictd removed the sandbox): no kernel kill was counted there
  }
  if (hogPid !== null) oomKilled ||= oomVictim(events, hogPid);
  const dead = started && cgroupPids(hogDir).length === 0;
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

  const outcome: Trial['outcome'] = !dead ? 'survived' : oomKilled || oomKills > 0 ? 'oom-killed' : 'stopped';
  // The kernel row's "contender" is the OOM killer: its kill is what is timed.
  const stoppedBy = contender.stops === 'kernel' ? outcome === 'oom-killed' : outcome === 'stopped';
  const k = hogPid === null ? null : firstKill(events, hogPid);
  const own = crossingOf(steps, lines.own, schedule, k?.ns ?? null);
  const common = crossingOf(steps, lines.common, schedule, k?.ns ?? null);
  const at = k ? readingAt(steps, k.ns) : null;
  const atCommon = steps.find((st) => st.reading && signalMiB(st.reading, 'MemAvailable') < lines.common.belowMiB)?.reading ?? null;
  const exit = hogPid === null ? null : exitNs(events, hogPid);
  const endMib = common?.mib ?? steps[steps.length - 1]?.mib ?? 0;
  const rampStartNs = schedule?.startNs ?? steps[0]?.ns ?? null;
  const feltNow = () => {
    const events = readProbeLog(pods.guaranteed);
    const f = felt({
      events,
      readings: steps.flatMap((st) => (st.reading ? [{ ns: st.ns, availableKb: st.reading.availableKb }] : [])),
      rampStartNs,
      commonNs: common?.touchNs ?? null,
      killNs: k?.ns ?? null,
      exitNs: exit,
      stoppedByContender: stoppedBy,
    });
    return { events, f, windowEnd: (f.memoryBackNs ?? exit ?? k?.ns ?? steps[steps.length - 1]?.ns ?? 0n) + 1_000_000_000n };
  };
  let probed = feltNow();
  // The stall window ends 1 s after memory back: let the probe log past it (its heartbeat comes every second) before reading again.
  const wait = probed.windowEnd + 1_100_000_000n - process.hrtime.bigint();
  if (wait > 0n) {
    await sleep(Number(wait / 1_000_000n));
    probed = feltNow();
  }
  const { events: probe, f, windowEnd } = probed;
  return {
    contender: contender.name,
    rateMiBs: rate,
    reachedRateMiBs: reachedRate(steps, endMib),
    outcome,
    oomKills,
    ownReactionMs: reactionMs(own, k, stoppedBy),
    commonReactionMs: reactionMs(common, k, stoppedBy),
    ownInferred: own?.inferred ?? false,
    windowMs: own && own.seenNs !== null ? Number(own.seenNs - own.touchNs) / 1e6 : null,
    ownLeadMs: own && common ? Number(common.touchNs - own.touchNs) / 1e6 : null,
    kill: k && hogPid !== null ? { sig: k.sig, sender: k.sender, by: senderOf(events, k, hogPid) } : null,
    exitAfterKillMs: k && exit !== null ? Number(exit - k.ns) / 1e6 : null,
    availableAtKillMiB: at ? Math.round(signalMiB(at, 'MemAvailable') * 10) / 10 : null,
    kubeletAtKillMiB: at ? Math.round(signalMiB(at, 'memory.available') * 10) / 10 : null,
    kubeletAtCommonMiB: atCommon ? Math.round(signalMiB(atCommon, 'memory.available') * 10) / 10 : null,
    via,
    protectedLost,
    psiSomeAvg10Max: psiMax,
    contenderRssMiB,
    contenderMajorFaults: faults0 !== null && faults1 !== null ? faults1 - faults0 : null,
    commonToBackMs: f.commonToBackMs,
    commonToExitMs: f.commonToExitMs,
    worstStallMs: f.worstStallMs,
    minAvailableMiB: f.minAvailableMiB,
    nodeAtLowest: lowest,
    readings: compactReadings(steps),
    probe: rampStartNs === null ? [] : compactProbe(probe, rampStartNs, windowEnd),
    raw: { steps, events },
  };
}

/** Waits (up to 10 s) for MemAvailable to come back near where it was before the trial. */
export async function settle(availableBefore: number): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until && meminfo().available < availableBefore - 16 * MiB) await sleep(100);
  await sleep(500);
}
