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
import { doublingMs } from '../policy/backoff';
import { hostCgroups, type CgroupPort } from '../node/cgroup-port';
import type { CgroupLayout } from '../node/cgroups';
import type { NodeObserver } from '../node/observer';
import { nextDeadline } from '../policy/actions';
import type { PolicyConfig } from '../policy/config';
import type { Evaluation } from '../policy/evaluate';
import { DEFAULT_ORDER_TTL_MS, nearHardMemoryLine } from '../policy/standing-order';
import type { NodeCondition, NodeStats } from '../policy/types';
import { Actuator } from './actuator';
import { Arming } from './arming';
import { cancel, msSince, systemClock } from './clock';
import { Controller, type PassTrigger } from './controller';
import { CriStop } from './effects/cri-stop';
import { reportAndEnd, type EvictionDeps, type EvictionRecord } from './effects/eviction';
import { crashPoint } from './crash-point';
import { OrderJournal } from './order-journal';
import { EvictionJournal, type JournalEntry } from './eviction-journal';
import { FastKill } from './effects/fast-kill';
import { MemoryBrakes, type BrakeEntry } from './effects/memory-brake';
import { NodeReclaim } from './effects/node-reclaim';
import { ConfirmOrder } from './effects/order-confirm';
import type { Health } from './http-server';
import type { AgentMetrics } from './metrics';
import { NodeView } from './node-view';
import { PassRunner } from './pass';
import type { Recorder } from './recorder';
import { LastKnownPriorities } from './last-known-priorities';
import { PodListing } from './pod-listing';
import type { Clock, EvictionReporter, NotificationPort, OrderFired, PodSpecSource, RuntimePort, Timer, Wakeup } from './ports';
import { StandingOrders } from './standing-orders';
import { VolumeUsageCache } from './volume-usage';

export type { EvictionRecord } from './actuator';

export interface AgentOptions {
  policy: PolicyConfig;
  layout: CgroupLayout;
  /** the node's numbers (NodeObserver; in unit tests, a fake node's) */
  observer: Pick<NodeObserver, 'opts' | 'memoryDir' | 'podRootMemoryDir' | 'observe' | 'observeMemory'> & Partial<Pick<NodeObserver, 'memAvailableBytes'>>;
  runtime: RuntimePort;
  /** null: no kernel notifications at all, the housekeeping tick alone drives the loop */
  notifications: NotificationPort | null;
  pods?: PodSpecSource;
  /**
   * Runtime-only pod specs take priority and requests from the sandboxes' evictd.io/*
   * annotations. Their authors are the pods' own: only where every pod author is trusted.
   */
  trustSandboxAnnotations?: boolean;
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
  /** the pod cgroups as actions touch them (default: this host's cgroupfs) */
  cgroups?: CgroupPort;
  /** the monotonic clock (default: the process's) */
  clock?: Clock;
  /**
   * Standing orders on the hard memory lines (default: as fastKill): near a line, each pass
   * names the pod the kubelet's ranking would evict, and a line whose mechanism can hold the
   * order kills it as the line is crossed; the next pass stops and reports it. `ttlMs`: how long
   * an order stands unless a pass refreshes it (default 1 s).
   */
  standingOrders?: boolean | { ttlMs?: number };
  /** `--record FILE`: told of each pass once its actions are issued (see recorder.ts) */
  recorder?: Pick<Recorder, 'pass'>;
}

export const DEFAULT_STATE_DIR = '/run/evictd';

/**
 * How often the threshold lines follow inactive_file between passes: every second, and ten
 * times as often when usage is within NEAR_LINE of a line, where inactive_file shrinking is
 * what brings the line to usage (see Arming.update) and no kernel event will say so.
 */
const DRIFT_TICK_MS = 1000;
const DRIFT_TICK_NEAR_MS = 100;
/** How long a previous run's brakes wait for the first pass before they are released anyway. */
const BRAKE_RECOVERY_MAX_MS = 10_000;
const nearLineBytes = (capacityBytes: number): number => Math.max(64 * 1024 * 1024, capacityBytes / 16);

export class Agent extends EventEmitter {
  readonly controller: Controller;
  private readonly listing: PodListing;
  private readonly actuator: Actuator;
  private readonly passes: PassRunner;
  private readonly volumes: VolumeUsageCache | undefined;
  private arming: Arming | null = null;
  /** the earliest soft grace period's end or brake's bound: a pass then, whatever else wakes it */
  private deadlineTimer: Timer | null = null;
  private readonly brakes: MemoryBrakes | null;
  private readonly lastKnown: LastKnownPriorities | null;
  private readonly journal: EvictionJournal | null;
  private driftTimer: Timer | null = null;
  private readonly clock: Clock;
  /** monotonic ns of the last pass that ended without an error; null before the first */
  private lastPassOkAt: bigint | null = null;
  /** set by stop(): a pass that ends after it must not arm a timer again (it would hold the process) */
  private stopping = false;
  /**
   * A previous run's brakes are released once this run can see and act (after its first pass
   * has armed the lines), not at start: until then the brake is all that holds a ramping pod.
   */
  private brakeRecovery: Timer | null = null;
  /** retries of evictions a crashed run began, whose stop failed (finishEviction) */
  private readonly finishRetries = new Set<Timer>();
  private recordedBrakes: BrakeEntry[] | null = null;
  private lastProblem = 'no pass yet';
  /** null when standing orders are off */
  private readonly orders: StandingOrders | null;
  private readonly orderTtlMs: number;
  /** a pass before the orders in force lapse (half their TTL after they were placed) */
  private orderRefreshTimer: Timer | null = null;
  /** a pass to retry the stop of a pod a used order killed */
  private orderRetryTimer: Timer | null = null;
  private readonly orderJournal: OrderJournal | null;
  private readonly confirmOrder: ConfirmOrder | null;

  constructor(private readonly o: AgentOptions) {
    super();
    const clock = (this.clock = o.clock ?? systemClock);
    const cgroups = o.cgroups ?? hostCgroups(o.layout);
    this.listing = new PodListing({
      runtime: o.runtime,
      logger: o.logger,
      metrics: o.metrics,
      memoryMount: o.layout.memoryMount,
      podCgroupRoot: o.observer.opts.podCgroupRoot,
      podRootMemoryDir: o.observer.podRootMemoryDir,
      clock,
      onListed: (uids) => {
        if (this.orders?.listed(uids)) this.wake({ source: 'standing-order' });
      },
    });
    const node = new NodeView(o.observer, o.runtime, o.logger, o.metrics);
    this.volumes = o.volumes
      ? new VolumeUsageCache({ kubeletRootDir: o.volumes.kubeletRootDir, periodMs: o.volumes.periodMs ?? 60_000, logger: o.logger, clock })
      : undefined;
    const stateDir = o.stateDir ?? (o.policy.memoryBrake ? DEFAULT_STATE_DIR : undefined);
    if (o.policy.memoryBrake && o.layout.memoryVersion !== 2)
      throw new Error('the memory brake needs cgroup v2 (memory.high); the memory controller here is on cgroup v1');
    this.brakes =
      stateDir === undefined
        ? null
        : new MemoryBrakes({
            stateDir,
            cgroups,
            clock,
            marginBytes: o.policy.memoryBrake?.marginBytes ?? 0,
            logger: o.logger,
            metrics: o.metrics,
            podRootDir: o.observer.podRootMemoryDir,
            ...(o.observer.memAvailableBytes ? { nodeAvailableBytes: () => o.observer.memAvailableBytes!() } : {}),
          });
    const braking = o.policy.memoryBrake ? this.brakes : null;
    // With a pod source, what it last said of priorities outlives a restart (in the state dir).
    this.lastKnown = o.pods && stateDir !== undefined ? new LastKnownPriorities({ stateDir, logger: o.logger, clock }) : null;
    // Evictions in progress are kept until reported, so that a crash loses none (a dry run has none).
    this.journal = stateDir !== undefined && !o.dryRun ? new EvictionJournal({ stateDir, logger: o.logger }) : null;
    // And the standing orders, whose kills native threads write: each order before it is placed,
    // each use before its kill (order-journal.ts).
    this.orderJournal = stateDir !== undefined && !o.dryRun ? new OrderJournal({ stateDir, logger: o.logger, monotonicNs: () => clock.now() }) : null;
    const deps: EvictionDeps = {
      runtime: o.runtime,
      cgroups,
      clock,
      logger: o.logger,
      metrics: o.metrics,
      reporter: o.reporter,
      releaseTimeoutMs: o.releaseTimeoutMs ?? 5000,
      ...(this.journal ? { journal: this.journal } : {}),
      ...(this.orderJournal ? { orderJournal: this.orderJournal } : {}),
    };
    // An order kills through the pod's cgroup, as a fast kill does: off with it unless asked for.
    const so = o.standingOrders ?? o.fastKill;
    this.orderTtlMs = (typeof so === 'object' ? so.ttlMs : undefined) ?? DEFAULT_ORDER_TTL_MS;
    this.orders =
      so === false
        ? null
        : new StandingOrders({
            arming: () => this.arming,
            logger: o.logger,
            metrics: o.metrics,
            clock,
            dryRun: o.dryRun,
            ttlMs: this.orderTtlMs,
            journal: this.orderJournal,
            policy: o.policy,
          });
    this.confirmOrder = this.orders
      ? new ConfirmOrder(deps, (uid, error) => {
          this.orders?.stopped(uid, error);
          if (error !== null) this.scheduleOrderRetry();
        })
      : null;
    this.actuator = new Actuator({
      effects: {
        fastKill: new FastKill(deps, (rec) => this.emit('stopped', rec)),
        stop: new CriStop(deps, (rec) => {
          this.recordEviction(rec);
          // The graceful stop ended: its pod's memory is back (or the stop failed); look again.
          if (!this.stopping) this.wake({ source: 'stop-done' });
        }),
        reclaim: new NodeReclaim({ policy: o.policy, runtime: o.runtime, observe: () => node.observe(), logger: o.logger, metrics: o.metrics }),
        ...(braking ? { brake: braking.braking, releaseBrake: braking.releasing, easeBrake: braking.easing } : {}),
        ...(this.confirmOrder ? { confirm: this.confirmOrder } : {}),
      },
      logger: o.logger,
      metrics: o.metrics,
      dryRun: o.dryRun,
      fastKill: o.fastKill,
      record: (rec) => this.recordEviction(rec),
    });
    this.passes = new PassRunner({
      policy: o.policy,
      node,
      runtime: o.runtime,
      pods: o.pods,
      ...(o.trustSandboxAnnotations ? { trustSandboxAnnotations: true } : {}),
      ...(this.lastKnown ? { lastKnown: this.lastKnown } : {}),
      logger: o.logger,
      metrics: o.metrics,
      listing: this.listing,
      actuator: this.actuator,
      clock,
      volumes: this.volumes,
      ...(braking ? { brakes: braking } : {}),
      ...(this.orders
        ? {
            orders: {
              pending: () => this.orders!.pendingConfirmations(),
              ttlMs: this.orderTtlMs,
              cgroupDir: (podPath: string) => cgroups.killDir(podPath),
              flushUses: () => o.notifications?.flushOrderUses?.(),
            },
          }
        : {}),
    });
    this.controller = new Controller((t) => this.pass(t), {
      housekeepingIntervalMs: o.housekeepingIntervalMs,
      clock,
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
    // Brakes a crashed run left on stay until the first pass has armed the lines (recoverBrakes).
    // Its bound: a first pass that hangs must not keep them on for good.
    const recorded = this.brakes?.readRecord({ dryRun: o.dryRun }) ?? null;
    if (recorded) {
      this.recordedBrakes = recorded;
      this.brakeRecovery = this.clock.after(BRAKE_RECOVERY_MAX_MS, () => this.recoverBrakes());
    }
    // Before the first pass too: a source that does not answer yet leaves these priorities.
    this.lastKnown?.load();
    // An eviction a crashed run began is finished, in the background: its stop, then its report.
    const unfinished = this.journal?.takeUnfinished() ?? [];
    // A kill an order thread wrote before the last run could confirm it is an eviction to finish
    // too, unless the eviction journal holds that pod already.
    const used = this.orderJournal?.takeUsed(new Set(unfinished.map((e) => e.pod.uid))) ?? [];
    for (const e of [...unfinished, ...used]) void this.finishEviction(e);
    if (this.orderJournal && this.orders && o.notifications?.setOrderUseLog) {
      try {
        o.notifications.setOrderUseLog(this.orderJournal.openUsesLog());
      } catch (err) {
        // Orders still kill at the line; a crash before a use is confirmed would lose its report.
        o.logger.error({ err, file: this.orderJournal.usesFile }, 'standing order uses log unavailable: a kill is on disk only once confirmed');
      }
    }
    if (o.notifications) {
      o.metrics.notificationsMode.set({ mode: o.notifications.mechanism }, 1);
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
        clock: this.clock,
        onOrderFired: (line, fired) => this.orderFired(line, fired),
        nearLines: this.orders !== null,
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
      o.metrics.notificationsMode.set({ mode: 'housekeeping-only' }, 1);
    }
    this.controller.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // First: no kill may come from an order once the agent is going away.
    this.orders?.close();
    this.orderRefreshTimer = cancel(this.orderRefreshTimer);
    this.orderRetryTimer = cancel(this.orderRetryTimer);
    for (const t of this.finishRetries) t.cancel();
    this.finishRetries.clear();
    this.driftTimer = cancel(this.driftTimer);
    this.deadlineTimer = cancel(this.deadlineTimer);
    await this.controller.stop();
    // No agent, no eviction to end a brake: a braked pod must not stay throttled behind us.
    this.recoverBrakes(false);
    if (!this.o.dryRun) this.brakes?.releaseAll('agent-stop');
    await this.listing.close();
    this.lastKnown?.save();
    await this.arming?.close();
    await this.actuator.settle();
    await this.confirmOrder?.settle();
    await this.volumes?.close();
  }

  /**
   * An eviction a crashed run began: its stop, then its report. A failed stop is tried again
   * (from 250 ms, doubling up to the housekeeping interval) for as long as this run lives: right
   * after a crash the runtime may be busy (the lab saw the stop fail there), and the entry stays
   * in the journal for the next start meanwhile.
   */
  private async finishEviction(e: JournalEntry, attempt = 0): Promise<void> {
    const o = this.o;
    const pod = `${e.pod.namespace}/${e.pod.name}`;
    if (attempt === 0) {
      this.journal!.begin(e);
      o.logger.warn(
        { pod, uid: e.pod.uid, signal: e.signal, began: new Date(e.atMs).toISOString() },
        'eviction from a previous run: finishing it (stop, then report)',
      );
    }
    try {
      // Idempotent in the runtime: a sandbox already stopped, or gone, is a success.
      await o.runtime.stopPod(
        { sandboxId: e.sandboxId, uid: e.pod.uid, name: e.pod.name, namespace: e.pod.namespace, labels: {}, annotations: {}, ready: true },
        e.gracePeriodSeconds,
      );
    } catch (err) {
      if (this.stopping) {
        o.logger.error({ pod, uid: e.pod.uid, err }, 'eviction from a previous run: its sandbox stop failed; kept for the next start');
        return;
      }
      const retryInMs = doublingMs(attempt + 1, 250, Math.max(250, o.housekeepingIntervalMs));
      o.logger.warn({ pod, uid: e.pod.uid, err, attempt: attempt + 1, retryInMs }, 'eviction from a previous run: its sandbox stop failed; trying again');
      const t = this.clock.after(retryInMs, () => {
        this.finishRetries.delete(t);
        void this.finishEviction(e, attempt + 1);
      });
      this.finishRetries.add(t);
      return;
    }
    reportAndEnd(
      { reporter: o.reporter, journal: this.journal!, logger: o.logger },
      { pod: e.pod, signal: e.signal, gracePeriodSeconds: e.gracePeriodSeconds, message: e.message, annotations: e.annotations, recovered: true },
    );
  }

  /**
   * Releases (or re-owns) the brakes a previous run left on, once: after the first pass, at the
   * bound, or when this run ends first. The pass after it brakes again if the pressure is there.
   */
  private recoverBrakes(wakeAfter = true): void {
    if (!this.brakeRecovery) return;
    this.brakeRecovery = cancel(this.brakeRecovery);
    this.brakes!.restoreRecord(this.recordedBrakes, { dryRun: this.o.dryRun });
    this.recordedBrakes = null;
    if (wakeAfter && !this.stopping) this.wake({ source: 'brake-recovered' });
  }

  private recordEviction(rec: EvictionRecord): void {
    this.orders?.recorded(rec);
    this.emit('eviction', rec);
  }

  /**
   * The last thing a dying process does (run.ts, on an uncaught error): no order may kill and
   * no brake may stay on once nobody is there to end it. Synchronous: no await is safe then.
   */
  abandon(): void {
    this.stopping = true;
    this.orders?.close();
    this.recoverBrakes(false);
    if (!this.o.dryRun) this.brakes?.releaseAll('agent-stop');
    this.lastKnown?.save();
  }

  /** A kernel notification (or any other reason to look again). */
  wake(w: Wakeup): void {
    this.o.metrics.notifications.inc({ source: w.source }, w.count ?? 1);
    this.controller.notify(w.source, w.monotonicNs, w.count ?? 1);
  }

  /** Live: the loop completes passes (a runtime that is down does not stop them: they decide on the last known pods). */
  liveness(): Health {
    const stale = this.conditionsStale();
    return stale === null ? { ok: true, reason: '' } : { ok: false, reason: stale };
  }

  /** Ready: live, and the runtime answers (its outage makes evictd not ready, not dead). */
  health(): Health {
    const staleMs = this.staleMs();
    const stale = this.conditionsStale();
    if (stale !== null) return { ok: false, reason: stale };
    const failingMs = Math.round(this.listing.runtimeFailingForMs());
    if (failingMs > staleMs) return { ok: false, reason: `${this.listing.problem} (for ${failingMs} ms)` };
    return { ok: true, reason: '' };
  }

  /** How long without a successful pass (or with a runtime failing) before evictd is unhealthy. */
  private staleMs(): number {
    return 3 * this.o.housekeepingIntervalMs + 5000;
  }

  /** Why the last pass's conditions are too old to answer admission with, or null. */
  conditionsStale(): string | null {
    if (this.lastPassOkAt === null) return this.lastProblem;
    const sinceMs = Math.round(msSince(this.clock, this.lastPassOkAt));
    return sinceMs > this.staleMs() ? `no successful pass for ${sinceMs} ms (${this.lastProblem})` : null;
  }

  /** The node conditions of the last pass (for admission). */
  conditions(): NodeCondition[] {
    return this.lastEvaluation ? [...this.lastEvaluation.conditions] : [];
  }

  armedLines(): Record<string, number> {
    return this.arming?.armed() ?? {};
  }

  /**
   * One pass: decide, set the deadline timer from the evaluation (before acting: a soft
   * eviction's stop can take the pod's whole grace period), act, then move the notification
   * lines to the pass's numbers (after acting: moving a line can block for an RCU grace period,
   * see arming.ts, which must not sit between a decision and its kill).
   */
  private async pass(trigger: PassTrigger) {
    const d = await this.passes.decide(trigger);
    this.scheduleDeadline(d.evaluation);
    let result;
    try {
      result = await this.passes.act(d);
    } finally {
      this.arming?.update(d.observation.memory, d.observation.allocatable);
      this.recoverBrakes();
    }
    // After the lines moved: an order goes on the line as it now stands.
    if (this.orders) this.scheduleOrders(this.orders.afterPass({ orders: d.orders, pods: d.ranked, listedUids: d.listedUids }, Boolean(result?.again)));
    // The brakes may have changed while acting: the bound's deadline follows them.
    this.scheduleDeadline(d.evaluation);
    this.lastPassOkAt = this.clock.now();
    this.lastProblem = '';
    // Last: the pass's kills and stops are issued; a recording that fails never fails the pass.
    if (this.o.recorder) {
      try {
        this.o.recorder.pass(trigger, d);
      } catch (err) {
        this.o.logger.warn({ err }, 'recording: a pass could not be recorded');
      }
    }
    return result;
  }

  /** The lines that hold a standing order now. */
  standingOrderLines(): string[] {
    return this.orders?.standingLines ?? [];
  }

  /** A line's order was used (the pod killed as the line was crossed): the next pass confirms it, at once. */
  private orderFired(line: string, fired: OrderFired): void {
    // The crash-point tests: the pod is dead, nothing here knows yet; the next start must find it.
    if (!fired.error) crashPoint('order:killed');
    if (this.orders?.fired(line, fired)) this.wake({ source: 'standing-order-used', monotonicNs: fired.crossedNs });
  }

  /**
   * After a pass: orders in force are refreshed by a pass at half their TTL (through the
   * controller, as every wake-up), so they never lapse while the node stays near a line; a pass
   * whose pod set moved under it runs again at once; a failed confirmation's stop is retried.
   */
  private scheduleOrders(after: { placed: boolean; stale: boolean }): void {
    this.orderRefreshTimer = cancel(this.orderRefreshTimer);
    if (this.stopping) return;
    if (after.stale) this.wake({ source: 'standing-order' });
    else if (after.placed) {
      this.orderRefreshTimer = this.clock.after(Math.max(1, Math.floor(this.orderTtlMs / 2)), () => {
        this.orderRefreshTimer = null;
        this.wake({ source: 'standing-order' });
      });
    }
    this.scheduleOrderRetry();
  }

  /** A pass to try a failed confirmation again, with the backoff (see StandingOrders.retryInMs). */
  private scheduleOrderRetry(): void {
    this.orderRetryTimer = cancel(this.orderRetryTimer);
    const retry = this.stopping ? null : (this.orders?.retryInMs(this.o.housekeepingIntervalMs) ?? null);
    if (retry === null) return;
    this.orderRetryTimer = this.clock.after(retry, () => {
      this.orderRetryTimer = null;
      this.wake({ source: 'standing-order-retry' });
    });
  }

  /**
   * The drift tick's numbers put a hard line near and no order stands or is on its way: a pass
   * to place one (no kernel event announces that a ramp is getting close). At most one per half
   * TTL, and only where some line's mechanism can hold an order.
   */
  private wantsOrderPass(node: NodeStats): boolean {
    if (!this.orders || !this.arming || this.orderRefreshTimer || !this.arming.canHoldOrders()) return false;
    if (!nearHardMemoryLine(this.o.policy, node)) return false;
    const last = this.orders.lastDecidedNs;
    return last === null || msSince(this.clock, last) >= this.orderTtlMs / 2;
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
        const node: NodeStats = { memory: { availableBytes: m.memory.availableBytes, workingSetBytes: m.memory.workingSetBytes } };
        if (m.allocatable) node.allocatableMemory = { availableBytes: m.allocatable.availableBytes, workingSetBytes: m.allocatable.workingSetBytes };
        if (this.orders && nearHardMemoryLine(this.o.policy, node)) next = DRIFT_TICK_NEAR_MS;
        if (this.wantsOrderPass(node)) this.wake({ source: 'standing-order' });
      } catch (err) {
        this.o.logger.debug({ err }, 'drift tick failed');
      }
    }
    this.scheduleDrift(next);
  }

  private scheduleDrift(ms: number): void {
    this.driftTimer?.cancel();
    // In the background: the drift tick alone never keeps the process alive.
    this.driftTimer = this.clock.after(ms, () => this.driftTick(), true);
  }

  /**
   * Soft thresholds and the brake's bound: wake exactly when the earliest pending grace period
   * ends or the earliest brake reaches its bound, even when nothing else wakes the loop.
   */
  private scheduleDeadline(ev: Evaluation): void {
    this.deadlineTimer = cancel(this.deadlineTimer);
    if (this.stopping) return;
    const now = Number(this.clock.now());
    const next = nextDeadline(this.o.policy, ev, this.o.policy.memoryBrake ? (this.brakes?.active ?? []) : [], now);
    if (next === null) return;
    const source = next.source;
    this.deadlineTimer = this.clock.after(Math.max(0, Math.ceil((next.atNs - now) / 1e6)) + 1, () => this.wake({ source }));
  }
}
