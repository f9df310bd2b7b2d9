/**
 * `evictd bench notify`: how long after a workload's memory crosses a line each mechanism tells
 * JS. The crossing is stamped once per step, the same way for every row (crossings.ts): by the
 * tripwire's BPF program at the start of the charge that crosses, where it runs, else by the allocating
 * process (native/tools/memhog.c); both CLOCK_MONOTONIC. The addon stamps the event in its
 * native poll callback, on the JS thread, right before it calls into JS. A negative latency
 * stops the bench. Mechanisms, each what `evictd run` runs:
 *   the line         what the agent selects for a usage line (src/kernel/select.ts): the eBPF
 *                    tripwire on pure cgroup v2 (bpf-tripwire), the memcg v1 threshold eventfd
 *                    (memcg-threshold-eventfd), or the adaptive poller where neither exists
 *   <the line>-js    the same events, to the first JS listener: what the agent's code sees, and
 *                    the row the targets (50x / 20x lower than poll-100ms) are checked on
 *   adaptive-poll    the adaptive poller on the same crossings (measured)
 *   psi              a PSI trigger on the workload's cgroup2 memory.pressure, under page-cache
 *                    thrash in a full 64 MiB memcg (the crossing: the thrash starts)
 *   cgroup-events    kernfs notification of cgroup.events when the workload exits (the crossing:
 *                    its last instruction)
 *   poll-100ms       a real 100 ms poller of the usage file, run beside the first on the same
 *                    crossings (measured)
 *   poll-1s, poll-10s  modelled from the same crossings: a poller with a random phase sees a
 *                    crossing at its next tick, plus the measured cost of one read. poll-10s is
 *                    the kubelet's housekeeping interval.
 * Then the idle CPU of 100 armed watchers over 30 s, against 100 pollers at 100 ms.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { badValue, UsageError } from '../../../errors';
import { nativeAvailable, nativeLoadError } from '../../../kernel/addon';
import { tripwireStatus } from '../../../kernel/tripwire';
import { setRealtimePriority } from '../../../kernel/scheduling';
import { detectCgroups } from '../../../node/cgroups';
import { benchEnvironment, describeEnvironment } from '../../environment';
import { nearestRank } from '../../stats';
import { benchCrossings } from './crossings';
import { benchIdle } from './idle';
import { histogramSvg, table } from './output';
import { benchEvents, benchPsi } from './psi-events';
import { modelPoll, rng, summarize, type Series, type Summary } from './stats';

/** The SCHED_FIFO priority of the -rt row (and the one the deploy files give evictd run). */
const RT_PRIORITY = 10;

interface Plan {
  thresholdSamples: number;
  psiSamples: number;
  eventSamples: number;
  idleSeconds: number;
  pollIdleSeconds: number;
}

const FULL: Plan = { thresholdSamples: 200, psiSamples: 12, eventSamples: 100, idleSeconds: 30, pollIdleSeconds: 10 };
const QUICK: Plan = { thresholdSamples: 40, psiSamples: 3, eventSamples: 20, idleSeconds: 3, pollIdleSeconds: 2 };

function usage(): string {
  return [
    'usage: evictd bench notify [--json] [--quick] [--samples N] [--svg FILE]',
    '',
    'Latency from a memory crossing to the JS callback for the line mechanism evictd run uses here',
    '(bpf-tripwire on pure cgroup v2, memcg-threshold-eventfd on v1), the adaptive poller, cgroup-events,',
    'psi and the polling baselines poll-100ms (measured), poll-1s and poll-10s (modelled from the same',
    'crossings); how far past the line usage was at each event, per ramp rate; then idle CPU with 100',
    'watchers armed. Needs root and cgroups.',
    '',
    '  --json       one JSON object per mechanism per line',
    '  --quick      a short run (fewer samples, 3 s idle CPU)',
    '  --samples N  line crossings (default 200; 40 with --quick)',
    '  --svg FILE   where to save the histogram (default ./evictd-bench-notify.svg)',
    '',
    'On a busy host the tail is the notified thread queued behind the allocator on its CPU; the',
    '-rt row measures the same crossings with that thread in SCHED_FIFO, the allocator left at',
    'normal scheduling (evictd run --realtime-priority gives that class to its kill threads only).',
  ].join('\n');
}

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: argv,
      options: {
        json: { type: 'boolean' },
        quick: { type: 'boolean' },
        samples: { type: 'string' },
        svg: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    throw new UsageError(`bench notify: ${(e as Error).message}`);
  }
  if (values.help) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  const plan = { ...(values.quick ? QUICK : FULL) };
  if (values.samples !== undefined) {
    const n = Number(values.samples);
    if (!Number.isInteger(n) || n < 1 || n > 100_000) throw badValue('--samples', values.samples, 'must be a whole number from 1 to 100000');
    plan.thresholdSamples = n;
  }
  const svgPath = path.resolve(values.svg ?? 'evictd-bench-notify.svg');
  const json = values.json === true;
  // Progress goes to stderr so --json output stays one object per line.
  const progress = (s: string) => process.stderr.write(`  ${s}\n`);

  if (process.getuid?.() !== 0) throw new UsageError('bench notify: needs root (it creates cgroups)');
  if (!nativeAvailable()) throw new UsageError(`bench notify: native addon unavailable: ${nativeLoadError()?.message}`);
  let layout;
  try {
    layout = detectCgroups();
  } catch (e) {
    throw new UsageError(`bench notify: ${(e as Error).message}`);
  }

  // Interrupted: exit through process.exit so the scratch cgroups are removed ('exit' hook).
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  const started = Date.now();
  const loadAtStart = os.loadavg();
  progress(`the line's mechanism, adaptive-poll and poll-100ms: ${plan.thresholdSamples} crossings`);
  const th = await benchCrossings(layout, plan.thresholdSamples, progress);
  // The same crossings with the notified thread in a real-time class: what is left of the tail is
  // the kernel's path, not CPU queueing. (`evictd run --realtime-priority` gives the class to the
  // threads that kill at the line, which wake the same way; its JS thread keeps normal scheduling.)
  let rt: Series | { skipped: string };
  try {
    setRealtimePriority(RT_PRIORITY);
    progress(`${th.native.mechanism} with SCHED_FIFO ${RT_PRIORITY}: ${plan.thresholdSamples} crossings`);
    const thRt = await benchCrossings(layout, plan.thresholdSamples, progress);
    rt = {
      ...thRt.native,
      mechanism: `${thRt.native.mechanism}-rt`,
      how: `as ${thRt.native.mechanism}, with the notified thread in SCHED_FIFO ${RT_PRIORITY} (as evictd run --realtime-priority ${RT_PRIORITY} runs its kill threads); the allocator stays SCHED_OTHER`,
    };
  } catch (e) {
    rt = { skipped: `real-time scheduling unavailable: ${(e as Error).message}` };
  } finally {
    try {
      setRealtimePriority(0);
    } catch {
      // never raised: it only fails where the raise above failed
    }
  }
  const random = rng(42);
  const poll1s: Series = {
    mechanism: 'poll-1s',
    method: 'modelled',
    how: `the same ${th.crossingsNs.length} crossings, a 1 s poller at a random phase, plus one read (${th.readUs.toFixed(1)} us measured)`,
    latenciesUs: modelPoll(th.crossingsNs, 1000, th.readUs, random),
  };
  const poll10s: Series = {
    mechanism: 'poll-10s',
    method: 'modelled',
    how: `as poll-1s with 10 s: the kubelet's housekeeping interval`,
    latenciesUs: modelPoll(th.crossingsNs, 10_000, th.readUs, random),
  };
  const model100 = summarize({ mechanism: 'poll-100ms', method: 'modelled', how: '', latenciesUs: modelPoll(th.crossingsNs, 100, th.readUs, random) });

  progress(`cgroup events: ${plan.eventSamples} samples`);
  const ev = await benchEvents(layout, plan.eventSamples, progress);
  progress(`psi: ${plan.psiSamples} samples (a fresh trigger each)`);
  const psi = await benchPsi(layout, plan.psiSamples, progress);
  progress(`idle CPU: 100 watchers for ${plan.idleSeconds} s, 100 pollers for ${plan.pollIdleSeconds} s`);
  const idle = await benchIdle(layout, plan);

  const series: Series[] = [th.native, th.nativeJs];
  if ('latenciesUs' in rt) series.push(rt);
  if (th.adaptive !== null) series.push(th.adaptive);
  if ('latenciesUs' in ev) series.push(ev);
  if ('series' in psi) series.push(psi.series);
  series.push(th.poll100, poll1s, poll10s);
  const rows = series.map(summarize);
  fs.writeFileSync(svgPath, histogramSvg(series, `evictd bench notify on ${os.hostname()} (${new Date().toISOString().slice(0, 16)}Z)`));

  const thr = rows[0];
  // The targets are on what the agent's code sees: the event in a JS callback.
  const thrJs = rows[1];
  const p1 = rows.find((r) => r.mechanism === 'poll-1s') as Summary;
  const speedup = p1.p50_us / thr.p50_us;
  const toJs = [...th.nativeToJs].sort((a, b) => a - b);
  const wake = [...th.wakeUs].sort((a, b) => a - b);
  const env = benchEnvironment();
  const p100 = rows.find((r) => r.mechanism === 'poll-100ms') as Summary;
  const ratio = { p50: p100.p50_us / thrJs.p50_us, p99: p100.p99_us / thrJs.p99_us };
  const granularity = Object.entries(th.granularity).flatMap(([mechanism, byRate]) =>
    Object.entries(byRate).map(([rate, xs]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return {
        mechanism: 'granularity',
        of: mechanism,
        ramp: rate,
        samples: sorted.length,
        p50_bytes: nearestRank(sorted, 50),
        p99_bytes: nearestRank(sorted, 99),
        max_bytes: sorted[sorted.length - 1],
      };
    }),
  );
  const tw = tripwireStatus();

  if (json) {
    // The line rows share one crossing stamp; cgroup-events and psi have their own (see `how`).
    const lineRows = new Set([thr.mechanism, thrJs.mechanism, `${thr.mechanism}-rt`, 'adaptive-poll', 'poll-100ms', 'poll-1s', 'poll-10s']);
    for (const r of rows) process.stdout.write(JSON.stringify(lineRows.has(r.mechanism) ? { ...r, crossing_stamp: th.stamp } : r) + '\n');
    for (const g of granularity) process.stdout.write(JSON.stringify(g) + '\n');
    process.stdout.write(JSON.stringify({ mechanism: 'environment', ...env }) + '\n');
    if (wake.length > 0)
      process.stdout.write(
        JSON.stringify({
          mechanism: 'delivery',
          of: thr.mechanism,
          wake_p50_us: nearestRank(wake, 50),
          wake_p99_us: nearestRank(wake, 99),
          to_js_p50_us: nearestRank(toJs, 50),
          to_js_p99_us: nearestRank(toJs, 99),
        }) + '\n',
      );
    process.stdout.write(
      JSON.stringify({ mechanism: 'ratio-to-poll-100ms', of: thrJs.mechanism, p50_x: ratio.p50, p99_x: ratio.p99, target_p50_x: 50, target_p99_x: 20 }) + '\n',
    );
    if (tw.loadMs) process.stdout.write(JSON.stringify({ mechanism: 'tripwire-load', load_ms: tw.loadMs, attach_ms: tw.attachMs }) + '\n');
    process.stdout.write(
      JSON.stringify({
        mechanism: 'idle-cpu',
        watchers: idle.watchers,
        seconds: idle.seconds,
        cpu_ms: idle.cpuMs,
        cpu_percent: idle.cpuPercent,
        poll_100ms_watchers: idle.pollers,
        poll_100ms_cpu_percent: idle.pollCpuPercent,
      }) + '\n',
    );
    process.stderr.write(`histogram: ${svgPath}\n`);
    return 0;
  }

  const lines: string[] = [];
  lines.push(
    `evictd bench notify: ${describeEnvironment(env)}, load average ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} at start, ${Math.round((Date.now() - started) / 1000)} s`,
  );
  lines.push('');
  lines.push(table(rows));
  lines.push('');
  lines.push('How each row was obtained:');
  for (const r of rows) lines.push(`  ${r.mechanism.padEnd(16)} ${r.method}: ${r.how}`);
  if ('skipped' in rt) lines.push(`  ${`${thr.mechanism}-rt`.padEnd(16)} skipped: ${rt.skipped}`);
  if ('skipped' in ev) lines.push(`  ${'cgroup-events'.padEnd(16)} skipped: ${ev.skipped}`);
  if ('skipped' in psi) lines.push(`  ${'psi'.padEnd(16)} skipped: ${psi.skipped}`);
  lines.push('');
  lines.push(
    `model check: poll-100ms modelled p50 ${model100.p50_us.toFixed(0)} us / p99 ${model100.p99_us.toFixed(0)} us vs measured p50 ${rows.find((r) => r.mechanism === 'poll-100ms')?.p50_us.toFixed(0)} us / p99 ${rows.find((r) => r.mechanism === 'poll-100ms')?.p99_us.toFixed(0)} us`,
  );
  lines.push(
    `crossing stamp: ${th.stamp === 'kernel' ? "the start of the charge that crossed, stamped by the tripwire's fentry program (all rows)" : "the allocating process's (all rows)"}`,
  );
  if (wake.length > 0)
    lines.push(
      `${thr.mechanism}: program -> native callback (the kernel waking the agent's thread) p50 ${nearestRank(wake, 50).toFixed(1)} us, p99 ${nearestRank(wake, 99).toFixed(1)} us`,
    );
  lines.push(
    `${thr.mechanism}: native callback -> JS listener p50 ${nearestRank(toJs, 50).toFixed(1)} us, p99 ${nearestRank(toJs, 99).toFixed(1)} us; ${th.missed} of ${plan.thresholdSamples} steps without a usable crossing`,
  );
  lines.push('');
  lines.push("granularity: the line's measure past the line in the event, per ramp rate (p50 / p99 / max); the");
  lines.push("  working-set rows are lines on the kubelet's own signal (memory.available = capacity - working set):");
  for (const g of granularity)
    lines.push(
      `  ${g.of.padEnd(34)} ${g.ramp.padEnd(9)} ${(g.p50_bytes / 1024).toFixed(0)} / ${(g.p99_bytes / 1024).toFixed(0)} / ${(g.max_bytes / 1024).toFixed(0)} KiB (${g.samples})`,
    );
  lines.push('  (a counter moves by whole charges: 64 pages (256 KiB) per stock refill, 512 pages (2 MiB) for a THP fault; a counter');
  lines.push('  mechanism sees usage up to one charge past the line, a poller adds ramp x its delay)');
  // Issue 31: what a standing order's kill is decided on, per line, whatever the event said.
  lines.push("standing orders' kill bound, every line: 0 bytes early. The order thread reads the kubelet's numbers (usage,");
  lines.push('  memory.stat) at the candidate and kills only at a working set at or past the line; an event above it only wakes the');
  lines.push('  thread. Late by the rows above at most. No kill in the charge: its working set may be a fold old (docs/mechanisms.md)');
  if (tw.loadMs) lines.push(`tripwire load ${tw.loadMs.toFixed(0)} ms, attach ${tw.attachMs?.toFixed(0)} ms (last load in this process)`);
  lines.push(
    `target ${thrJs.mechanism} p50 >= 50x lower than poll-100ms: ${ratio.p50.toFixed(0)}x -> ${ratio.p50 >= 50 ? 'met' : 'NOT met'}; p99 >= 20x: ${ratio.p99.toFixed(0)}x -> ${ratio.p99 >= 20 ? 'met' : 'NOT met'}`,
  );
  lines.push(`target ${thr.mechanism} p99 < 1 ms: ${thr.p99_us.toFixed(0)} us with default scheduling -> ${thr.p99_us < 1000 ? 'met' : 'NOT met'}`);
  const rtRow = rows.find((r) => r.mechanism === `${thr.mechanism}-rt`);
  if (rtRow)
    lines.push(
      `target ${thr.mechanism} p99 < 1 ms: ${rtRow.p99_us.toFixed(0)} us with --realtime-priority ${RT_PRIORITY} -> ${rtRow.p99_us < 1000 ? 'met' : 'NOT met'}`,
    );
  lines.push(`target >= 100x faster than poll-1s at p50: ${speedup.toFixed(0)}x -> ${speedup >= 100 ? 'met' : 'NOT met'}`);
  lines.push('');
  lines.push(
    `idle CPU, 100 watchers armed for ${idle.seconds} s: ${idle.cpuMs.toFixed(1)} ms (${idle.cpuPercent}% of one CPU); 100 pollers at 100 ms: ${idle.pollCpuPercent}% of one CPU`,
  );
  lines.push(`histogram: ${svgPath}`);
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}
