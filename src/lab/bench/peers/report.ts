/**
 * The results of `bench protect --peers`: one cell per contender and rate; the headline table
 * (what the node's other pods feel: the common line -> memory back, as the probe in the
 * Guaranteed pod saw it), the mechanism table (each contender's reaction from its own line),
 * and the ratio of evictd to the best peer on the headline with a bootstrap interval. The SVG
 * is chart.ts.
 */
import { round } from '../../stats';
import { bootstrapRatio, BOOTSTRAP_REPS, BOOTSTRAP_SEED, type BootstrapRatio } from './bootstrap';
import { summarize, type MedianSummary } from './median-interval';
import type { Trial } from './trial';

export interface Cell {
  contender: string;
  rateMiBs: number;
  /** the rate the hog reached near the line, median of the trials */
  reachedRateMiBs: number | null;
  /** the real-node rate this row stands for: the same time from the line to the end of memory */
  realRateMiBs: number | null;
  trials: number;
  stopped: number;
  oomKills: number;
  protectedLost: number;
  /** the contender's own line, e.g. "memory.available < 98 MiB" */
  ownLine: string;
  /** reactions from the own line and from the common one (values may be +-Infinity: see Trial) */
  own: MedianSummary | null;
  common: MedianSummary | null;
  /** trials whose own-line crossing was inferred, and where it acted before its line */
  inferred: number;
  beforeLine: number;
  /** medians over the trials (see Trial) */
  windowMs: number | null;
  ownLeadMs: number | null;
  exitAfterKillMs: number | null;
  availableAtKillMiB: number | null;
  kubeletAtKillMiB: number | null;
  /** the trials' kubeletAtCommonMiB (see Trial), those that crossed the common line; absent in runs before 2026-11-28 */
  kubeletAtCommonMiB?: number[];
  /** for a contender on the kubelet's signal, the line of each trial, MiB (see Trial ownLineMiB) */
  ownLinesMiB?: number[];
  rssMiB: number | null;
  /** the contender's major page faults during a ramp, median and most (see Trial); absent in runs before they were counted */
  majorFaults?: { median: number; max: number } | null;
  /** the tasks that sent the first kill, by name */
  senders: string;
  via: string;
  /** the highest memory PSI some avg10 (%) in any of the trials (see Trial) */
  psiSomeAvg10Max?: number | null;
  /**
   * The headline (see Trial): common line -> memory back, and -> the hog's exit; the values of
   * the trials are kept for the bootstrap of the ratio (--from renders it again).
   */
  headline?: MedianSummary | null;
  headlineMs?: number[];
  exit?: MedianSummary | null;
  /** the protected pod's worst stall per trial, ms, and MemAvailable's minimum per trial, MiB */
  worstStall?: MedianSummary | null;
  worstStallMaxMs?: number | null;
  minAvailable?: { median: number; lowest: number } | null;
  notRun?: string;
}

const finite = (xs: (number | null)[]): number[] => xs.filter((x): x is number => x !== null && Number.isFinite(x));
const med = (xs: (number | null)[]): number | null => summarize(finite(xs))?.median ?? null;

function faultsOf(ts: Trial[]): Cell['majorFaults'] {
  const xs = finite(ts.map((t) => t.contenderMajorFaults ?? null));
  return xs.length ? { median: med(xs)!, max: Math.max(...xs) } : null;
}

export function cellOf(contender: string, rate: number, ts: Trial[], scale: number): Cell {
  const reached = med(ts.map((t) => t.reachedRateMiBs));
  // The row's own kills: what the contender stopped (for the kernel row, what the kernel killed).
  const killed = ts.filter((t) => (contender === 'kernel' ? t.outcome === 'oom-killed' : t.outcome === 'stopped'));
  const reactions = (pick: (t: Trial) => number | null) => ts.flatMap((t) => (pick(t) === null ? [] : [pick(t)!]));
  const own = summarize(reactions((t) => t.ownReactionMs));
  const common = summarize(reactions((t) => t.commonReactionMs));
  const headlineMs = reactions((t) => t.commonToBackMs ?? null);
  const mins = finite(ts.map((t) => t.minAvailableMiB ?? null));
  return {
    contender,
    rateMiBs: rate,
    reachedRateMiBs: round(reached, 0),
    realRateMiBs: reached === null ? null : round(reached * scale, 0),
    trials: ts.length,
    stopped: ts.filter((t) => t.outcome === 'stopped').length,
    oomKills: ts.reduce((s, t) => s + t.oomKills, 0),
    protectedLost: ts.reduce((s, t) => s + t.protectedLost.length, 0),
    ownLine: '',
    own,
    common,
    inferred: killed.filter((t) => t.ownInferred).length,
    beforeLine: ts.filter((t) => t.ownReactionMs === -Infinity).length,
    windowMs: round(med(ts.map((t) => t.windowMs)), 2),
    ownLeadMs: round(med(ts.map((t) => t.ownLeadMs)), 1),
    exitAfterKillMs: round(med(killed.map((t) => t.exitAfterKillMs)), 1),
    availableAtKillMiB: round(med(killed.map((t) => t.availableAtKillMiB)), 1),
    kubeletAtKillMiB: round(med(killed.map((t) => t.kubeletAtKillMiB)), 1),
    kubeletAtCommonMiB: finite(ts.map((t) => t.kubeletAtCommonMiB ?? null)),
    ...(ts.some((t) => t.ownLineMiB !== undefined) ? { ownLinesMiB: finite(ts.map((t) => t.ownLineMiB ?? null)) } : {}),
    rssMiB: round(med(ts.map((t) => t.contenderRssMiB)), 0),
    majorFaults: faultsOf(ts),
    senders: [...new Set(ts.flatMap((t) => (t.kill ? [`${t.kill.by} (${t.kill.sig === 9 ? 'KILL' : 'TERM'})`] : [])))].join(', ') || '-',
    via: [...new Set(ts.map((t) => t.via))].join('/'),
    psiSomeAvg10Max: ts.some((t) => t.psiSomeAvg10Max !== null) ? Math.max(...ts.map((t) => t.psiSomeAvg10Max ?? 0)) : null,
    headline: summarize(headlineMs),
    headlineMs,
    exit: summarize(reactions((t) => t.commonToExitMs ?? null)),
    worstStall: summarize(finite(ts.map((t) => t.worstStallMs ?? null))),
    worstStallMaxMs: finite(ts.map((t) => t.worstStallMs ?? null)).reduce<number | null>((m, x) => (m === null || x > m ? x : m), null),
    minAvailable: mins.length ? { median: round(med(mins), 1)!, lowest: Math.min(...mins) } : null,
  };
}

/**
 * The cell's own line as its trials ran it: a line on the kubelet's signal that moved through
 * the cell (line-tracker.ts) is described by its range, "memory.available < 160-166 MiB".
 */
export function withMovedLine(cell: Cell): Cell {
  const xs = cell.ownLinesMiB ?? [];
  if (new Set(xs).size < 2) return cell;
  const range = `${Math.min(...xs)}-${Math.max(...xs)}`;
  cell.ownLine = /\d+(?:\.\d+)? MiB/.test(cell.ownLine) ? cell.ownLine.replace(/\d+(?:\.\d+)? MiB/, `${range} MiB`) : `memory.available < ${range} MiB`;
  return cell;
}

export function notRunCell(contender: string, rate: number, reason: string): Cell {
  return {
    contender,
    rateMiBs: rate,
    reachedRateMiBs: null,
    realRateMiBs: null,
    trials: 0,
    stopped: 0,
    oomKills: 0,
    protectedLost: 0,
    ownLine: '',
    own: null,
    common: null,
    inferred: 0,
    beforeLine: 0,
    windowMs: null,
    ownLeadMs: null,
    exitAfterKillMs: null,
    availableAtKillMiB: null,
    kubeletAtKillMiB: null,
    rssMiB: null,
    senders: '-',
    via: '-',
    notRun: reason,
  };
}

/** A reaction for the table: "<0" before the line, "none" when the contender did not stop the hog. */
export function formatMs(x: number | null): string {
  if (x === null) return '-';
  if (x === -Infinity) return '<0';
  if (x === Infinity) return 'none';
  return Math.abs(x) < 10 ? x.toFixed(1) : String(Math.round(x));
}

/**
 * "median [lo, hi] / p95 X", the interval omitted when the trials are too few for 95%; "max"
 * instead of "p95" below 20 trials, where the nearest-rank p95 is the largest value.
 */
export function formatSummary(s: MedianSummary | null | undefined): string {
  if (!s) return '-';
  const ci = s.lo === null ? ' [n<6]' : ` [${formatMs(s.lo)}, ${formatMs(s.hi)}]`;
  return `${formatMs(s.median)}${ci} / ${s.n < 20 ? 'max' : 'p95'} ${formatMs(s.p95)}`;
}

/** The contenders evictd is compared with: not evictd's own rows, not the kernel alone. */
const NOT_PEERS = ['evictd', 'evictd-poll', 'evictd-pageable', 'evictd-noreap', 'evictd-base', 'kernel'];

export interface Ratio {
  rateMiBs: number;
  evictd: Cell | null;
  peer: Cell | null;
  /** the best peer's headline median / evictd's, with its bootstrap 95% interval (bootstrap.ts) */
  headline: BootstrapRatio | null;
  /** evictd loses or is not shown ahead: the ratio is below 1 or its interval reaches 1 */
  loses: boolean | null;
  text: string;
}

const share = (c: Cell) => c.stopped / Math.max(1, c.trials);
const headlineMedian = (c: Cell) => c.headline?.median ?? Infinity;

function times(r: number | null): string {
  if (r === null) return '-';
  if (r === Infinity) return 'inf';
  return r >= 10 ? String(Math.round(r)) : r.toFixed(2);
}

/** The rate a cell is labelled by: reached, with the asked one in parentheses. */
export function rateLabel(c: Cell | null, rate: number): string {
  return `${c?.reachedRateMiBs ?? '-'} MiB/s reached (${rate} asked)`;
}

/**
 * Per rate: the row `evictd` (as users run it; no best-of across modes) against the best peer
 * (most hogs stopped before the kernel, then the lowest headline median), on the headline.
 */
export function ratios(cells: Cell[], rates: number[], reps = BOOTSTRAP_REPS, seed = BOOTSTRAP_SEED): Ratio[] {
  return rates.map((rate) => {
    const here = cells.filter((c) => c.rateMiBs === rate && !c.notRun && c.trials > 0);
    const e = here.find((c) => c.contender === 'evictd') ?? null;
    const peers = here.filter((c) => !NOT_PEERS.includes(c.contender));
    const p = peers.length
      ? peers.reduce((a, b) => (share(a) !== share(b) ? (share(a) > share(b) ? a : b) : headlineMedian(a) <= headlineMedian(b) ? a : b))
      : null;
    if (!e || !p)
      return {
        rateMiBs: rate,
        evictd: e,
        peer: p,
        headline: null,
        loses: null,
        text: `${rateLabel(e ?? p, rate)}: no comparison (evictd or every peer not run)`,
      };
    const b = bootstrapRatio(p.headlineMs ?? [], e.headlineMs ?? [], reps, seed);
    const loses = b.ratio === null ? null : b.ratio < 1 || b.lo === null || b.lo <= 1;
    const verdict =
      b.ratio === null
        ? !e.headlineMs?.length || !p.headlineMs?.length
          ? 'no ratio (no headline measured: a run before the probe, or no trial of one side)'
          : 'no ratio (a headline median is not a time)'
        : b.ratio < 1
          ? `evictd LOSES here: memory back ${times(1 / b.ratio)}x later than ${p.contender}`
          : b.lo === null
            ? `evictd ${times(b.ratio)}x sooner, but too few trials for an interval: NOT shown ahead`
            : b.lo <= 1
              ? `evictd ${times(b.ratio)}x sooner, but the interval reaches 1: NOT shown ahead`
              : b.ratio === Infinity
                ? `evictd ahead on rank only (its median ${formatMs(e.headline?.median ?? null)} against ${formatMs(p.headline?.median ?? null)}): no finite ratio`
                : `evictd gives memory back ${times(b.ratio)}x sooner (the whole interval above 1)`;
    // A kill before the common line ("<0") ranks as the soonest: say how often, since it comes
    // from where the own line was crossed (the mechanism table), not from a faster stop.
    const before = (c: Cell) => (c.headlineMs ?? []).filter((x) => x === -Infinity).length;
    const early = [e, p].filter((c) => before(c) > 0).map((c) => `${c.contender} ${before(c)}/${c.headlineMs!.length}`);
    const text =
      `${rateLabel(e, rate)}: common line -> memory back, evictd ${formatSummary(e.headline)} ms (${e.stopped}/${e.trials} stopped) vs best peer ${p.contender} ${formatSummary(p.headline)} ms (${p.stopped}/${p.trials} stopped); ` +
      `ratio ${p.contender}/evictd ${times(b.ratio)} [${times(b.lo)}, ${times(b.hi)}] (bootstrap 95%, ${b.reps} reps, seed ${b.seed}): ${verdict}` +
      (early.length
        ? `; killed before the hog's readings reached the common line ("<0", ranked soonest): ${early.join(', ')}: its own line was crossed first (mechanism table), which is where its line sits, not a faster stop`
        : '');
    return { rateMiBs: rate, evictd: e, peer: p, headline: b, loses, text };
  });
}

function renderRows(head: string[], rows: string[][], notRun: (i: number) => string | undefined): string {
  const measured = rows.filter((_, i) => notRun(i) === undefined);
  const widths = head.map((h, i) => Math.max(h.length, ...measured.map((r) => r[i]!.length)));
  const line = (cols: string[], i: number) => {
    const why = i >= 0 ? notRun(i) : undefined;
    return why !== undefined
      ? `${cols[0]!.padEnd(widths[0]!)} | ${cols[1]!.padEnd(widths[1]!)} | not run: ${why}`
      : cols.map((c, k) => c.padEnd(widths[k]!)).join(' | ');
  };
  return [line(head, -1), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map((r, i) => line(r, i))].join('\n');
}

/**
 * The headline: what the node's other pods felt. Who stopped the hog, how long from the common
 * line until the probe in the Guaranteed pod saw memory back (and until the hog was gone), how
 * low MemAvailable went, how long the protected pod stalled.
 */
export function renderHeadline(cells: Cell[]): string {
  const head = [
    'MiB/s reached (asked)',
    'contender',
    'real-node MiB/s',
    'stopped before OOM',
    'common line -> memory back ms: median [95% CI] / p95 (max if n<20)',
    'common line -> hog exit ms',
    'MemAvailable min MiB (median / lowest)',
    'protected pod worst stall ms (median / worst)',
    'protected lost',
    'kernel OOM kills',
  ];
  const rows = cells.map((c) => [
    c.notRun ? `(${c.rateMiBs})` : `${c.reachedRateMiBs ?? '-'} (${c.rateMiBs})`,
    c.contender,
    String(c.realRateMiBs ?? '-'),
    `${c.stopped}/${c.trials}`,
    formatSummary(c.headline),
    formatSummary(c.exit),
    c.minAvailable ? `${c.minAvailable.median} / ${c.minAvailable.lowest}` : '-',
    c.worstStall ? `${formatMs(c.worstStall.median)} / ${formatMs(c.worstStallMaxMs ?? null)}` : '-',
    String(c.protectedLost),
    String(c.oomKills),
  ]);
  return renderRows(head, rows, (i) => cells[i]!.notRun);
}

/** The mechanism: who stopped the hog, how soon from its own line and from the common one, what was left. */
export function renderTable(cells: Cell[]): string {
  const head = [
    'contender',
    'MiB/s reached (asked)',
    'real-node MiB/s',
    'stopped before OOM',
    'protected lost',
    'kernel OOM kills',
    'own line',
    'own-line reaction ms: median [95% CI] / p95',
    'common-line reaction ms',
    'MemAvailable / memory.available at kill MiB',
    'stop',
    'first kill sent by',
  ];
  const rows = cells.map((c) => [
    c.contender,
    c.notRun ? `(${c.rateMiBs})` : `${c.reachedRateMiBs ?? '-'} (${c.rateMiBs})`,
    String(c.realRateMiBs ?? '-'),
    `${c.stopped}/${c.trials}`,
    String(c.protectedLost),
    String(c.oomKills),
    c.ownLine,
    formatSummary(c.own),
    formatSummary(c.common),
    `${c.availableAtKillMiB ?? '-'} / ${c.kubeletAtKillMiB ?? '-'}`,
    c.via,
    c.senders,
  ]);
  return renderRows(head, rows, (i) => cells[i]!.notRun);
}

/** What favours whom, measured per cell. */
export function renderConditions(cells: Cell[]): string {
  const head = [
    'contender',
    'MiB/s asked',
    'own line crossed before the common one, ms (median)',
    'crossing chunk touch + read, ms (median)',
    'own crossings inferred',
    'acted before its line',
    'kill sent -> hog exited, ms (median)',
    'contender RSS MiB',
    'contender major faults per ramp (median / most)',
    'PSI some avg10 max %',
  ];
  const rows = cells.map((c) => [
    c.contender,
    String(c.rateMiBs),
    formatMs(c.ownLeadMs),
    formatMs(c.windowMs),
    `${c.inferred}/${c.trials}`,
    `${c.beforeLine}/${c.trials}`,
    formatMs(c.exitAfterKillMs),
    String(c.rssMiB ?? '-'),
    c.majorFaults ? `${c.majorFaults.median} / ${c.majorFaults.max}` : '-',
    String(c.psiSomeAvg10Max ?? '-'),
  ]);
  return renderRows(head, rows, (i) => cells[i]!.notRun);
}

/** JSON.stringify with the infinities spelled out (JSON has no Infinity: it would print null). */
export function toJson(x: unknown): string {
  return JSON.stringify(x, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v === -Infinity ? '-Infinity' : typeof v === 'bigint' ? String(v) : v));
}
