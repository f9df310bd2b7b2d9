/**
 * The agent's Prometheus metrics, on a registry of its own (never prom-client's global one, so
 * two agents in one process, as in tests, do not collide).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Evaluation } from '../policy/evaluate';
import type { NodeStats } from '../policy/types';

// Latency buckets from 100 µs to 30 s: evictd's reactions are in milliseconds, the pollers'
// it is compared with in seconds.
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class AgentMetrics {
  readonly registry = new Registry();
  readonly evictions: Counter<'signal'>;
  readonly evictionFailures: Counter<'signal' | 'step'>;
  readonly notifications: Counter<'source'>;
  readonly eventToDecision: Histogram<'source'>;
  readonly decisionToStop: Histogram<'action'>;
  readonly memoryRelease: Histogram;
  readonly passDuration: Histogram;
  readonly passes: Counter;
  readonly passErrors: Counter;
  readonly nodeCondition: Gauge<'condition'>;
  readonly thresholdMet: Gauge<'signal' | 'kind'>;
  /** a signal's observed amount left, one gauge per unit (Prometheus names carry the unit) */
  readonly availableBytes: Gauge<'signal'>;
  readonly availableInodes: Gauge<'signal'>;
  readonly availablePids: Gauge<'signal'>;
  readonly notificationsMode: Gauge<'mode'>;
  readonly lineMechanism: Gauge<'line' | 'mechanism'>;
  readonly runtimeErrors: Counter<'call'>;
  readonly brakesActive: Gauge;
  readonly brakes: Counter<'signal'>;
  readonly brakeFailures: Counter;
  readonly memoryHighRelaxed: Counter<'outcome'>;
  readonly brakeDuration: Histogram<'end'>;
  readonly brakeStops: Counter;
  readonly ordersPlaced: Counter<'signal'>;
  readonly ordersWithdrawn: Counter<'reason'>;
  readonly ordersUnavailable: Counter<'line' | 'why'>;
  readonly ordersStanding: Gauge<'line'>;
  readonly ordersUsed: Counter<'signal'>;
  readonly orderRefusals: Counter<'mechanism'>;
  readonly reapedTasks: Counter<'result'>;
  readonly orderAge: Histogram<'signal'>;
  readonly orderCrossedToKilled: Histogram<'signal'>;

  constructor(
    opts: {
      processMetrics?: boolean;
      /** evictd_build_info's labels: what runs (the package's version, Node's, whether the addon loaded) */
      buildInfo?: { version: string; nodejs_version: string; addon: 'loaded' | 'missing' };
      orderRefusals?: () => Record<string, number>;
      reaps?: () => Record<string, number>;
    } = {},
  ) {
    const r = [this.registry];
    if (opts.buildInfo) {
      new Gauge({
        name: 'evictd_build_info',
        help: 'Always 1: what runs, in its labels (version, nodejs_version, addon)',
        labelNames: ['version', 'nodejs_version', 'addon'],
        registers: r,
      }).set(opts.buildInfo, 1);
    }
    this.evictions = new Counter({ name: 'evictd_evictions_total', help: 'Pods evicted, by eviction signal', labelNames: ['signal'], registers: r });
    this.evictionFailures = new Counter({
      name: 'evictd_eviction_failures_total',
      help: 'Eviction attempts that failed (the next candidate is tried), by signal and failing step',
      labelNames: ['signal', 'step'],
      registers: r,
    });
    this.notifications = new Counter({ name: 'evictd_notifications_total', help: 'Wake-ups of the loop, by source', labelNames: ['source'], registers: r });
    this.eventToDecision = new Histogram({
      name: 'evictd_event_to_decision_seconds',
      help: 'From the kernel event (CLOCK_MONOTONIC in the native callback) to the eviction decision',
      labelNames: ['source'],
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.decisionToStop = new Histogram({
      name: 'evictd_decision_to_stop_seconds',
      help: 'From the eviction decision until the kill (fast kill) or StopPodSandbox has completed',
      labelNames: ['action'],
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.memoryRelease = new Histogram({
      name: 'evictd_memory_release_seconds',
      help: 'From the decision until the evicted pod memory was back (usage dropped or cgroup gone)',
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.passDuration = new Histogram({
      name: 'evictd_pass_duration_seconds',
      help: 'Duration of one observe-decide-act pass',
      buckets: LATENCY_BUCKETS,
      registers: r,
    });
    this.passes = new Counter({ name: 'evictd_passes_total', help: 'Passes run', registers: r });
    this.passErrors = new Counter({ name: 'evictd_pass_errors_total', help: 'Passes that failed', registers: r });
    this.nodeCondition = new Gauge({
      name: 'evictd_node_condition',
      help: 'Node conditions evictd reports (1 = true)',
      labelNames: ['condition'],
      registers: r,
    });
    this.thresholdMet = new Gauge({
      name: 'evictd_threshold_met',
      help: 'Eviction thresholds met in the last pass (1 = met)',
      labelNames: ['signal', 'kind'],
      registers: r,
    });
    this.availableBytes = new Gauge({
      name: 'evictd_signal_available_bytes',
      help: 'Observed amount left per eviction signal in bytes, as the last pass saw it (memory.available, allocatableMemory.available, nodefs.available, imagefs.available, containerfs.available)',
      labelNames: ['signal'],
      registers: r,
    });
    this.availableInodes = new Gauge({
      name: 'evictd_signal_available_inodes',
      help: 'Free inodes per eviction signal, as the last pass saw them (nodefs.inodesFree, imagefs.inodesFree, containerfs.inodesFree)',
      labelNames: ['signal'],
      registers: r,
    });
    this.availablePids = new Gauge({
      name: 'evictd_signal_available_pids',
      help: 'Process IDs left (pid.available), as the last pass saw them',
      labelNames: ['signal'],
      registers: r,
    });
    this.notificationsMode = new Gauge({
      name: 'evictd_notifications_mode',
      help: 'What wakes the loop besides housekeeping (1 = in force): native (the addon), polling (no addon), housekeeping-only (no notifications)',
      labelNames: ['mode'],
      registers: r,
    });
    this.lineMechanism = new Gauge({
      name: 'evictd_memory_line_mechanism',
      help: 'Mechanism watching each memory line (1 = in force): bpf-tripwire, memcg-threshold-eventfd, adaptive-poll',
      labelNames: ['line', 'mechanism'],
      registers: r,
    });
    this.runtimeErrors = new Counter({
      name: 'evictd_runtime_errors_total',
      help: 'Failed container runtime calls, by call',
      labelNames: ['call'],
      registers: r,
    });
    this.brakesActive = new Gauge({ name: 'evictd_brakes_active', help: 'Pods held by the memory brake (memory.high on the pod cgroup) now', registers: r });
    this.brakes = new Counter({
      name: 'evictd_brakes_total',
      help: 'Memory brakes set, by the threshold signal that called for them',
      labelNames: ['signal'],
      registers: r,
    });
    this.brakeFailures = new Counter({
      name: 'evictd_brake_failures_total',
      help: 'Memory brakes that could not be set (record or memory.high write failed)',
      registers: r,
    });
    this.memoryHighRelaxed = new Counter({
      name: 'evictd_memory_high_relaxed_total',
      help: "KEP-5986 stage 1: containers whose memory.high was raised to memory.max through the runtime (the KEP's kubelet_memory_high_relaxed_total), by outcome: applied, not-applied (the runtime said OK, the cgroup did not change), refused",
      labelNames: ['outcome'],
      registers: r,
    });
    this.brakeDuration = new Histogram({
      name: 'evictd_brake_duration_seconds',
      help: 'How long a pod was braked, by how the brake ended: pod-gone, recovered, agent-stop, restart (found at start)',
      labelNames: ['end'],
      buckets: [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers: r,
    });
    this.brakeStops = new Counter({
      name: 'evictd_brake_stops_total',
      help: 'Pods stopped because they stayed braked longer than memoryBrakeMaxDuration',
      registers: r,
    });
    this.ordersPlaced = new Counter({
      name: 'evictd_standing_orders_placed_total',
      help: 'Standing orders placed on a hard memory line for a pod it did not already name (refreshes not counted), by signal',
      labelNames: ['signal'],
      registers: r,
    });
    this.ordersWithdrawn = new Counter({
      name: 'evictd_standing_orders_withdrawn_total',
      help: 'Standing orders withdrawn before use, by reason: not-near, pod-set (a pod came or went), evicted (the pass evicted), used (another line fired), agent-stop',
      labelNames: ['reason'],
      registers: r,
    });
    this.ordersUnavailable = new Counter({
      name: 'evictd_standing_orders_unavailable_total',
      help: 'Standing orders a pass wanted on a line that could not hold one, by line and why (no-line, unsupported, refused)',
      labelNames: ['line', 'why'],
      registers: r,
    });
    this.ordersStanding = new Gauge({
      name: 'evictd_standing_orders',
      help: 'Standing orders in force per memory line (1 = an order stands)',
      labelNames: ['line'],
      registers: r,
    });
    this.ordersUsed = new Counter({
      name: 'evictd_standing_orders_used_total',
      help: 'Standing orders the kernel side used (the pod killed as the line was crossed), by signal',
      labelNames: ['signal'],
      registers: r,
    });
    // Counted by the order threads in native code (src/kernel orderCounts()); read at scrape.
    this.orderRefusals = nativeCounter(
      r,
      'evictd_standing_order_refusals_total',
      "Crossings of a line holding a standing order where the kubelet's working set, read fresh by the order thread, was below the line: no kill (page cache, or memcg statistics the kernel had not folded), by mechanism",
      'mechanism',
      opts.orderRefusals,
    );
    // Counted in native code after each kill (src/kernel reapCounts()); read at scrape.
    this.reapedTasks = nativeCounter(
      r,
      'evictd_killed_tasks_reaped_total',
      'Tasks of pods evictd killed through their cgroup: memory freed by the kernel at once (process_mrelease, result=reaped), or not (result=not-reaped: the task had exited first, or a kernel before 5.15)',
      'result',
      opts.reaps,
    );
    this.orderAge = new Histogram({
      name: 'evictd_standing_order_age_seconds',
      help: 'Age of a standing order when it was used (how old the ranking that chose the pod was), by signal',
      labelNames: ['signal'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5],
      registers: r,
    });
    this.orderCrossedToKilled = new Histogram({
      name: 'evictd_standing_order_crossed_to_killed_seconds',
      help: 'From the crossing charge to the kill written by the kernel side (CLOCK_MONOTONIC, both stamped natively), by signal',
      labelNames: ['signal'],
      buckets: [0.00001, 0.000025, 0.00005, ...LATENCY_BUCKETS],
      registers: r,
    });
    for (const c of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) this.nodeCondition.set({ condition: c }, 0);
    // The event-loop-lag histogram samples on a timer (10 ms by default): at that rate it alone
    // costs about 0.5% of a core, against an idle target of under 1%. One sample a second.
    // Under their standard names (process_*, nodejs_*), so stock dashboards and alerts find them.
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 1000 });
  }

  /** The gauges a pass sets: conditions, thresholds met, and the observed signals. */
  observePass(node: NodeStats, ev: Evaluation): void {
    for (const c of ['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const) this.nodeCondition.set({ condition: c }, ev.conditions.includes(c) ? 1 : 0);
    this.thresholdMet.reset();
    for (const t of ev.thresholdsMet) this.thresholdMet.set({ signal: t.signal, kind: t.kind }, 1);
    if (node.memory) this.availableBytes.set({ signal: 'memory.available' }, node.memory.availableBytes);
    if (node.allocatableMemory) this.availableBytes.set({ signal: 'allocatableMemory.available' }, node.allocatableMemory.availableBytes);
    for (const fs of ['nodefs', 'imagefs', 'containerfs'] as const) {
      const stats = node[fs];
      if (stats?.availableBytes !== undefined) this.availableBytes.set({ signal: `${fs}.available` }, stats.availableBytes);
      if (stats?.inodesFree !== undefined) this.availableInodes.set({ signal: `${fs}.inodesFree` }, stats.inodesFree);
    }
    if (node.pid) this.availablePids.set({ signal: 'pid.available' }, node.pid.maxPID - node.pid.running);
  }
}

/**
 * A counter whose totals native code keeps (a thread of the addon counts, JS reads at scrape):
 * each series exists from the first scrape, at 0 until it counts. A native count lower than the
 * last one seen started again from 0 (the addon's environment restarted): all of it is new.
 */
function nativeCounter<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  label: L,
  read: (() => Record<string, number>) | undefined,
): Counter<L> {
  const seen = new Map<string, number>();
  return new Counter<L>({
    name,
    help,
    labelNames: [label],
    registers,
    collect() {
      if (!read) return;
      for (const [value, n] of Object.entries(read())) {
        const before = seen.get(value) ?? 0;
        this.inc({ [label]: value } as Partial<Record<L, string>>, n >= before ? n - before : n);
        seen.set(value, n);
      }
    },
  });
}
