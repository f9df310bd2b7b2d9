/**
 * `evictd bench policy`, its recording rows: what `--record` adds to a pass. The same decision
 * pass (assess, plan, ordered actions, standing orders: PassRunner's policy half) on the same
 * synthetic node, with and without the agent's Recorder, interleaved pass by pass so both see the
 * same machine, JIT and heap. The pass with the recorder includes what it does at the pass; the
 * rest of the line (its pods) is made after it, in slices, while the bench waits between passes
 * as the agent's loop idles: timed as the recorder counts it (a line's making in all, and its
 * longest slice, the longest a wake-up could wait on it). Beside it, timed apart after the
 * passes, the way the recorder made a line before: an object (passLine), then JSON.stringify.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { JoinedPod } from '../../agent/active-pods';
import type { PassTrigger } from '../../agent/controller';
import type { Decision } from '../../agent/pass';
import { Recorder } from '../../agent/recorder';
import { decideActions } from '../../policy/actions';
import type { EvictionConfig } from '../../policy/config';
import { compileConfig } from '../../policy/config';
import { assess, initialState, planEvictions, type PolicyState } from '../../policy/evaluate';
import { decideOrders } from '../../policy/standing-order';
import type { ActivePod, NodeStats } from '../../policy/types';
import { passLine, type PassInput } from '../../sim/recording';
import { nearestRank } from '../stats';

export interface RecordingCostRow {
  pods: number;
  passes: number;
  /** the pass alone, and the pass with what the recorder does at it (ms) */
  without: { p50: number; p99: number };
  with: { p50: number; p99: number };
  ratioP50: number;
  ratioP99: number;
  /** a line's making in all (at the pass and after it), p50 ms; a line's longest slice after its pass, p50 and p99 ms */
  made: number;
  slice: { p50: number; p99: number };
  /** the same line made as an object (passLine), then JSON.stringify'd, p50 ms: the way before */
  line: number;
  stringify: number;
  bytesPerPass: number;
}

const MEMCG = { capacityBytes: 0, usageBytes: 0, inactiveFileBytes: 0, workingSetBytes: 0, availableBytes: 0, limited: false };
const TRIGGER: PassTrigger = { sources: { 'memcg-threshold': 1 }, firstEventNs: null, firstNotifiedNs: 0n };

/** The pods as a pass joins them (a sandbox and a pod cgroup each), for the recorder and the orders. */
export function joined(pods: readonly ActivePod[]): JoinedPod[] {
  return pods.map((active) => ({
    active,
    runtime: {
      sandboxId: `sb-${active.spec.uid}`,
      uid: active.spec.uid,
      name: active.spec.name,
      namespace: active.spec.namespace,
      labels: {},
      annotations: {},
      ready: true,
    },
    cgroup: { uid: active.spec.uid, qos: 'Burstable', path: `/kubepods/pod${active.spec.uid}`, usage: { memoryWorkingSetBytes: 0, memoryUsageBytes: 0 } },
    specSource: 'runtime',
  }));
}

/** One pass's decision, as PassRunner.decide makes it from the node's numbers (no I/O). */
export function decide(cfg: ReturnType<typeof compileConfig>, state: PolicyState, now: number, node: NodeStats, pods: JoinedPod[]): Decision {
  const t0 = process.hrtime.bigint();
  const layout = 'single' as const;
  const assessed = assess(cfg, state, { now, node, layout, crossed: [] });
  const active = pods.map((j) => j.active);
  const ev = planEvictions(cfg, assessed, active, layout);
  const actions = decideActions(cfg, assessed, ev, undefined, []);
  const orders = decideOrders(
    cfg,
    assessed.obs,
    pods.map((j) => ({ pod: j.active, cgroupDir: j.cgroup!.path })),
    layout,
  );
  const decisionNs = process.hrtime.bigint();
  return {
    observation: { node, layout, memory: MEMCG, allocatable: null, pods: new Map() },
    evaluation: ev,
    actions,
    pods,
    stamps: { trigger: TRIGGER, observedNs: t0, decisionNs },
    startedNs: t0,
    orders,
    ranked: pods,
    listedUids: new Set(pods.map((j) => j.runtime.uid)),
    given: { now, confirming: [], brakes: null, present: pods.map((j) => j.runtime.uid) },
  };
}

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const p = (xs: number[], q: number) =>
  nearestRank(
    [...xs].sort((a, b) => a - b),
    q,
  );

/** `passes` passes of each kind on `pods`, interleaved. */
export async function recordingCost(eviction: EvictionConfig, node: NodeStats, pods: readonly ActivePod[], passes: number): Promise<RecordingCostRow> {
  const cfg = compileConfig(eviction);
  const jp = joined(pods);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-bench-record-'));
  const file = path.join(dir, 'bench.jsonl');
  const logger = pino({ level: 'silent' });
  const startNs = Number(process.hrtime.bigint());
  // The agent's recorder, its default size bound (64Mi): a 10,000-pod node rolls the file over.
  const recorder = new Recorder({ path: file, maxBytes: 64 * 2 ** 20, eviction, policy: cfg, standingOrders: true, logger, startNs });
  let state = initialState();
  const without: number[] = [];
  const withRec: number[] = [];
  const made: number[] = [];
  const slices: number[] = [];
  const warm = Math.min(20, passes);
  let last: Decision | null = null;
  try {
    for (let i = 0; i < passes + warm; i++) {
      const now = startNs + i * 1e8;
      // Alternate which kind goes first, so neither always runs on the other's warm caches.
      for (const recording of i % 2 === 0 ? [false, true] : [true, false]) {
        const t0 = process.hrtime.bigint();
        const d = decide(cfg, state, now, node, jp);
        state = d.evaluation.state;
        if (recording) recorder.pass(TRIGGER, d);
        const t = ms(t0);
        if (i >= warm) (recording ? withRec : without).push(t);
        last = d;
      }
      // Between passes the agent's loop idles: the line is made and the stream drains (the
      // disk's throughput is not the pass's cost; a GC the line leaves behind still falls in the
      // next pass).
      const before = recorder.stats.serializeMsTotal;
      recorder.stats.sliceMsMax = 0;
      await recorder.flushed();
      if (i >= warm) made.push(recorder.stats.serializeMsTotal - before);
      if (i >= warm) slices.push(recorder.stats.sliceMsMax);
    }
    await recorder.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const objectPath = timeObjectPath(lineInput(last!, startNs, cfg), passes);
  const w = { p50: p(without, 50), p99: p(without, 99) };
  const r = { p50: p(withRec, 50), p99: p(withRec, 99) };
  return {
    pods: pods.length,
    passes,
    without: w,
    with: r,
    ratioP50: r.p50 / w.p50,
    ratioP99: r.p99 / w.p99,
    made: p(made, 50),
    slice: { p50: p(slices, 50), p99: p(slices, 99) },
    ...objectPath,
    bytesPerPass: Math.round(recorder.stats.bytes / recorder.stats.passes),
  };
}

/** What the recorder gives passLine for a bench pass (no wake-up stamp, brake or order in use). */
function lineInput(d: Decision, startNs: number, policy: ReturnType<typeof compileConfig>): PassInput {
  return {
    atNs: d.given.now - startNs,
    startNs,
    wake: TRIGGER.sources,
    node: d.observation.node,
    layout: 'single',
    headerLayout: 'single',
    pods: d.ranked.map((j) => j.active),
    otherUids: [],
    noCgroup: [],
    crossed: [],
    confirmations: [],
    brakes: null,
    policy,
    met: d.evaluation.thresholdsMet,
    conditions: d.evaluation.conditions,
    actions: d.actions,
    orders: d.orders,
    decideMs: 0,
  };
}

/**
 * The line as an object, then JSON.stringify: timed after the passes, so its garbage falls in
 * none of them. p50 ms of each.
 */
function timeObjectPath(input: PassInput, passes: number): { line: number; stringify: number } {
  const line: number[] = [];
  const stringify: number[] = [];
  for (let i = 0; i < passes; i++) {
    const t1 = process.hrtime.bigint();
    const obj = passLine(input);
    line.push(ms(t1));
    const t2 = process.hrtime.bigint();
    JSON.stringify(obj);
    stringify.push(ms(t2));
  }
  return { line: p(line, 50), stringify: p(stringify, 50) };
}
