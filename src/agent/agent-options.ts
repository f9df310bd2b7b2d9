/**
 * What an Agent is built from: the node, the runtime, the notification port, the policy, and the
 * switches an operator sets (the run command's flags end here).
 */
import type { Logger } from 'pino';
import type { CgroupPort } from '../node/cgroup-port';
import type { CgroupLayout } from '../node/cgroups';
import type { NodeObserver } from '../node/observer';
import type { PolicyConfig } from '../policy/config';
import type { AgentMetrics } from './metrics';
import type { Clock, EvictionReporter, NotificationPort, PodSpecSource, RuntimePort } from './ports';
import type { Recorder } from './recorder';

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
