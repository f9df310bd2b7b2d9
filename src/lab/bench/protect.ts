/**
 * `evictd bench protect`: does the agent get the hog before the kernel OOM killer does?
 *
 * A BestEffort hog ramps at several rates toward the limit of a small node cgroup on the real
 * containerd. The same `evictd run` (same policy, same fast kill) is driven four ways: by
 * kernel notifications (evictd), and by polling alone every 10 s (the kubelet's housekeeping
 * default), 1 s and 100 ms (`--notifications none --housekeeping-interval X`). For each rate
 * and driver: how often the hog was evicted before a kernel OOM kill, and the reaction
 * (threshold crossing -> kill sent, see ramp-lab.ts), p50 and p99. One table, one SVG.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AgentProcess, runRamp, type RampResult } from '../ramp-lab';
import { percentile, round } from '../stats';
import { pipeTable } from '../text-table';
import { harnessMissing } from '../harness';
import { openLabSession } from '../lab-session';
import { badValue, UsageError } from '../../errors';
import { eachFlag, parseRates, parseWhole } from '../flags';
import { run as runPeers } from './peers/bench';
import { run as runBrake } from './brake';
import { run as runKillPath } from './kill-path';

const MiB = 1024 * 1024;
const IDLE_WINDOW_S = 10;

const USAGE = `usage: evictd bench protect [--json] [--quick] [--trials N] [--rates LIST] [--svg FILE]

  --trials N     ramps per rate and driver (default 3; --quick: 1)
  --rates LIST   hog ramp rates in MiB/s (default 100,500,1000,2000)
  --drivers LIST which of evictd,poll-100ms,poll-1s,poll-10s to run (default all four);
                 also evictd-no-fast-kill (StopPodSandbox alone) for comparison
  --svg FILE     where to write the picture (default ./evictd-bench-protect.svg)
  --json         print the results as one JSON object (last line)
  --peers[=LIST] evictd against earlyoom, nohang, oomd, systemd-oomd, the kubelet's loop and
                 the kernel alone, on the whole machine (see evictd bench protect --peers --help)
  --brake        a SIGTERM-checkpointing hog under a soft threshold, with and without
                 --memory-brake (cgroup v2; see evictd bench protect --brake --help)
  --pods LIST    crossing -> kill with LIST bystander pods on the node, e.g. 0,110,250 (see
                 evictd bench protect --pods --help)`;

interface Driver {
  name: string;
  args: string[];
  /** the polling period, for the random start offset of each ramp */
  periodMs?: number;
}

/** Not run by default: evictd without the fast kill (StopPodSandbox alone), for comparison. */
const EXTRA_DRIVERS: Driver[] = [{ name: 'evictd-no-fast-kill', args: ['--fast-kill=false'] }];

const DRIVERS: Driver[] = [
  { name: 'evictd', args: [] },
  { name: 'poll-100ms', args: ['--notifications', 'none', '--housekeeping-interval', '100ms'], periodMs: 100 },
  { name: 'poll-1s', args: ['--notifications', 'none', '--housekeeping-interval', '1s'], periodMs: 1000 },
  { name: 'poll-10s', args: ['--notifications', 'none', '--housekeeping-interval', '10s'], periodMs: 10_000 },
];

interface Options {
  json: boolean;
  trials: number;
  rates: number[];
  svg: string;
  nodeMiB: number;
  drivers: Driver[];
}

function parse(argv: string[]): Options | null {
  const o: Options = { json: false, trials: 3, rates: [100, 500, 1000, 2000], svg: path.resolve('evictd-bench-protect.svg'), nodeMiB: 384, drivers: DRIVERS };
  if (argv.includes('--help') || argv.includes('-h')) return null;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--json') o.json = true;
    else if (flag === '--quick') o.trials = 1;
    else if (flag === '--trials') o.trials = parseWhole('--trials', value(), 1, 100);
    else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else if (flag === '--drivers') {
      const v = value();
      const names = v.split(',').map((x) => x.trim());
      const all = [...DRIVERS, ...EXTRA_DRIVERS];
      const unknown = names.find((n) => !all.some((d) => d.name === n));
      if (unknown !== undefined) throw badValue('--drivers', v, `unknown driver ${JSON.stringify(unknown)} (one of ${all.map((d) => d.name).join(', ')})`);
      o.drivers = all.filter((d) => names.includes(d.name));
    } else if (flag === '--svg') o.svg = path.resolve(value());
    else throw new UsageError(`bench protect: unknown flag ${JSON.stringify(raw)}`);
  });
  return o;
}

interface Cell {
  driver: string;
  rateMiBs: number;
  trials: number;
  evicted: number;
  oomKilled: number;
  reactionP50Ms: number | null;
  reactionP99Ms: number | null;
  freedP99Ms: number | null;
}

function cellOf(driver: string, rate: number, rs: RampResult[]): Cell {
  const reactions = rs.flatMap((r) => (r.outcome === 'evicted' && r.reactionMs !== undefined ? [r.reactionMs] : []));
  const freed = rs.flatMap((r) => (r.outcome === 'evicted' && r.freedMs !== undefined ? [r.freedMs] : []));
  return {
    driver,
    rateMiBs: rate,
    trials: rs.length,
    evicted: rs.filter((r) => r.outcome === 'evicted').length,
    oomKilled: rs.filter((r) => r.outcome === 'oom-killed').length,
    reactionP50Ms: round(percentile(reactions, 50), 2),
    reactionP99Ms: round(percentile(reactions, 99), 2),
    freedP99Ms: round(percentile(freed, 99), 1),
  };
}

export async function run(argv: string[]): Promise<number> {
  if (argv.some((a) => a === '--peers' || a.startsWith('--peers='))) return runPeers(argv);
  if (argv.includes('--brake')) return runBrake(argv);
  if (argv.some((a) => a === '--pods' || a.startsWith('--pods='))) return runKillPath(argv);
  const o = parse(argv);
  if (!o) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const missing = harnessMissing();
  if (missing) throw new UsageError(`bench protect: ${missing}`);
  const log = (s: string): void => {
    if (!o.json) process.stdout.write(s + '\n');
    else process.stderr.write(s + '\n');
  };
  const t0 = Date.now();
  const session = await openLabSession({ name: 'evictd-bench-protect', memoryLimitBytes: o.nodeMiB * MiB, logDir: 'bench-protect', clientTimeoutMs: 5000 });
  const { harness, lab } = session;
  const cells: Cell[] = [];
  const idle: Record<string, number | null> = {};
  const all: Record<string, RampResult[]> = {};
  const targetMiB = o.nodeMiB + 64;
  try {
    await lab.runPod({
      name: 'guaranteed',
      namespace: 'bench',
      qos: 'Guaranteed',
      containers: [
        { name: 'app', image: 'localhost/evictd/busybox:1', command: ['/bin/sh', '-c', 'while true; do sleep 1; done'], memoryLimitBytes: 32 * MiB },
      ],
      annotations: { 'evictd.io/requests': 'memory=32Mi,cpu=100m', 'evictd.io/limits': 'memory=32Mi,cpu=100m' },
    });
    log(
      `bench protect: node ${o.nodeMiB} MiB, hard memory.available<64Mi, hog ramps to ${targetMiB} MiB at ${o.rates.join(', ')} MiB/s, ${o.trials} trial(s) each`,
    );
    for (const d of o.drivers) {
      const agent = await AgentProcess.start({ lab, endpoint: harness.endpoint, evictionHard: 'memory.available<64Mi', extraArgs: d.args });
      all[d.name] = [];
      try {
        for (const rate of o.rates) {
          const rs: RampResult[] = [];
          for (let t = 0; t < o.trials; t++) {
            // Each ramp starts at a random phase of the poller's period: trials of near-constant
            // length would otherwise alias with the period and always hit (or miss) the same way.
            const startDelayMs = d.periodMs ? Math.floor(Math.random() * d.periodMs) : 0;
            const r = await runRamp(lab, agent, { name: `hog-${d.name}-${rate}-${t}`, rateMiBs: rate, targetMiB, namespace: 'bench', startDelayMs });
            rs.push(r);
            await lab.removePod(r.labPod);
          }
          all[d.name]!.push(...rs);
          const c = cellOf(d.name, rate, rs);
          cells.push(c);
          log(
            `  ${d.name.padEnd(10)} ${String(rate).padStart(5)} MiB/s: evicted ${c.evicted}/${c.trials}, OOM-killed ${c.oomKilled}, reaction p50 ${c.reactionP50Ms ?? '-'} ms p99 ${c.reactionP99Ms ?? '-'} ms`,
          );
        }
        // Idle CPU: 2 s to settle (the last StopPodSandbox), then 10 s with nothing to do.
        await new Promise((r) => setTimeout(r, 2000));
        const cpu0 = agent.cpuSeconds();
        await new Promise((r) => setTimeout(r, IDLE_WINDOW_S * 1000));
        idle[d.name] = round(((agent.cpuSeconds() - cpu0) / IDLE_WINDOW_S) * 100, 2);
      } finally {
        await agent.stop();
      }
    }
  } finally {
    await session.close();
  }

  const byDriver = o.drivers.map((d) => {
    const rs = all[d.name] ?? [];
    const reactions = rs.flatMap((r) => (r.outcome === 'evicted' && r.reactionMs !== undefined ? [r.reactionMs] : []));
    const freed = rs.flatMap((r) => (r.outcome === 'evicted' && r.freedMs !== undefined ? [r.freedMs] : []));
    return {
      driver: d.name,
      freedP50Ms: round(percentile(freed, 50), 1),
      freedP99Ms: round(percentile(freed, 99), 1),
      trials: rs.length,
      evicted: rs.filter((r) => r.outcome === 'evicted').length,
      oomKills: rs.reduce((s, r) => s + r.oomKills, 0),
      reactionP50Ms: round(percentile(reactions, 50), 2),
      reactionP99Ms: round(percentile(reactions, 99), 2),
      idleCpuPercent: idle[d.name] ?? null,
    };
  });
  fs.writeFileSync(o.svg, svg(cells, o.rates, o.drivers));
  const table = renderTable(cells, o.rates, o.drivers);
  log('\n' + table);
  log(
    '\nper driver: ' +
      byDriver
        .map(
          (b) =>
            `${b.driver} evicted ${b.evicted}/${b.trials}, kernel OOM kills ${b.oomKills}, reaction p50 ${b.reactionP50Ms ?? '-'} ms p99 ${b.reactionP99Ms ?? '-'} ms, memory back p50 ${b.freedP50Ms ?? '-'} ms p99 ${b.freedP99Ms ?? '-'} ms, idle CPU ${b.idleCpuPercent}%`,
        )
        .join('\n            '),
  );
  log(`picture: ${o.svg}   (${round((Date.now() - t0) / 1000, 0)} s)`);
  const result = { bench: 'protect', nodeMiB: o.nodeMiB, threshold: 'memory.available<64Mi', rates: o.rates, trials: o.trials, cells, byDriver, svg: o.svg };
  if (o.json) process.stdout.write(JSON.stringify(result) + '\n');
  return 0;
}

function renderTable(cells: Cell[], rates: number[], drivers: Driver[]): string {
  const head = ['rate MiB/s', ...drivers.map((d) => d.name)];
  const rows = rates.map((rate) => [
    String(rate),
    ...drivers.map((d) => {
      const c = cells.find((x) => x.driver === d.name && x.rateMiBs === rate);
      if (!c) return '-';
      const lat = c.reactionP50Ms !== null ? ` ${c.reactionP50Ms}/${c.reactionP99Ms} ms` : '';
      return `${c.evicted}/${c.trials} evicted${c.oomKilled ? `, ${c.oomKilled} OOM` : ''}${lat}`;
    }),
  ]);
  return ['evicted before the kernel OOM killer; reaction p50/p99 (threshold crossing -> kill sent)', ...pipeTable(head, rows)].join('\n');
}

const COLORS: Record<string, string> = {
  evictd: '#1b9e77',
  'poll-100ms': '#7570b3',
  'poll-1s': '#d95f02',
  'poll-10s': '#e7298a',
  'evictd-no-fast-kill': '#66a61e',
};

/** Two panels of grouped bars: share evicted before OOM, and reaction p50 (log scale). */
function svg(cells: Cell[], rates: number[], drivers: Driver[]): string {
  const W = 900;
  const H = 360;
  const panelW = 400;
  const top = 50;
  const plotH = 230;
  const groupW = panelW / rates.length;
  const barW = (groupW - 16) / drivers.length;
  const parts: string[] = [];
  const text = (x: number, y: number, s: string, extra = '', size = 12) =>
    parts.push(`<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-family="sans-serif" font-size="${size}" ${extra}>${s}</text>`);
  const panel = (x0: number, title: string, yLabel: (v: number) => string, ticks: number[], scale: (c: Cell) => number | null, label: (c: Cell) => string) => {
    text(x0, 30, title, 'font-weight="bold"');
    for (const t of ticks) {
      const y = top + plotH - t * plotH;
      parts.push(`<line x1="${x0}" y1="${y}" x2="${x0 + panelW}" y2="${y}" stroke="#ddd"/>`);
      text(x0 - 6, y + 4, yLabel(t), 'text-anchor="end"', 10);
    }
    rates.forEach((rate, gi) => {
      const gx = x0 + gi * groupW + 8;
      drivers.forEach((d, di) => {
        const c = cells.find((x) => x.driver === d.name && x.rateMiBs === rate);
        const v = c ? scale(c) : null;
        const x = gx + di * barW;
        if (v === null) {
          text(x + barW / 2, top + plotH - 4, '×', 'text-anchor="middle" fill="#999"', 10);
          return;
        }
        const h = Math.max(1, v * plotH);
        parts.push(
          `<rect x="${x.toFixed(1)}" y="${(top + plotH - h).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[d.name]}"><title>${d.name} ${rate} MiB/s: ${label(c!)}</title></rect>`,
        );
      });
      text(gx + (barW * drivers.length) / 2, top + plotH + 16, `${rate} MiB/s`, 'text-anchor="middle"');
    });
    parts.push(`<line x1="${x0}" y1="${top + plotH}" x2="${x0 + panelW}" y2="${top + plotH}" stroke="#333"/>`);
  };
  panel(
    50,
    'hog evicted before the kernel OOM killer',
    (t) => `${Math.round(t * 100)}%`,
    [0, 0.25, 0.5, 0.75, 1],
    (c) => (c.trials ? c.evicted / c.trials : null),
    (c) => `${c.evicted}/${c.trials} evicted`,
  );
  // log scale from 1 ms to 10 s
  const logScale = (ms: number) => Math.min(1, Math.max(0, Math.log10(Math.max(ms, 1)) / 4));
  panel(
    W - panelW - 30,
    'reaction p50, crossing -> kill (log)',
    (t) => ['1 ms', '10 ms', '100 ms', '1 s', '10 s'][Math.round(t * 4)]!,
    [0, 0.25, 0.5, 0.75, 1],
    (c) => (c.reactionP50Ms === null ? null : logScale(c.reactionP50Ms)),
    (c) => `p50 ${c.reactionP50Ms} ms, p99 ${c.reactionP99Ms} ms`,
  );
  drivers.forEach((d, i) => {
    const x = 60 + i * 150;
    parts.push(`<rect x="${x}" y="${H - 30}" width="12" height="12" fill="${COLORS[d.name]}"/>`);
    text(x + 18, H - 20, d.name);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`;
}
