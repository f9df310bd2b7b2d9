/**
 * What a run of `bench protect --peers` leaves and how it is read back: the summary (the last
 * line of --json), the header a run writes before its first trial (so a run cut short still
 * renders), and the report printed from either.
 */
import fs from 'node:fs';
import type { CalibrationSet } from './calibrate';
import type { LineMove } from './line-tracker';
import type { Scheduling } from './contender';
import { whatFavoursWhom } from './fairness';
import { svg } from './chart';
import { cellOf, ratios, renderConditions, renderHeadline, renderTable, withMovedLine, type Cell, type Ratio } from './report';
import type { Trial } from './trial';

/** What a run leaves (the last line of --json): enough to print its tables and picture again. */
export interface Summary {
  bench: 'protect-peers';
  environment: string;
  lineMiB: number;
  evictdLineMiB: number;
  oomdFreeLineMiB: number;
  calibration: string;
  /**
   * the calibration's readings: with no agent, and in runs before 2026-11-28 (withEvictd) with
   * evictd --dry-run running (the peers frozen from 2026-11-27c); absent in older ones. Since
   * 2026-11-28 evictdLineMiB, oomdFreeLineMiB and calibration are the no-agent reference and
   * each cell's lines are in cellLines.
   */
  calibrationSets?: { noAgent?: CalibrationSet; withEvictd?: CalibrationSet };
  /** per rate asked: the lines taken as that cell's evictd trials find the node (calibrate.ts calibrateCell) */
  cellLines?: Record<string, { evictdLineMiB: number; oomdFreeLineMiB: number; note: string; withEvictd?: CalibrationSet }>;
  /** per rate asked: each restart of a contender on the kubelet's signal on a line the cell's readings moved (line-tracker.ts); absent before 2026-11-28b */
  lineMoves?: Record<string, LineMove[]>;
  realMarginMiB: number;
  rates: number[];
  trials: number;
  contenders: string[];
  /** the scheduling variant, the order's seed, whether each contender was warmed (absent in older runs) */
  scheduling?: Scheduling;
  seed?: number;
  warmUp?: boolean;
  /** the order of the counted trials per rate (contender names, one row per trial index) */
  orders?: Record<string, string[][]>;
  cells: Cell[];
  configs: Record<string, string>;
  ran: Record<string, string>;
  errors: string[];
  seconds: number;
}

/** Prints the tables, the ratios and what favours whom, writes the picture; returns the ratios. */
export function printReport(s: Summary, log: (line: string) => void, svgPath: string): Ratio[] {
  const scale = s.realMarginMiB / s.lineMiB;
  const variant = s.scheduling ? `; scheduling ${s.scheduling}` : '';
  const title = `bench protect --peers: ${s.environment}; common line MemAvailable < ${s.lineMiB} MiB${variant} (real-node rates for a ${s.realMarginMiB} MiB margin)`;
  fs.writeFileSync(svgPath, svg(s.cells, s.contenders, s.rates, title, scale));
  const r = ratios(s.cells, s.rates);
  log(
    `\nscheduling: ${s.scheduling ?? 'not recorded (a run before the variants)'}; order seed ${s.seed ?? '-'}; warm-up ramp per contender and cell: ${s.warmUp === undefined ? '-' : s.warmUp ? 'yes' : 'no (--quick)'}`,
  );
  log("\nheadline: what the node's other pods felt (the probe in the Guaranteed pod), per cell:\n" + renderHeadline(s.cells));
  log(
    `\nevictd against the best peer (most hogs stopped before the kernel, then the lowest headline median), common line -> memory back:\n` +
      r.map((x) => `  ${x.text}`).join('\n'),
  );
  log("\nmechanism: each contender's reaction from its own line and from the common one (median [95% CI] / p95, max where n < 20):\n" + renderTable(s.cells));
  log('\nwhat favours whom, per cell:\n' + renderConditions(s.cells));
  log(
    '\nwhat favours whom:\n' +
      whatFavoursWhom(s.cells, s.scheduling)
        .map((f) => `  - ${f}`)
        .join('\n'),
  );
  log('\nconfigurations:\n' + s.contenders.map((n) => `  ${n}: ${s.configs[n]}${s.ran[n] ? ` [ran: ${s.ran[n]}]` : ''}`).join('\n'));
  if (s.errors.length) log(`\ntrials that failed (not counted): ${s.errors.length}\n` + s.errors.map((e) => `  ${e}`).join('\n'));
  log(`picture: ${svgPath}   (${s.seconds} s)`);
  return r;
}

/** What a --json run says before its first trial: enough to render it if it is cut short. */
export type RunHeader = Omit<Summary, 'bench' | 'cells' | 'ran' | 'errors' | 'seconds'> & { ownLines: Record<string, string> };

const revive = (_k: string, v: unknown) => (v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v);

/**
 * The summary of a saved --json run, with the infinities toJson spelled out made numbers again.
 * A run cut short (no summary line) is summed up from its header and the trials it finished,
 * by the same cellOf as a whole run, and says how many trials it holds.
 */
export function readSummary(text: string): Summary {
  const lines = text
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l, revive) as Record<string, unknown>;
      } catch {
        return null;
      }
    });
  const last = lines[lines.length - 1] as Summary | null | undefined;
  if (last?.bench === 'protect-peers' && Array.isArray(last.cells) && Array.isArray(last.contenders)) return last;
  const header = lines.find((l) => l && 'run' in l)?.run as RunHeader | undefined;
  if (!header) throw new Error('it holds neither the summary of bench protect --peers --json nor a run header');
  const trials = lines.flatMap((l) => (l && 'trial' in l ? [l.trial as Trial] : []));
  // Each cell's lines, written when the cell calibrated (runs since 2026-11-28).
  type CellLines = NonNullable<Summary['cellLines']>[string] & { rateMiBs: number; ownLines: Record<string, string> };
  const cellLines = new Map(lines.flatMap((l) => (l && 'cellLines' in l ? [[(l.cellLines as CellLines).rateMiBs, l.cellLines as CellLines] as const] : [])));
  const scale = header.realMarginMiB / header.lineMiB;
  const cells = header.rates.flatMap((rate) =>
    header.contenders.map((name) => {
      const cell = cellOf(
        name,
        rate,
        trials.filter((t) => t.contender === name && t.rateMiBs === rate),
        scale,
      );
      cell.ownLine = cellLines.get(rate)?.ownLines[name] ?? header.ownLines[name] ?? '';
      return withMovedLine(cell);
    }),
  );
  const { ownLines: _o, ...rest } = header;
  const moves = lines.flatMap((l) => (l && 'lineMoves' in l ? [l.lineMoves as { rateMiBs: number; moves: LineMove[] }] : []));
  if (moves.length) rest.lineMoves = Object.fromEntries(moves.map((m) => [String(m.rateMiBs), m.moves]));
  if (cellLines.size) rest.cellLines = Object.fromEntries([...cellLines].map(([rate, { rateMiBs: _r, ownLines: _l, ...c }]) => [String(rate), c]));
  return {
    bench: 'protect-peers',
    ...rest,
    environment: `${header.environment}; cut short: ${trials.length} of ${header.rates.length * header.trials * header.contenders.length} trials`,
    cells,
    ran: {},
    errors: [],
    seconds: 0,
  };
}
