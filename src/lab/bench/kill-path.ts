/**
 * `evictd bench protect --pods LIST`: does the path from a crossing to the kill grow with the
 * pods on the node? A JS pass observes every pod (about 0.09 ms per pod on this host), so a kill
 * decided by a pass comes later on a full node; a standing order's kill is written by a thread of
 * the addon at the kernel's notification, whatever the node holds.
 *
 * On the real containerd, a node cgroup gains bystander pods (a pause sandbox and a busybox
 * `sleep` each) up to each count in LIST; at each count the same `evictd run` as shipped
 * (--realtime-priority=10, the mechanism it selects here) faces BestEffort hog ramps. Per count:
 * crossing -> kill sent (the hog stamps every 64 KiB: ramp-lab.ts), the kernel's notification ->
 * kill written as the order thread stamps both, how many kills were a standing order's, and the
 * agent's mean pass time over the count (evictd_pass_duration_seconds), which the kill no longer
 * waits for.
 */
import http from 'node:http';
import { AgentProcess, runRamp, type LogLine, type RampResult } from '../ramp-lab';
import { IMAGES } from '../harness';
import { openLabSession } from '../lab-session';
import type { LabPod } from '../node-lab';
import { percentile, round } from '../stats';
import { pipeTable } from '../text-table';
import { badValue, UsageError } from '../../errors';
import { eachFlag, parseRates, parseWhole } from '../flags';
import { benchStart } from './start';

const MiB = 1024 * 1024;
/** The node's room for the hog; each bystander adds its own (a pause and a sleep: under 1 MiB charged). */
const NODE_MiB = 384;
const PER_POD_MiB = 2;
const LINE = 'memory.available<64Mi';
/** As deploy/daemonset.yaml and deploy/evictd.service pass it. */
const SHIPPED = ['--realtime-priority=10'];

export const USAGE = `usage: evictd bench protect --pods LIST [--rates LIST] [--trials N | --quick] [--json]

  Crossing -> kill sent for evictd run as shipped, with LIST bystander pods on the node (a pause
  sandbox and a busybox sleep each, on the real containerd), for example --pods 0,110,250.
  --rates LIST   hog ramp rates, MiB/s (default 1000)
  --trials N     ramps per count and rate (default 10; --quick: 2)
  --json         one JSON object with every ramp (last line)`;

interface Options {
  pods: number[];
  rates: number[];
  trials: number;
  json: boolean;
}

function parse(argv: string[]): Options | null {
  const o: Options = { pods: [], rates: [1000], trials: 10, json: false };
  if (argv.includes('--help') || argv.includes('-h')) return null;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--pods') {
      const v = value();
      const counts = v.split(',').map((x) => Number(x.trim()));
      if (counts.some((n) => !Number.isInteger(n) || n < 0 || n > 300)) throw badValue('--pods', v, 'must be whole numbers from 0 to 300, comma separated');
      o.pods = [...new Set(counts)].sort((a, b) => a - b);
    } else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else if (flag === '--trials') o.trials = parseWhole('--trials', value(), 1, 100);
    else if (flag === '--quick') o.trials = 2;
    else if (flag === '--json') o.json = true;
    else throw new UsageError(`bench protect --pods: unknown flag ${JSON.stringify(raw)}`);
  });
  if (o.pods.length === 0) throw badValue('--pods', '', 'needs at least one count');
  return o;
}

interface Ramp extends RampResult {
  pods: number;
  /** the order thread's wake-up -> kill written, from the agent's 'standing order used' line */
  wakeToKillUs?: number;
  /** of which the fresh read of the kubelet's numbers that confirmed the kill */
  freshReadUs?: number;
}

interface Row {
  pods: number;
  rateMiBs: number;
  trials: number;
  evicted: number;
  oomKills: number;
  byOrder: number;
  reactionP50Ms: number | null;
  reactionP99Ms: number | null;
  wakeToKillP50Us: number | null;
  wakeToKillP99Us: number | null;
  freshReadP50Us: number | null;
  freshReadP99Us: number | null;
  meanPassMs: number | null;
}

/** The sum and count of the agent's pass-duration histogram, from its /metrics. */
function passTotals(address: string | null): Promise<{ sum: number; count: number } | null> {
  if (!address) return Promise.resolve(null);
  return new Promise((resolve) => {
    http
      .get(`http://${address}/metrics`, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          const sum = Number(/^evictd_pass_duration_seconds_sum (\S+)$/m.exec(body)?.[1]);
          const count = Number(/^evictd_pass_duration_seconds_count (\S+)$/m.exec(body)?.[1]);
          resolve(Number.isFinite(sum) && Number.isFinite(count) ? { sum, count } : null);
        });
      })
      .on('error', () => resolve(null));
  });
}

function orderLine(agent: AgentProcess, pod: string): LogLine | undefined {
  return agent.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('standing order used') && l.pod === pod);
}

export async function run(argv: string[]): Promise<number> {
  const start = benchStart(argv, 'bench protect --pods', parse, USAGE);
  if (!start) return 0;
  const { o, log } = start;
  const t0 = Date.now();
  const maxPods = o.pods[o.pods.length - 1]!;
  const nodeMiB = NODE_MiB + maxPods * PER_POD_MiB;
  const session = await openLabSession({ name: 'evictd-bench-kill-path', memoryLimitBytes: nodeMiB * MiB, logDir: 'bench-kill-path', clientTimeoutMs: 10_000 });
  const { harness, lab } = session;
  const bystanders: LabPod[] = [];
  const ramps: Ramp[] = [];
  const rows: Row[] = [];
  try {
    log(
      `bench protect --pods: node ${nodeMiB} MiB, hard ${LINE}, evictd run ${SHIPPED.join(' ')}; hog ramps at ${o.rates.join(', ')} MiB/s, ${o.trials} per count; bystanders: ${o.pods.join(', ')}`,
    );
    for (const count of o.pods) {
      const started = Date.now();
      while (bystanders.length < count) {
        const i = bystanders.length;
        bystanders.push(
          await lab.runPod({
            name: `bystander-${i}`,
            namespace: 'bystanders',
            qos: 'BestEffort',
            containers: [{ name: 'sleep', image: IMAGES.busybox, command: ['/bin/sleep', '100000'] }],
          }),
        );
        if ((i + 1) % 50 === 0) log(`  ${i + 1} bystander pods running (${round((Date.now() - started) / 1000, 0)} s)`);
      }
      const agent = await AgentProcess.start({ lab, endpoint: harness.endpoint, evictionHard: LINE, extraArgs: SHIPPED, startTimeoutMs: 120_000 });
      try {
        // The first passes list and observe every pod and arm the lines.
        await agent.waitFor((l) => typeof l.msg === 'string' && /^memory line /.test(l.msg), 60_000).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 2000));
        const before = await passTotals(agent.metricsAddress);
        for (const rate of o.rates) {
          const rs: Ramp[] = [];
          for (let t = 0; t < o.trials; t++) {
            const r: Ramp = {
              ...(await runRamp(lab, agent, { name: `hog-${count}-${rate}-${t}`, rateMiBs: rate, targetMiB: nodeMiB + 64, namespace: 'bench', stepKiB: 64 })),
              pods: count,
            };
            const used = orderLine(agent, r.pod);
            if (typeof used?.crossedToKilledUs === 'number') r.wakeToKillUs = used.crossedToKilledUs;
            if (typeof used?.freshReadUs === 'number') r.freshReadUs = used.freshReadUs;
            rs.push(r);
            await lab.removePod(r.labPod);
            // The next ramp starts on a settled node (the stop in the background, the last pass).
            await new Promise((res) => setTimeout(res, 1000));
          }
          const after = await passTotals(agent.metricsAddress);
          const reactions = rs.flatMap((r) => (r.outcome === 'evicted' && r.reactionMs !== undefined ? [r.reactionMs] : []));
          const wake = rs.flatMap((r) => (r.wakeToKillUs !== undefined ? [r.wakeToKillUs] : []));
          const fresh = rs.flatMap((r) => (r.freshReadUs !== undefined ? [r.freshReadUs] : []));
          const row: Row = {
            pods: count,
            rateMiBs: rate,
            trials: rs.length,
            evicted: rs.filter((r) => r.outcome === 'evicted').length,
            oomKills: rs.reduce((s, r) => s + r.oomKills, 0),
            byOrder: rs.filter((r) => r.action === 'standing-order').length,
            reactionP50Ms: round(percentile(reactions, 50), 3),
            reactionP99Ms: round(percentile(reactions, 99), 3),
            wakeToKillP50Us: round(percentile(wake, 50), 0),
            wakeToKillP99Us: round(percentile(wake, 99), 0),
            freshReadP50Us: round(percentile(fresh, 50), 1),
            freshReadP99Us: round(percentile(fresh, 99), 1),
            meanPassMs: before && after && after.count > before.count ? round(((after.sum - before.sum) / (after.count - before.count)) * 1000, 2) : null,
          };
          rows.push(row);
          ramps.push(...rs);
          log(
            `  ${String(count).padStart(3)} pods, ${rate} MiB/s: evicted ${row.evicted}/${row.trials} (${row.byOrder} by standing order), kernel OOM kills ${row.oomKills}, crossing -> kill sent p50 ${row.reactionP50Ms ?? '-'} ms p99 ${row.reactionP99Ms ?? '-'} ms, wake-up -> kill written p50 ${row.wakeToKillP50Us ?? '-'} µs (fresh read ${row.freshReadP50Us ?? '-'} µs), mean pass ${row.meanPassMs ?? '-'} ms`,
          );
        }
      } finally {
        await agent.stop();
      }
    }
  } finally {
    await session.close();
  }
  const table = pipeTable(
    [
      'bystander pods',
      'MiB/s',
      'evicted before OOM',
      'by standing order',
      'kernel OOM kills',
      'crossing -> kill sent, ms: p50 / p99',
      'notification -> kill written, µs: p50 / p99',
      'of which the fresh read, µs: p50 / p99',
      'mean pass, ms',
    ],
    rows.map((r) => [
      String(r.pods),
      String(r.rateMiBs),
      `${r.evicted}/${r.trials}`,
      String(r.byOrder),
      String(r.oomKills),
      `${r.reactionP50Ms ?? '-'} / ${r.reactionP99Ms ?? '-'}`,
      `${r.wakeToKillP50Us ?? '-'} / ${r.wakeToKillP99Us ?? '-'}`,
      `${r.freshReadP50Us ?? '-'} / ${r.freshReadP99Us ?? '-'}`,
      String(r.meanPassMs ?? '-'),
    ]),
  );
  log('\n' + table.join('\n'));
  log(`(${round((Date.now() - t0) / 1000, 0)} s)`);
  if (o.json)
    process.stdout.write(
      JSON.stringify({ bench: 'protect-pods', nodeMiB, threshold: LINE, agentArgs: SHIPPED, rows, ramps: ramps.map(({ labPod: _labPod, ...r }) => r) }) + '\n',
    );
  return 0;
}
