/**
 * The agent: observe -> decide -> act, one pass at a time (see controller.ts), woken by kernel
 * notifications and by the housekeeping tick.
 *
 * Everything runs on the main JS thread. The only concurrency is the background completion of
 * a fast-killed pod's StopPodSandbox; such pods are "in flight" and left out of later passes
 * until the runtime has stopped them.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { cgroupDir, type CgroupLayout } from '../node/cgroups';
import type { NodeObserver, Observation } from '../node/observer';
import { listPodCgroups, podUidFromDirName } from '../node/pod-cgroups';
import type { PolicyConfig } from '../policy/config';
import { evaluate, initialState, resolvedByReclaim, type Evaluation, type Eviction, type PolicyState, type ThresholdStatus } from '../policy/evaluate';
import { isMemorySignal } from '../policy/signals';
import type { ContainerUsage, NodeCondition, PodRef, Signal } from '../policy/types';
import { joinPods, type JoinedPod } from './active-pods';
import { Arming } from './arming';
import { Controller, type PassResult, type PassTrigger } from './controller';
import { killPodProcesses, waitMemoryReleased, type KillResult } from './fast-kill';
import type { Health } from './http-server';
import type { AgentMetrics } from './metrics';
import type { EvictionReporter, NotificationPort, PodSpecSource, RuntimePod, RuntimePort, Wakeup } from './ports';

export interface AgentOptions {
  policy: PolicyConfig;
  layout: CgroupLayout;
  observer: NodeObserver;
  runtime: RuntimePort;
  /** null: no kernel notifications at all, the housekeeping tick alone drives the loop */
  notifications: NotificationPort | null;
  pods?: PodSpecSource;
  reporter?: EvictionReporter;
  logger: Logger;
  metrics: AgentMetrics;
  dryRun: boolean;
  /** kill a pod's processes through its cgroup before StopPodSandbox, for hard memory thresholds */
  fastKill: boolean;
  housekeepingIntervalMs: number;
  /** bound on waiting for an evicted pod's memory to come back */
  releaseTimeoutMs?: number;
  psi?: { kind: 'some' | 'full'; stallUs: number; windowUs: number } | null;
}

/** One eviction (or dry-run decision), as logged and emitted ('eviction'). */
export interface EvictionRecord {
  pod: PodRef;
  sandboxId: string;
  signal: string;
  ok: boolean;
  dryRun: boolean;
  gracePeriodSeconds: number;
  threshold: ThresholdStatus | null;
  reasons: string[];
  message: string;
  action: 'fast-kill' | 'stop' | 'none';
  kill?: KillResult;
  error?: string;
  /** CLOCK_MONOTONIC ns (as decimal strings) of each step */
  at: { event?: string; notified: string; observed: string; decision: string; killSent?: string; stopSent?: string; stopDone?: string; released?: string };
  releasedWithinBound?: boolean;
  note?: string;
}

const ns = (): bigint => process.hrtime.bigint();
/** a pod listing older than this is never used in place of a fresh one */
const POD_LIST_MAX_AGE_MS = 30_000;
/** how often the threshold lines follow inactive_file between passes */
const DRIFT_TICK_MS = 1000;
const msBetween = (a: bigint, b: bigint): number => Number(b - a) / 1e6;

export class Agent extends EventEmitter {
  readonly controller: Controller;
  private state: PolicyState = initialState();
  private arming: Arming | null = null;
  private lastPods: RuntimePod[] = [];
  private imagefsPath: string | undefined;
  private readonly inFlight = new Map<string, Promise<void>>();
  private graceTimer: NodeJS.Timeout | null = null;
  private driftTimer: NodeJS.Timeout | null = null;
  private lastPassOkAt = 0;
  private lastProblem = 'no pass yet';
  private runtimeOk = true;
  private runtimeErrorLogged = 0;
  lastEvaluation: Evaluation | null = null;

  constructor(private readonly o: AgentOptions) {
    super();
    this.controller = new Controller((t) => this.pass(t), {
      housekeepingIntervalMs: o.housekeepingIntervalMs,
      onError: (err) => {
        o.metrics.passErrors.inc();
        this.lastProblem = `pass failed: ${err instanceof Error ? err.message : String(err)}`;
        o.logger.error({ err }, 'pass failed');
      },
    });
  }

  /** Arms notifications, runs the first pass. */
  start(): void {
    const o = this.o;
    if (o.notifications) {
      o.metrics.mechanism.set({ mechanism: o.notifications.mechanism }, 1);
      const unified = o.layout.unifiedMount ? `${o.layout.unifiedMount}${o.observer.opts.podCgroupRoot === '/' ? '' : o.observer.opts.podCgroupRoot}` : null;
      this.arming = new Arming({
        port: o.notifications,
        policy: o.policy,
        logger: o.logger,
        wake: (w) => this.wake(w),
        nodeMemoryDir: o.observer.memoryDir,
        podRootMemoryDir: o.observer.podRootMemoryDir,
        podRootUnifiedDir: unified,
        memoryVersion: o.layout.memoryVersion,
        nodeIsRoot: o.observer.opts.cgroupRoot.replace(/\/+/g, '') === '',
        psi: o.psi,
      });
      this.arming.start();
      this.driftTimer = setInterval(() => this.driftTick(), DRIFT_TICK_MS);
      this.driftTimer.unref();
      this.watchPodDirs();
    } else {
      o.metrics.mechanism.set({ mechanism: 'housekeeping-only' }, 1);
    }
    this.controller.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.podDirWatchers) w.close();
    this.podDirWatchers = [];
    if (this.learnTimer) clearTimeout(this.learnTimer);
    if (this.driftTimer) clearInterval(this.driftTimer);
    this.driftTimer = null;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    await this.controller.stop();
    await this.refreshing;
    await this.arming?.close();
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** A kernel notification (or any other reason to look again). */
  wake(w: Wakeup): void {
    this.o.metrics.notifications.inc({ source: w.source }, w.count ?? 1);
    this.controller.notify(w.source, w.monotonicNs, w.count ?? 1);
  }

  health(): Health {
    const staleMs = 3 * this.o.housekeepingIntervalMs + 5000;
    if (this.lastPassOkAt === 0) return { ok: false, reason: this.lastProblem };
    if (Date.now() - this.lastPassOkAt > staleMs) return { ok: false, reason: `no successful pass for ${Date.now() - this.lastPassOkAt} ms (${this.lastProblem})` };
    if (!this.runtimeOk) return { ok: false, reason: this.lastProblem };
    return { ok: true, reason: '' };
  }

  /**
   * Between passes: re-read the memory numbers (two small cgroup files) and move the threshold
   * lines if inactive_file drifted. No runtime call, no policy pass.
   */
  private driftTick(): void {
    if (this.controller.busy || !this.arming) return;
    try {
      const m = this.o.observer.observeMemory();
      this.arming.update(m.memory, m.allocatable);
    } catch (err) {
      this.o.logger.debug({ err }, 'drift tick failed');
    }
  }

  /** The node conditions of the last pass (for admission). */
  conditions(): NodeCondition[] {
    return this.lastEvaluation ? [...this.lastEvaluation.conditions] : [];
  }

  armedLines(): Record<string, number> {
    return this.arming?.armed() ?? {};
  }

  /**
   * The runtime's pods for this pass. A pass woken by the kernel decides on the last listing
   * when it still covers every pod cgroup observed now (no pod started since), and refreshes it
   * in the background: the CRI round trip (2-10 ms while a hog saturates a core) stays out of
   * the path from the event to the kill. Housekeeping passes, and any pass that sees a pod
   * cgroup the listing does not know, wait for a fresh listing.
   */
  private async podsFor(obs: Observation, trigger: PassTrigger): Promise<RuntimePod[]> {
    const kernelOnly = trigger.firstEventNs !== null && !trigger.sources.housekeeping && !trigger.sources.start;
    if (kernelOnly && this.runtimeOk && this.lastPodsAt > 0 && Date.now() - this.lastPodsAt < POD_LIST_MAX_AGE_MS) {
      const known = new Set(this.lastPods.map((p) => p.uid));
      if ([...obs.pods.keys()].every((uid) => known.has(uid))) {
        this.usedCachedPods = true;
        if (!this.refreshing) {
          this.refreshing = this.listRuntimePods()
            .then(() => undefined)
            .finally(() => (this.refreshing = null));
        }
        return this.lastPods;
      }
    }
    this.usedCachedPods = false;
    return this.listRuntimePods();
  }
  private usedCachedPods = false;
  private stopped = false;
  private lastPodsAt = 0;
  private refreshing: Promise<void> | null = null;
  private podDirWatchers: fs.FSWatcher[] = [];
  private learnTimer: NodeJS.Timeout | null = null;

  /**
   * inotify on the pod cgroup root (and its QoS tiers): a new pod cgroup means a new sandbox,
   * so the pod listing is refreshed in the background right away, and a kernel-woken pass can
   * decide on it without a CRI round trip (see podsFor). Best effort: without it, such a pass
   * just lists fresh.
   */
  private watchPodDirs(): void {
    const root = this.o.observer.podRootMemoryDir;
    const dirs = [root];
    try {
      for (const e of fs.readdirSync(root, { withFileTypes: true })) {
        if (e.isDirectory() && /(^|-)(burstable|besteffort)(\.slice)?$/.test(e.name)) dirs.push(path.join(root, e.name));
      }
    } catch {
      return;
    }
    for (const d of dirs) {
      try {
        const w = fs.watch(d, { persistent: false }, (_event, name) => {
          if (name && podUidFromDirName(String(name))) this.learnPods(5);
        });
        w.on('error', () => w.close());
        this.podDirWatchers.push(w);
      } catch (err) {
        this.o.logger.debug({ err, dir: d }, 'no inotify on a pod cgroup dir');
      }
    }
  }

  /** Refreshes the pod listing until it covers the pod cgroups seen (a sandbox turns ready shortly after its cgroup appears). */
  private learnPods(tries: number): void {
    if (this.learnTimer || this.stopped) return;
    this.learnTimer = setTimeout(() => {
      this.learnTimer = null;
      void this.listRuntimePods().then(() => {
        const known = new Set(this.lastPods.map((p) => p.uid));
        const missing = listPodCgroups(this.o.layout.memoryMount, this.o.observer.opts.podCgroupRoot).some((c) => !known.has(c.uid));
        if (missing && tries > 1) this.learnPods(tries - 1);
      });
    }, 100);
    this.learnTimer.unref();
  }

  private async listRuntimePods(): Promise<RuntimePod[]> {
    try {
      // A pass must not stall on a runtime that stopped answering: a short deadline (shorter
      // still while it is known to be down), then the last known pods.
      const pods = await this.o.runtime.listPods(this.runtimeOk ? 1000 : 250);
      if (!this.runtimeOk) this.o.logger.info('container runtime answers again');
      this.runtimeOk = true;
      this.lastPods = pods;
      this.lastPodsAt = Date.now();
      return pods;
    } catch (err) {
      this.o.metrics.runtimeErrors.inc({ call: 'listPods' });
      this.lastProblem = `container runtime: ${err instanceof Error ? err.message : String(err)}`;
      // Log the first failure and then at most every 30 s: a dead runtime must not flood logs.
      if (this.runtimeOk || Date.now() - this.runtimeErrorLogged > 30_000) {
        this.o.logger.warn({ err }, 'container runtime does not answer; deciding on the last known pods');
        this.runtimeErrorLogged = Date.now();
      }
      this.runtimeOk = false;
      return this.lastPods;
    }
  }

  private async refreshImageFs(): Promise<void> {
    try {
      this.imagefsPath = (await this.o.runtime.imageFsInfo())?.mountpoint || undefined;
    } catch (err) {
      this.o.metrics.runtimeErrors.inc({ call: 'imageFsInfo' });
      this.o.logger.debug({ err }, 'ImageFsInfo failed');
    }
  }

  private observe(): Observation {
    return this.o.observer.observe(this.imagefsPath);
  }

  private async pass(trigger: PassTrigger): Promise<PassResult> {
    const o = this.o;
    const t0 = ns();
    o.metrics.passes.inc();
    // In the background: the mountpoint only decides the filesystem layout, it may lag a pass.
    if (trigger.sources.start || trigger.sources.housekeeping) void this.refreshImageFs();
    const observedNs = ns();
    const obs = this.observe();
    const podsNs = ns();
    const runtimePods = await this.podsFor(obs, trigger);
    const podsDoneNs = ns();
    const joined = joinPods(runtimePods, obs.pods, o.pods).filter((j) => !this.inFlight.has(j.runtime.uid));
    const now = Number(ns());
    let ev = evaluate(o.policy, this.state, { now, node: obs.node, pods: joined.map((j) => j.active), layout: obs.layout });
    if (ev.thresholdsMet.some((t) => !isMemorySignal(t.signal) && t.signal !== 'pid.available') && (await this.addDiskUsage(joined))) {
      // A disk threshold is met: rank on the pods' disk usage, read only now (it costs a
      // runtime call per container). Same state and clock: the decision is the pass's.
      ev = evaluate(o.policy, this.state, { now, node: obs.node, pods: joined.map((j) => j.active), layout: obs.layout });
    }
    const decisionNs = ns();
    if (o.logger.isLevelEnabled('debug')) {
      o.logger.debug(
        {
          sources: trigger.sources,
          wakeToPassMs: trigger.firstEventNs !== null ? msBetween(trigger.firstEventNs, t0) : undefined,
          observeMs: msBetween(observedNs, podsNs),
          podsMs: msBetween(podsNs, podsDoneNs),
          evaluateMs: msBetween(podsDoneNs, decisionNs),
          cachedPods: this.usedCachedPods,
          memoryAvailable: obs.node.memory?.availableBytes,
          pods: joined.length,
          thresholdsMet: ev.thresholdsMet.length,
        },
        'pass',
      );
    }
    this.state = ev.state;
    this.lastEvaluation = ev;
    this.report(obs, ev);
    this.scheduleGrace(ev);
    let result: PassResult;
    try {
      result = await this.act(ev, joined, trigger, decisionNs, observedNs);
    } finally {
      // After acting: moving a line can block for an RCU grace period (see arming.ts), which
      // must not sit between a decision and its kill.
      this.arming?.update(obs.memory, obs.allocatable);
      o.metrics.passDuration.observe(msBetween(t0, ns()) / 1000);
    }
    this.lastPassOkAt = Date.now();
    if (this.runtimeOk) this.lastProblem = '';
    return result;
  }

  /** Adds writable-layer and log usage to the pods; false when the runtime cannot tell. */
  private async addDiskUsage(joined: JoinedPod[]): Promise<boolean> {
    if (!this.o.runtime.containerDiskUsage) return false;
    let usage: Map<string, ContainerUsage[]>;
    try {
      usage = await this.o.runtime.containerDiskUsage();
    } catch (err) {
      this.o.metrics.runtimeErrors.inc({ call: 'containerDiskUsage' });
      this.o.logger.warn({ err }, 'container disk usage unavailable; ranking without it');
      return false;
    }
    for (const j of joined) {
      const disk = usage.get(j.runtime.uid);
      if (!disk) continue;
      const u = (j.active.usage ??= { containers: [], volumes: [] });
      // The pod-level memory entry stays; disk entries are per container.
      u.containers = [...u.containers.filter((c) => c.memoryBytes !== undefined).map((c) => ({ name: c.name, memoryBytes: c.memoryBytes! })), ...disk];
    }
    return true;
  }

  /** Metrics for conditions and thresholds; a log line when they change. */
  private report(obs: Observation, ev: Evaluation): void {
    const m = this.o.metrics;
    for (const c of ['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const) m.nodeCondition.set({ condition: c }, ev.conditions.includes(c) ? 1 : 0);
    m.thresholdMet.reset();
    for (const t of ev.thresholdsMet) m.thresholdMet.set({ signal: t.signal, kind: t.kind }, 1);
    const n = obs.node;
    if (n.memory) m.observation.set({ signal: 'memory.available' }, n.memory.availableBytes);
    if (n.allocatableMemory) m.observation.set({ signal: 'allocatableMemory.available' }, n.allocatableMemory.availableBytes);
    if (n.nodefs?.availableBytes !== undefined) m.observation.set({ signal: 'nodefs.available' }, n.nodefs.availableBytes);
    if (n.pid) m.observation.set({ signal: 'pid.available' }, n.pid.maxPID - n.pid.running);
    const key = ev.conditions.join(',');
    if (key !== this.lastConditions) {
      this.o.logger.info({ conditions: ev.conditions, thresholdsMet: ev.thresholdsMet }, 'node conditions changed');
      this.lastConditions = key;
    }
  }
  private lastConditions = '';

  /** Soft thresholds: wake exactly when the earliest pending grace period ends. */
  private scheduleGrace(ev: Evaluation): void {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    const now = Number(ns());
    let next = Infinity;
    for (const [t, at] of ev.state.firstObservedAt) {
      const due = at + t.gracePeriodNs;
      if (t.gracePeriodNs > 0 && due > now) next = Math.min(next, due);
    }
    if (next === Infinity) return;
    this.graceTimer = setTimeout(() => this.wake({ source: 'grace-period' }), Math.ceil((next - now) / 1e6) + 1);
  }

  private async act(ev: Evaluation, joined: JoinedPod[], trigger: PassTrigger, decisionNs: bigint, observedNs: bigint): Promise<PassResult> {
    const o = this.o;
    const byUid = new Map(joined.map((j) => [j.runtime.uid, j]));
    if (ev.localStorageEvictions.length > 0) {
      let any = false;
      for (const e of ev.localStorageEvictions) {
        const j = byUid.get(e.pod.uid);
        if (j) any = (await this.evictOne(j, e, null, false, trigger, decisionNs, observedNs)).ok || any;
      }
      return { again: any && !o.dryRun };
    }
    if (ev.reclaim && ev.reclaim.functions.length > 0) {
      if (o.dryRun) {
        o.logger.info({ signal: ev.reclaim.signal, functions: ev.reclaim.functions, dryRun: true }, 'would reclaim node-level resources');
      } else {
        for (const fn of ev.reclaim.functions) {
          try {
            const r = await o.runtime.reclaim(fn);
            o.logger.info({ signal: ev.reclaim.signal, function: fn, freedBytes: r.freedBytes }, 'node-level reclaim');
          } catch (err) {
            o.metrics.runtimeErrors.inc({ call: fn });
            o.logger.warn({ err, function: fn }, 'node-level reclaim failed');
          }
        }
        const after = this.observe();
        if (resolvedByReclaim(o.policy, after.layout, after.node)) {
          o.logger.info({ signal: ev.reclaim.signal }, 'node-level reclaim resolved the pressure; no eviction');
          return { again: true };
        }
      }
    }
    const plan = ev.plan;
    if (!plan) return;
    if (trigger.firstEventNs !== null) {
      const src = Object.keys(trigger.sources).find((s) => s !== 'housekeeping' && s !== 'again') ?? 'unknown';
      o.metrics.eventToDecision.observe({ source: src }, Math.max(0, msBetween(trigger.firstEventNs, decisionNs)) / 1000);
    }
    const threshold = ev.thresholdsMet.find((t) => t.signal === plan.signal && t.gracePeriodMet) ?? null;
    if (plan.candidates.length === 0) {
      o.logger.warn({ signal: plan.signal, threshold }, 'threshold met but no pod can be evicted (none, or only critical pods)');
      return;
    }
    for (const c of plan.candidates) {
      const j = byUid.get(c.pod.uid);
      if (!j) continue;
      const fast = o.fastKill && plan.hard && isMemorySignal(plan.signal as Signal);
      const rec = await this.evictOne(j, c, threshold, fast, trigger, decisionNs, observedNs);
      if (rec.ok) return { again: !o.dryRun };
    }
    o.logger.error({ signal: plan.signal, candidates: plan.candidates.length }, 'no candidate could be evicted this pass');
    return;
  }

  private async evictOne(j: JoinedPod, e: Eviction, threshold: ThresholdStatus | null, fast: boolean, trigger: PassTrigger, decisionNs: bigint, observedNs: bigint): Promise<EvictionRecord> {
    const o = this.o;
    const rec: EvictionRecord = {
      pod: e.pod,
      sandboxId: j.runtime.sandboxId,
      signal: e.signal,
      ok: false,
      dryRun: o.dryRun,
      gracePeriodSeconds: e.gracePeriodSeconds,
      threshold,
      reasons: e.reasons,
      message: e.message,
      action: 'none',
      at: { notified: String(trigger.firstNotifiedNs), observed: String(observedNs), decision: String(decisionNs) },
    };
    if (trigger.firstEventNs !== null) rec.at.event = String(trigger.firstEventNs);
    const podLog = { pod: `${e.pod.namespace}/${e.pod.name}`, uid: e.pod.uid, signal: e.signal, threshold, observation: threshold?.observed, reasons: e.reasons, specSource: j.specSource };
    if (o.dryRun) {
      rec.ok = true;
      o.logger.info({ ...podLog, dryRun: true, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message }, 'would evict pod (dry run)');
      this.emit('eviction', rec);
      return rec;
    }
    const podPath = j.cgroup?.path;
    const beforeBytes = j.cgroup?.usage.memoryWorkingSetBytes ?? 0;
    if (podPath && !fs.existsSync(cgroupDir(o.layout.memoryMount, podPath))) {
      // The pod ended between the observation and now (its cgroup is gone): what the eviction
      // wanted has happened. Re-evaluate on fresh numbers rather than evict the next pod.
      rec.ok = true;
      rec.note = 'pod cgroup vanished before the eviction; re-evaluating';
      o.logger.info({ ...podLog }, rec.note);
      this.emit('eviction', rec);
      return rec;
    }
    let stop: Promise<void> | null = null;
    if (fast && podPath) {
      rec.action = 'fast-kill';
      rec.at.killSent = String(ns());
      try {
        rec.kill = killPodProcesses(o.layout.unifiedMount, o.layout.memoryMount, podPath);
      } catch (err) {
        o.logger.warn({ err, ...podLog }, 'fast kill failed; stopping through the runtime');
      }
      o.metrics.decisionToStop.observe({ action: 'kill' }, msBetween(decisionNs, ns()) / 1000);
      // StopPodSandbox follows in the background; the pod stays "in flight" until it is done.
      rec.at.stopSent = String(ns());
      stop = this.stopInBackground(j, e, rec, decisionNs);
    } else {
      rec.action = 'stop';
      rec.at.stopSent = String(ns());
      try {
        await o.runtime.stopPod(j.runtime, e.gracePeriodSeconds);
        rec.at.stopDone = String(ns());
        o.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(decisionNs, ns()) / 1000);
      } catch (err) {
        rec.error = err instanceof Error ? err.message : String(err);
        o.metrics.evictionFailures.inc({ signal: e.signal, step: 'stop' });
        o.metrics.runtimeErrors.inc({ call: 'stopPod' });
        o.logger.warn({ ...podLog, err }, 'eviction failed; trying the next candidate');
        this.emit('eviction', rec);
        return rec;
      }
    }
    if (podPath) {
      const r = await waitMemoryReleased(o.layout.memoryMount, o.layout.memoryVersion, podPath, beforeBytes, o.releaseTimeoutMs ?? 5000);
      rec.at.released = String(ns());
      rec.releasedWithinBound = r.released;
      o.metrics.memoryRelease.observe(msBetween(decisionNs, ns()) / 1000);
    }
    if (stop && !rec.releasedWithinBound) {
      // The kill did not bring the memory back: the runtime's stop decides success.
      await stop;
      if (rec.error) {
        o.metrics.evictionFailures.inc({ signal: e.signal, step: 'stop' });
        o.logger.warn({ ...podLog, err: rec.error }, 'eviction failed; trying the next candidate');
        this.emit('eviction', rec);
        return rec;
      }
    }
    rec.ok = true;
    o.metrics.evictions.inc({ signal: e.signal });
    o.logger.warn(
      {
        ...podLog,
        gracePeriodSeconds: e.gracePeriodSeconds,
        message: e.message,
        action: rec.action,
        kill: rec.kill,
        at: rec.at,
        releasedWithinBound: rec.releasedWithinBound,
        reactionMs: rec.at.event ? msBetween(BigInt(rec.at.event), BigInt(rec.at.killSent ?? rec.at.stopSent!)) : undefined,
      },
      'evicted pod',
    );
    this.emit('eviction', rec);
    if (o.reporter) {
      o.reporter.report({ pod: e.pod, signal: e.signal, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message, annotations: e.annotations }).catch((err: unknown) => o.logger.warn({ err }, 'eviction report failed'));
    }
    return rec;
  }

  private stopInBackground(j: JoinedPod, e: Eviction, rec: EvictionRecord, decisionNs: bigint): Promise<void> {
    const o = this.o;
    const uid = j.runtime.uid;
    const p = o.runtime
      .stopPod(j.runtime, 0)
      .then(
        (timings) => {
          rec.at.stopDone = String(ns());
          o.metrics.decisionToStop.observe({ action: 'stop' }, msBetween(decisionNs, ns()) / 1000);
          o.logger.info({ pod: `${e.pod.namespace}/${e.pod.name}`, uid, timings, stopDone: rec.at.stopDone }, 'pod sandbox stopped');
          this.emit('stopped', rec);
        },
        (err: unknown) => {
          rec.error = err instanceof Error ? err.message : String(err);
          o.metrics.runtimeErrors.inc({ call: 'stopPod' });
          o.logger.warn({ err, pod: `${e.pod.namespace}/${e.pod.name}`, uid }, 'StopPodSandbox after fast kill failed');
        },
      )
      .finally(() => this.inFlight.delete(uid));
    this.inFlight.set(uid, p);
    return p;
  }
}
