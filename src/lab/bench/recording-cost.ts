/**
 * `evictd bench policy`, its recording rows: what `--record` adds to a pass. The same decision
 * pass (assess, plan, ordered actions, standing orders: PassRunner's policy half) on the same
 * synthetic node, with and without the agent's Recorder writing each pass to a temp file,
 * interleaved pass by pass so both see the same machine, JIT and heap. The recorder's own cost
 * is split into making the line (the pods in the scenario's words), JSON.stringify, and the
 * write (queued on a stream; the disk write itself is libuv's, off the loop).
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
import { passLine } from '../../sim/recording';
import { nearestRank } from '../stats';

export interface RecordingCostRow {
  pods: number;
  passes: number;
  /** the pass alone, and the pass followed by the recorder's line (ms) */
  without: { p50: number; p99: number };
  with: { p50: number; p99: number };
  ratioP50: number;
  ratioP99: number;
  /** the recorder's share, p50 ms: making the line, JSON.stringify, and the rest (the queued write) */
  line: number;
  stringify: number;
  write: number;
  bytesPerPass: number;
}

const MEMCG = { capacityBytes: 0, usageBytes: 0, inactiveFileBytes: 0, workingSetBytes: 0, availableBytes: 0, limited: false };
const TRIGGER: PassTrigger = { sources: { 'memcg-threshold': 1 }, firstEventNs: null, firstNotifiedNs: 0n };

/** The pods as a pass joins them (a sandbox and a pod cgroup each), for the recorder and the orders. */
function joined(pods: readonly ActivePod[]): JoinedPod[] {
  return pods.map((active) => ({
    active,
    runtime: { sandboxId: `sb-${active.spec.uid}`, uid: active.spec.uid, name: active.spec.name, namespace: active.spec.namespace, labels: {}, annotations: {}, ready: true },
    cgroup: { uid: active.spec.uid, qos: 'Burstable', path: `/kubepods/pod${active.spec.uid}`, usage: { memoryWorkingSetBytes: 0, memoryUsageBytes: 0 } },
    specSource: 'runtime',
  }));
}

/** One pass's decision, as PassRunner.decide makes it from the node's numbers (no I/O). */
function decide(cfg: ReturnType<typeof compileConfig>, state: PolicyState, now: number, node: NodeStats, pods: JoinedPod[]): Decision {
  const t0 = process.hrtime.bigint();
  const layout = 'single' as const;
  const assessed = assess(cfg, state, { now, node, layout, crossed: [] });
  const active = pods.map((j) => j.active);
  const ev = planEvictions(cfg, assessed, active, layout);
  const actions = decideActions(cfg, assessed, ev, undefined, []);
  const orders = decideOrders(cfg, assessed.obs, pods.map((j) => ({ pod: j.active, cgroupDir: j.cgroup!.path })), layout);
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
const p = (xs: number[], q: number) => nearestRank([...xs].sort((a, b) => a - b), q);

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
  const line: number[] = [];
  const stringify: number[] = [];
  const warm = Math.min(20, passes);
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
        if (recording && i >= warm) {
          // The recorder's parts, on the same decision (what Recorder.pass runs, timed apart).
          const t1 = process.hrtime.bigint();
          const obj = passLine({ atNs: now - startNs, startNs, wake: TRIGGER.sources, node, layout: 'single', headerLayout: 'single', pods: d.ranked.map((j) => j.active), otherUids: [], noCgroup: [], crossed: [], confirmations: [], brakes: null, policy: cfg, met: d.evaluation.thresholdsMet, conditions: d.evaluation.conditions, actions: d.actions, orders: d.orders, decideMs: 0 });
          line.push(ms(t1));
          const t2 = process.hrtime.bigint();
          JSON.stringify(obj);
          stringify.push(ms(t2));
        }
      }
      // Between passes the agent's loop idles and the stream drains: the disk's throughput is
      // not the pass's cost (a GC a large line leaves behind still falls in the next pass).
      await recorder.flushed();
    }
    await recorder.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const w = { p50: p(without, 50), p99: p(without, 99) };
  const r = { p50: p(withRec, 50), p99: p(withRec, 99) };
  const lineP50 = p(line, 50);
  const strP50 = p(stringify, 50);
  return {
    pods: pods.length,
    passes,
    without: w,
    with: r,
    ratioP50: r.p50 / w.p50,
    ratioP99: r.p99 / w.p99,
    line: lineP50,
    stringify: strP50,
    write: Math.max(0, r.p50 - w.p50 - lineP50 - strP50),
    bytesPerPass: Math.round(recorder.stats.bytes / recorder.stats.passes),
  };
}
