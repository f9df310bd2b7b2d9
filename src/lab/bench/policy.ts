/**
 * `evictd bench policy`: the time of one decision pass (evaluate(): thresholds, conditions,
 * local-storage checks, ranking, messages) at 110, 1,000 and 10,000 pods, p50 and p99 over
 * many passes, under hard memory pressure so every pass ranks every pod.
 */
import { parseArgs } from 'node:util';
import { compileConfig, type EvictionConfig } from '../../policy/config';
import { evaluate, initialState } from '../../policy/evaluate';
import { Quantity } from '../../policy/quantity';
import type { ActivePod, NodeStats } from '../../policy/types';
import { UsageError } from '../../errors';
import { nearestRank } from '../stats';
import { describeEnvironment } from '../environment';
import { recordingCost, type RecordingCostRow } from './recording-cost';

const TARGETS_MS: Record<number, number> = { 110: 1, 1000: 5, 10000: 20 };

/** A deterministic pseudo-random source, so runs are comparable. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

export function syntheticPods(n: number, seed = 1): ActivePod[] {
  const r = rng(seed);
  const mi = (x: number) => Quantity.fromNumber(Math.round(x) * 2 ** 20, 'BinarySI');
  const pods: ActivePod[] = [];
  for (let i = 0; i < n; i++) {
    const containers = 1 + Math.floor(r() * 3);
    const spec: ActivePod['spec'] = {
      namespace: `ns-${i % 20}`,
      name: `pod-${i}`,
      uid: `uid-${i}`,
      priority: Math.floor(r() * 3) * 1000,
      annotations: {},
      containers: [],
      volumes: [{ name: 'scratch', emptyDir: { sizeLimit: mi(1024) } }],
    };
    const usage: NonNullable<ActivePod['usage']> = {
      containers: [],
      volumes: [{ name: 'scratch', usedBytes: Math.round(r() * 100) * 2 ** 20 }],
      processes: 1 + Math.floor(r() * 50),
    };
    for (let c = 0; c < containers; c++) {
      const request = 32 + r() * 512;
      spec.containers.push({ name: `c${c}`, requests: { memory: mi(request), cpu: Quantity.parse('100m') }, limits: { 'ephemeral-storage': mi(4096) } });
      usage.containers.push({
        name: `c${c}`,
        memoryBytes: Math.round(request * (0.5 + r())) * 2 ** 20,
        rootfsBytes: Math.round(r() * 200) * 2 ** 20,
        logsBytes: Math.round(r() * 20) * 2 ** 20,
      });
    }
    pods.push({ spec, usage });
  }
  return pods;
}

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({ args: argv, options: { json: { type: 'boolean' }, passes: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }).values;
  } catch (e) {
    throw new UsageError(`bench policy: ${(e as Error).message}`);
  }
  if (values.help) {
    process.stdout.write(
      'usage: evictd bench policy [--json] [--passes N]\n\nTimes one decision pass at 110, 1000 and 10000 pods (p50, p99), and the same pass with and without the --record recorder.\n',
    );
    return 0;
  }
  const passesArg = values.passes === undefined ? undefined : Number(values.passes);
  if (passesArg !== undefined && (!Number.isInteger(passesArg) || passesArg < 1))
    throw new UsageError(`bench policy: --passes: ${JSON.stringify(values.passes)}: must be a whole number >= 1`);

  const eviction: EvictionConfig = {
    evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10%' },
    evictionMinimumReclaim: { 'memory.available': '500Mi' },
  };
  const config = compileConfig(eviction);
  const node: NodeStats = {
    memory: { availableBytes: 512 * 2 ** 20, workingSetBytes: 60 * 2 ** 30 },
    allocatableMemory: { availableBytes: 400 * 2 ** 20, workingSetBytes: 58 * 2 ** 30 },
    nodefs: { availableBytes: 50 * 2 ** 30, capacityBytes: 100 * 2 ** 30, inodesFree: 5e6, inodes: 6e6 },
    pid: { maxPID: 4194304, running: 3000 },
  };
  const rows: { pods: number; passes: number; p50_ms: number; p99_ms: number; max_ms: number; target_ms: number; candidates: number }[] = [];
  for (const n of [110, 1000, 10000]) {
    const pods = syntheticPods(n);
    const passes = passesArg ?? (n >= 10000 ? 200 : 1000);
    let state = initialState();
    let candidates = 0;
    for (let i = 0; i < Math.min(50, passes); i++) state = evaluate(config, state, { now: i * 1e9, node, pods, layout: 'single' }).state; // warm up the JIT
    const times: number[] = [];
    for (let i = 0; i < passes; i++) {
      const t0 = process.hrtime.bigint();
      const ev = evaluate(config, state, { now: (100 + i) * 1e9, node, pods, layout: 'single' });
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      state = ev.state;
      candidates = ev.plan?.candidates.length ?? 0;
    }
    times.sort((a, b) => a - b);
    rows.push({
      pods: n,
      passes,
      p50_ms: nearestRank(times, 50),
      p99_ms: nearestRank(times, 99),
      max_ms: times[times.length - 1],
      target_ms: TARGETS_MS[n],
      candidates,
    });
  }
  // --record's cost: the same node and pods, the pass with and without the recorder, interleaved.
  const recording: RecordingCostRow[] = [];
  for (const n of [110, 1000, 10000]) recording.push(await recordingCost(eviction, node, syntheticPods(n), passesArg ?? (n >= 10000 ? 40 : 300)));
  if (values.json) {
    for (const r of rows) process.stdout.write(JSON.stringify({ bench: 'policy', ...r }) + '\n');
    for (const r of recording) process.stdout.write(JSON.stringify({ bench: 'policy-recording', ...r }) + '\n');
  } else {
    const baselineMs = 10_000;
    process.stdout.write(
      'evictd bench policy: one evaluate() pass under hard memory pressure (every pod ranked, every candidate prepared; messages built when read)\n\n',
    );
    process.stdout.write("  pods   passes   p50 ms   p99 ms   max ms   target   verdict   p99 share of the kubelet's 10 s interval\n");
    for (const r of rows) {
      const ok = r.p99_ms < r.target_ms ? 'ok' : 'OVER';
      process.stdout.write(
        `${String(r.pods).padStart(6)} ${String(r.passes).padStart(8)} ${r.p50_ms.toFixed(3).padStart(8)} ${r.p99_ms.toFixed(3).padStart(8)} ${r.max_ms.toFixed(3).padStart(8)} ${('<' + r.target_ms + ' ms').padStart(8)}   ${ok.padEnd(7)}   ${((r.p99_ms / baselineMs) * 100).toExponential(1)}%\n`,
      );
    }
    process.stdout.write(
      `\n--record: the decision pass (assess, plan, actions, standing orders) with and without the recorder writing to a temp file, interleaved (${describeEnvironment()}, node ${process.version})\n\n`,
    );
    process.stdout.write(
      '  pods   passes   without p50/p99 ms   with p50/p99 ms   ratio p50/p99   line made p50 ms   longest slice p50/p99 ms   as object p50 ms: line / stringify   bytes/pass\n',
    );
    const f = (x: number) => x.toFixed(3);
    for (const r of recording) {
      process.stdout.write(
        `${String(r.pods).padStart(6)} ${String(r.passes).padStart(8)} ${`${f(r.without.p50)} / ${f(r.without.p99)}`.padStart(20)} ${`${f(r.with.p50)} / ${f(r.with.p99)}`.padStart(17)} ${`${r.ratioP50.toFixed(2)} / ${r.ratioP99.toFixed(2)}`.padStart(15)} ${f(r.made).padStart(18)} ${`${f(r.slice.p50)} / ${f(r.slice.p99)}`.padStart(26)}   ${`${f(r.line)} / ${f(r.stringify)}`.padStart(34)} ${String(r.bytesPerPass).padStart(12)}\n`,
      );
    }
    process.stdout.write(
      '\n"with": the pass and what the recorder does at it (the pass\'s own fields and decisions in words). The line\'s pods are made after the pass, in slices of about 0.5 ms while the loop is free; "line made" sums a line\'s making, "longest slice" (a line\'s) is the longest a wake-up could wait on it. "as object": the same line made the way the recorder made it before (passLine, then JSON.stringify), timed apart.\n',
    );
  }
  return 0;
}
