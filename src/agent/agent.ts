/**
 * The agent: the lifecycle of one node's eviction loop. It wires the rooms together (pod listing,
 * pass, actuator, notification lines), starts and stops them, turns wake-ups into passes through
 * the controller (one pass at a time, see controller.ts), and answers health and admission. Its
 * timers each have a file: the grace periods' deadline (deadline-timer.ts), the drift tick that
 * moves the lines between passes (drift-tick.ts), the orders' refresh and retry
 * (order-timers.ts); so does what a previous run left (previous-run.ts).
 *
 * Everything runs on the main JS thread. The only concurrency is the background completion of
 * a fast-killed pod's StopPodSandbox (see actuator.ts).
 */
import { EventEmitter } from 'node:events';
import { hostCgroups } from '../node/cgroup-port';
import type { Evaluation } from '../policy/evaluate';
import { DEFAULT_ORDER_TTL_MS } from '../policy/standing-order';
import type { NodeCondition } from '../policy/types';
import { Actuator } from './actuator';
import { DEFAULT_STATE_DIR, type AgentOptions } from './agent-options';
import { Arming } from './arming';
import { systemClock } from './clock';
import { Controller, type PassTrigger } from './controller';
import { CriStop } from './effects/cri-stop';
import { DeadlineTimer } from './deadline-timer';
import { DriftTick } from './drift-tick';
import type { EvictionDeps, EvictionRecord } from './effects/eviction';
import { crashPoint } from './crash-point';
import { OrderJournal } from './order-journal';
import { EvictionJournal } from './eviction-journal';
import { FastKill } from './effects/fast-kill';
import { MemoryBrakes } from './effects/memory-brake';
import { ConditionRecord } from './condition-record';
import { memoryPressureTracker, type MemoryPressureTracker } from './memory-pressure-tracker';
import { NodeReclaim } from './effects/node-reclaim';
import { ConfirmOrder } from './effects/order-confirm';
import type { Health } from './http-server';
import { NodeView } from './node-view';
import { PassRunner } from './pass';
import { PassHealth } from './pass-health';
import { LastKnownPriorities } from './last-known-priorities';
import type { LineKey } from './memory-lines';
import { OrderTimers } from './order-timers';
import { PodListing } from './pod-listing';
import { PreviousRun } from './previous-run';
import type { Clock, OrderFired, Wakeup } from './ports';
import { StandingOrders } from './standing-orders';
import { VolumeUsageCache } from './volume-usage';

export type { EvictionRecord } from './actuator';

export class Agent extends EventEmitter {
  readonly controller: Controller;
  private readonly listing: PodListing;
  private readonly actuator: Actuator;
  private readonly passes: PassRunner;
  private readonly volumes: VolumeUsageCache | undefined;
  private arming: Arming | null = null;
  /** the earliest soft grace period's end or brake's bound: a pass then, whatever else wakes it */
  private readonly deadline: DeadlineTimer;
  private readonly brakes: MemoryBrakes | null;
  /** KEP-5986's per-container memory pressure, when it is on */
  private readonly pressure: MemoryPressureTracker | null;
  private readonly lastKnown: LastKnownPriorities | null;
  private drift: DriftTick | null = null;
  private readonly clock: Clock;
  private readonly passHealth: PassHealth;
  /** set by stop(): a pass that ends after it must not arm a timer again (it would hold the process) */
  private stopping = false;
  /** the brakes and evictions a previous run left, taken over at start */
  private readonly previous: PreviousRun;
  /** null when standing orders are off */
  private readonly orders: StandingOrders | null;
  /** the orders' refresh and retry (null when standing orders are off) */
  private readonly orderTimers: OrderTimers | null;
  private readonly orderJournal: OrderJournal | null;
  private readonly confirmOrder: ConfirmOrder | null;

  constructor(private readonly o: AgentOptions) {
    super();
    const clock = (this.clock = o.clock ?? systemClock);
    this.passHealth = new PassHealth(clock, o.housekeepingIntervalMs);
    this.deadline = new DeadlineTimer({
      policy: o.policy,
      brakes: () => (o.policy.memoryBrake ? (this.brakes?.active ?? []) : []),
      memoryPressureDue: (nowNs) => this.pressure?.nextDueNs(nowNs) ?? null,
      clock,
      wake: (w) => this.wake(w),
    });
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
    const journal = stateDir !== undefined && !o.dryRun ? new EvictionJournal({ stateDir, logger: o.logger }) : null;
    // And the standing orders, whose kills native threads write: each order before it is placed,
    // each use before its kill (order-journal.ts).
    this.orderJournal = stateDir !== undefined && !o.dryRun ? new OrderJournal({ stateDir, logger: o.logger, monotonicNs: () => clock.now() }) : null;
    this.previous = new PreviousRun({
      brakes: this.brakes,
      journal,
      orderJournal: this.orderJournal,
      runtime: o.runtime,
      ...(o.reporter ? { reporter: o.reporter } : {}),
      logger: o.logger,
      clock,
      dryRun: o.dryRun,
      housekeepingIntervalMs: o.housekeepingIntervalMs,
      wake: (w) => this.wake(w),
    });
    const deps: EvictionDeps = {
      runtime: o.runtime,
      cgroups,
      clock,
      logger: o.logger,
      metrics: o.metrics,
      reporter: o.reporter,
      releaseTimeoutMs: o.releaseTimeoutMs ?? 5000,
      ...(journal ? { journal } : {}),
      ...(this.orderJournal ? { orderJournal: this.orderJournal } : {}),
    };
    // An order kills through the pod's cgroup, as a fast kill does: off with it unless asked for.
    const so = o.standingOrders ?? o.fastKill;
    const orderTtlMs = (typeof so === 'object' ? so.ttlMs : undefined) ?? DEFAULT_ORDER_TTL_MS;
    this.orders =
      so === false
        ? null
        : new StandingOrders({
            arming: () => this.arming,
            logger: o.logger,
            metrics: o.metrics,
            clock,
            dryRun: o.dryRun,
            ttlMs: orderTtlMs,
            journal: this.orderJournal,
            policy: o.policy,
          });
    this.orderTimers = this.orders
      ? new OrderTimers({
          orders: this.orders,
          policy: o.policy,
          ttlMs: orderTtlMs,
          housekeepingIntervalMs: o.housekeepingIntervalMs,
          clock,
          wake: (w) => this.wake(w),
        })
      : null;
    this.confirmOrder = this.orders
      ? new ConfirmOrder(deps, (uid, error) => {
          this.orders?.stopped(uid, error);
          if (error !== null) this.orderTimers?.retry();
        })
      : null;
    // The pods it set ContainerMemoryPressure on outlive a restart, to be cleared after it.
    const conditions = stateDir !== undefined && !o.dryRun && o.reporter ? new ConditionRecord(stateDir, o.logger) : undefined;
    this.pressure = memoryPressureTracker(o, (w) => this.wake(w), clock, conditions);
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
        ...(this.pressure ? { relax: this.pressure.relaxing } : {}),
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
      ...(this.pressure ? { pressure: this.pressure } : {}),
      ...(this.orders
        ? {
            orders: {
              pending: () => this.orders!.pendingConfirmations(),
              ttlMs: orderTtlMs,
              cgroupDir: (podPath: string) => cgroups.killDir(podPath),
              memoryDir: (podPath: string) => cgroups.memoryDir(podPath),
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
        this.passHealth.failed(`pass failed: ${err instanceof Error ? err.message : String(err)}`);
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
    // Before the first pass: a source that does not answer yet leaves these priorities.
    this.lastKnown?.load();
    this.previous.takeOver();
    const notifications = o.notifications;
    if (this.orders && notifications?.setOrderUseLog) this.orderJournal?.openUsesLog((file) => notifications.setOrderUseLog!(file));
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
        onLineCrossed: (line) => this.orders?.crossed(line),
        nearLines: this.orders !== null,
        // The gauge shows the lines in force now: rebuilt whenever one comes or goes.
        onLineMechanism: (line, mechanism) => {
          if (mechanism === null) this.orders?.lineGone(line);
          o.metrics.lineMechanism.reset();
          for (const [line, mechanism] of Object.entries(this.arming?.mechanisms() ?? {})) o.metrics.lineMechanism.set({ line, mechanism }, 1);
        },
      });
      this.arming.start();
      this.drift = new DriftTick({
        arming: this.arming,
        observer: o.observer,
        busy: () => this.controller.busy,
        nearHardLine: this.orderTimers ? (node) => this.orderTimers!.observed(node, this.arming!) : null,
        logger: o.logger,
        clock: this.clock,
      });
      this.drift.start();
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
    this.orderTimers?.stop();
    this.previous.stop();
    this.drift?.stop();
    this.deadline.stop();
    this.pressure?.close();
    await this.controller.stop();
    // No agent, no eviction to end a brake: a braked pod must not stay throttled behind us.
    this.previous.recoverBrakes(false);
    if (!this.o.dryRun) this.brakes?.releaseAll('agent-stop');
    await this.listing.close();
    this.lastKnown?.save();
    await this.arming?.close();
    await this.actuator.settle();
    await this.confirmOrder?.settle();
    await this.volumes?.close();
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
    this.previous.stop();
    this.previous.recoverBrakes(false);
    if (!this.o.dryRun) this.brakes?.releaseAll('agent-stop');
    this.lastKnown?.save();
  }

  /** A kernel notification (or any other reason to look again). */
  wake(w: Wakeup): void {
    this.o.metrics.notifications.inc({ source: w.source }, w.count ?? 1);
    this.controller.notify(w.source, w.monotonicNs, w.count ?? 1);
  }

  /** Live: the loop completes passes. */
  liveness(): Health {
    return this.passHealth.liveness();
  }

  /** Ready: live, and the runtime answers. */
  health(): Health {
    return this.passHealth.readiness({ failingForMs: this.listing.runtimeFailingForMs(), problem: this.listing.problem });
  }

  /** Why the last pass's conditions are too old to answer admission with, or null. */
  conditionsStale(): string | null {
    return this.passHealth.conditionsStale();
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
    this.deadline.set(d.evaluation);
    let result;
    try {
      result = await this.passes.act(d);
    } finally {
      this.arming?.update(d.observation.memory, d.observation.allocatable);
      this.previous.recoverBrakes();
    }
    // After the lines moved: an order goes on the line as it now stands.
    if (this.orders) this.orderTimers?.afterPass(this.orders.afterPass({ orders: d.orders, pods: d.ranked, listedUids: d.listedUids }, Boolean(result?.again)));
    // The brakes may have changed while acting: the bound's deadline follows them.
    this.deadline.set(d.evaluation);
    this.passHealth.passed();
    // Last: the pass's kills and stops are issued; a recording that fails never fails the pass.
    const relaxed = this.pressure?.takeRelaxed() ?? [];
    if (this.o.recorder) {
      try {
        this.o.recorder.pass(trigger, d, relaxed);
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
  private orderFired(line: LineKey, fired: OrderFired): void {
    // The crash-point tests: the pod is dead, nothing here knows yet; the next start must find it.
    if (!fired.error) crashPoint('order:killed');
    if (this.orders?.fired(line, fired)) this.wake({ source: 'standing-order-used', monotonicNs: fired.crossedNs });
  }
}
