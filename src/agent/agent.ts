/**
 * The agent: the lifecycle of one node's eviction loop. It wires the rooms together (pod listing,
 * pass, actuator, notification lines), starts and stops them, turns wake-ups into passes through
 * the controller (one pass at a time, see controller.ts), keeps the soft thresholds' grace timer
 * and the drift tick that moves the lines between passes, and answers health and admission.
 *
 * Everything runs on the main JS thread. The only concurrency is the background completion of
 * a fast-killed pod's StopPodSandbox (see actuator.ts).
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { CgroupLayout } from '../node/cgroups';
import type { NodeObserver } from '../node/observer';
import type { PolicyConfig } from '../policy/config';
import type { Evaluation } from '../policy/evaluate';
import type { NodeCondition } from '../policy/types';
import { nextBrakeDeadline } from '../policy/brake';
import { Actuator } from './actuator';
import { MemoryBrakes } from './brake';
import { Arming } from './arming';
import { Controller } from './controller';
import type { Health } from './http-server';
import type { AgentMetrics } from './metrics';
import { PassRunner } from './pass';
import { PodListing } from './pod-listing';
import type { EvictionReporter, NotificationPort, PodSpecSource, RuntimePort, Wakeup } from './ports';
import { VolumeUsageCache } from './volume-usage';

export type { EvictionRecord } from './actuator';

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
  /**
   * The kubelet's root dir, where the pods' emptyDir volumes are (pods/<uid>/volumes/...), and
   * how often they are measured (the kubelet's --volume-stats-agg-period; default 1 min).
   * Without it, emptyDir usage is not observed.
   */
  volumes?: { kubeletRootDir: string; periodMs?: number };
  /**
   * Where the record of memory brakes lives (see brake.ts). With it, brakes a previous run left
   * are released at start even when the brake is now off; without it, the brake (if on) keeps
   * its record under /run/evictd.
   */
  stateDir?: string;
}

export const DEFAULT_STATE_DIR = '/run/evictd';

/**
 * How often the threshold lines follow inactive_file between passes: every second, and ten
 * times as often when usage is within NEAR_LINE of a line, where inactive_file shrinking is
 * what brings the line to usage (see Arming.update) and no kernel event will say so.
 */
const DRIFT_TICK_MS = 1000;
const DRIFT_TICK_NEAR_MS = 100;
const nearLineBytes = (capacityBytes: number): number => Math.max(64 * 1024 * 1024, capacityBytes / 16);

export class Agent extends EventEmitter {
  readonly controller: Controller;
  private readonly listing: PodListing;
  private readonly actuator: Actuator;
  private readonly passes: PassRunner;
  private readonly volumes: VolumeUsageCache | undefined;
  private arming: Arming | null = null;
  private graceTimer: NodeJS.Timeout | null = null;
  private brakeTimer: NodeJS.Timeout | null = null;
  private readonly brakes: MemoryBrakes | null;
  private driftTimer: NodeJS.Timeout | null = null;
  private lastPassOkAt = 0;
  /** set by stop(): a pass that ends after it must not arm a timer again (it would hold the process) */
  private stopping = false;
  private lastProblem = 'no pass yet';

  constructor(private readonly o: AgentOptions) {
    super();
    this.listing = new PodListing({
      runtime: o.runtime,
      logger: o.logger,
      metrics: o.metrics,
      memoryMount: o.layout.memoryMount,
      podCgroupRoot: o.observer.opts.podCgroupRoot,
      podRootMemoryDir: o.observer.podRootMemoryDir,
    });
    this.actuator = new Actuator({
      policy: o.policy,
      layout: o.layout,
      runtime: o.runtime,
      reporter: o.reporter,
      logger: o.logger,
      metrics: o.metrics,
      dryRun: o.dryRun,
      fastKill: o.fastKill,
      releaseTimeoutMs: o.releaseTimeoutMs ?? 5000,
      observe: () => this.passes.observe(),
      record: (kind, rec) => this.emit(kind, rec),
    });
    this.volumes = o.volumes ? new VolumeUsageCache({ kubeletRootDir: o.volumes.kubeletRootDir, periodMs: o.volumes.periodMs ?? 60_000, logger: o.logger }) : undefined;
    const stateDir = o.stateDir ?? (o.policy.memoryBrake ? DEFAULT_STATE_DIR : undefined);
    if (o.policy.memoryBrake && o.layout.memoryVersion !== 2) throw new Error('the memory brake needs cgroup v2 (memory.high); the memory controller here is on cgroup v1');
    this.brakes =
      stateDir === undefined
        ? null
        : new MemoryBrakes({ stateDir, memoryMount: o.layout.memoryMount, marginBytes: o.policy.memoryBrake?.marginBytes ?? 0, dryRun: o.dryRun, logger: o.logger, metrics: o.metrics });
    this.passes = new PassRunner({
      policy: o.policy,
      observer: o.observer,
      runtime: o.runtime,
      pods: o.pods,
      logger: o.logger,
      metrics: o.metrics,
      listing: this.listing,
      actuator: this.actuator,
      volumes: this.volumes,
      ...(o.policy.memoryBrake && this.brakes ? { brakes: this.brakes } : {}),
      onEvaluation: (ev) => this.scheduleGrace(ev),
      afterAct: (obs) => this.arming?.update(obs.memory, obs.allocatable),
    });
    this.controller = new Controller((t) => this.pass(t), {
      housekeepingIntervalMs: o.housekeepingIntervalMs,
      onError: (err) => {
        o.metrics.passErrors.inc();
        this.lastProblem = `pass failed: ${err instanceof Error ? err.message : String(err)}`;
        o.logger.error({ err }, 'pass failed');
      },
    });
  }

  /** The last pass's evaluation (thresholds met, conditions, plan), or null before the first. */
  get lastEvaluation(): Evaluation | null {
    return this.passes.lastEvaluation;
  }

  /** Arms notifications, runs the first pass. */
  start(): void {
    const o = this.o;
    // Before the first pass: brakes a crashed run left on are released (or re-owned) first.
    this.brakes?.recover();
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
        // The gauge shows the lines in force now: rebuilt whenever one comes or goes.
        onLineMechanism: () => {
          o.metrics.lineMechanism.reset();
          for (const [line, mechanism] of Object.entries(this.arming?.mechanisms() ?? {})) o.metrics.lineMechanism.set({ line, mechanism }, 1);
        },
      });
      this.arming.start();
      this.scheduleDrift(DRIFT_TICK_MS);
      this.listing.watchPodDirs();
    } else {
      o.metrics.mechanism.set({ mechanism: 'housekeeping-only' }, 1);
    }
    this.controller.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.driftTimer) clearTimeout(this.driftTimer);
    this.driftTimer = null;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    if (this.brakeTimer) clearTimeout(this.brakeTimer);
    this.brakeTimer = null;
    await this.controller.stop();
    // No agent, no eviction to end a brake: a braked pod must not stay throttled behind us.
    this.brakes?.releaseAll('agent-stop');
    await this.listing.close();
    await this.arming?.close();
    await this.actuator.settle();
    await this.volumes?.close();
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
    if (!this.listing.runtimeOk) return { ok: false, reason: this.listing.problem };
    return { ok: true, reason: '' };
  }

  /** The node conditions of the last pass (for admission). */
  conditions(): NodeCondition[] {
    return this.lastEvaluation ? [...this.lastEvaluation.conditions] : [];
  }

  armedLines(): Record<string, number> {
    return this.arming?.armed() ?? {};
  }

  private async pass(trigger: Parameters<PassRunner['run']>[0]) {
    const result = await this.passes.run(trigger);
    this.scheduleBrakeBound();
    this.lastPassOkAt = Date.now();
    this.lastProblem = '';
    return result;
  }

  /**
   * Between passes: re-read the memory numbers (two small cgroup files) and move the threshold
   * lines if inactive_file drifted. No runtime call, no policy pass.
   */
  private driftTick(): void {
    this.driftTimer = null;
    if (!this.arming) return;
    let next = DRIFT_TICK_MS;
    if (!this.controller.busy) {
      try {
        const m = this.o.observer.observeMemory();
        this.arming.update(m.memory, m.allocatable, { wakeOnMet: true });
        const gap = this.arming.headroomBytes();
        if (gap !== null && gap < nearLineBytes(m.memory.capacityBytes)) next = DRIFT_TICK_NEAR_MS;
      } catch (err) {
        this.o.logger.debug({ err }, 'drift tick failed');
      }
    }
    this.scheduleDrift(next);
  }

  private scheduleDrift(ms: number): void {
    if (this.driftTimer) clearTimeout(this.driftTimer);
    this.driftTimer = setTimeout(() => this.driftTick(), ms);
    this.driftTimer.unref();
  }

  /** A braked pod reaches the bound even when nothing else wakes the loop: wake then. */
  private scheduleBrakeBound(): void {
    if (this.brakeTimer) clearTimeout(this.brakeTimer);
    this.brakeTimer = null;
    if (this.stopping) return;
    const due = this.brakes ? nextBrakeDeadline(this.o.policy, this.brakes.active) : null;
    if (due === null) return;
    const ms = Math.max(0, Math.ceil((due - Number(process.hrtime.bigint())) / 1e6) + 1);
    this.brakeTimer = setTimeout(() => this.wake({ source: 'memory-brake' }), ms);
  }

  /** Soft thresholds: wake exactly when the earliest pending grace period ends. */
  private scheduleGrace(ev: Evaluation): void {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
    if (this.stopping) return;
    const now = Number(process.hrtime.bigint());
    let next = Infinity;
    for (const [t, at] of ev.state.firstObservedAt) {
      const due = at + t.gracePeriodNs;
      if (t.gracePeriodNs > 0 && due > now) next = Math.min(next, due);
    }
    if (next === Infinity) return;
    this.graceTimer = setTimeout(() => this.wake({ source: 'grace-period' }), Math.ceil((next - now) / 1e6) + 1);
  }
}
