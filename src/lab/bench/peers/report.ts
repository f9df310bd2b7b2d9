/**
 * The results of `bench protect --peers`: one cell per contender and rate; the headline table
 * (what the node's other pods feel: the common line -> memory back, as the probe in the
 * Guaranteed pod saw it), the mechanism table (each contender's reaction from its own line),
 * the ratio of evictd to the best peer on the headline with a bootstrap interval, and the SVG:
 * the headline per rate (median and 95% interval, log scale, "not stopped" in a band of its
 * own) and the protected pod's worst stall.
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

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const COLORS: Record<string, string> = {
  evictd: '#1b9e77',
  'evictd-poll': '#66a61e',
  'evictd-pageable': '#a6d854',
  'evictd-noreap': '#1f78b4',
  'evictd-base': '#a6cee3',
  kubelet: '#e7298a',
  earlyoom: '#d95f02',
  nohang: '#7570b3',
  oomd: '#e6ab02',
  'systemd-oomd': '#a6761d',
  kernel: '#666666',
};

/** A marker of its own per contender (k-th), so equal colours or overlaps still tell them apart. */
function marker(k: number, x: number, y: number, color: string, title: string): string {
  const t = `<title>${escapeXml(title)}</title>`;
  const r = 5;
  const f = (n: number) => n.toFixed(1);
  switch (k % 6) {
    case 0:
      return `<circle cx="${f(x)}" cy="${f(y)}" r="${r}" fill="${color}">${t}</circle>`;
    case 1:
      return `<rect x="${f(x - r)}" y="${f(y - r)}" width="${2 * r}" height="${2 * r}" fill="${color}">${t}</rect>`;
    case 2:
      return `<polygon points="${f(x)},${f(y - r - 1)} ${f(x + r + 1)},${f(y + r)} ${f(x - r - 1)},${f(y + r)}" fill="${color}">${t}</polygon>`;
    case 3:
      return `<polygon points="${f(x)},${f(y - r - 1)} ${f(x + r + 1)},${f(y)} ${f(x)},${f(y + r + 1)} ${f(x - r - 1)},${f(y)}" fill="${color}">${t}</polygon>`;
    case 4:
      return `<polygon points="${f(x - r)},${f(y - r)} ${f(x + r)},${f(y - r)} ${f(x)},${f(y + r + 1)}" fill="${color}">${t}</polygon>`;
    default:
      return `<circle cx="${f(x)}" cy="${f(y)}" r="${r}" fill="white" stroke="${color}" stroke-width="2.5">${t}</circle>`;
  }
}

/**
 * Two panels, rate on x (reached, asked, real-node beneath), log scale: the headline (common
 * line -> memory back, median and 95% interval) with a band above the axis for "not stopped"
 * (+Infinity: the kernel or nobody stopped the hog), and the protected pod's worst stall. Every
 * contender has its own offset and marker.
 */
export function svg(cells: Cell[], contenders: string[], rates: number[], title: string, scale: number): string {
  const W = 1000;
  const H = 470;
  const panelW = 400;
  const band = 34;
  const top = 60 + band;
  const plotH = 260;
  const parts: string[] = [];
  const text = (x: number, y: number, s: string, extra = '', size = 12) =>
    parts.push(`<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-family="sans-serif" font-size="${size}" ${extra}>${s}</text>`);
  // The title names the machine and the run: wrapped at spaces to stay inside the picture.
  const titleLines: string[] = [''];
  for (const word of title.split(' ')) {
    const last = titleLines.length - 1;
    if (titleLines[last]!.length + word.length + 1 > 150) titleLines.push(word);
    else titleLines[last] = titleLines[last] ? `${titleLines[last]} ${word}` : word;
  }
  titleLines.slice(0, 2).forEach((l, i) => text(20, 16 + i * 14, escapeXml(l), i === 0 ? 'font-weight="bold"' : '', 10));
  const xOf = (x0: number, i: number) => x0 + (rates.length === 1 ? panelW / 2 : 80 + (i * (panelW - 160)) / (rates.length - 1));
  const step = Math.min(14, (panelW / Math.max(1, rates.length) - 20) / Math.max(1, contenders.length));
  const offset = (k: number) => (k - (contenders.length - 1) / 2) * step;
  // Log scale from 0.1 ms to 100 s; at or below 0.1 ms (or before the line) on the floor.
  const decades = 6;
  const yOf = (ms: number): number => (ms === Infinity ? top - band / 2 : top + plotH - (ms <= 0.1 ? 0 : Math.min(1, Math.log10(ms / 0.1) / decades)) * plotH);
  const ticks: [number, string][] = [
    [0.1, '≤0.1 ms'],
    [1, '1 ms'],
    [10, '10 ms'],
    [100, '100 ms'],
    [1000, '1 s'],
    [10000, '10 s'],
    [100000, '100 s'],
  ];
  const panel = (x0: number, heading: string, pick: (c: Cell) => MedianSummary | null | undefined, withBand: boolean) => {
    text(x0, 50, escapeXml(heading), 'font-weight="bold"');
    if (withBand) {
      parts.push(`<rect x="${x0}" y="${top - band}" width="${panelW}" height="${band - 6}" fill="#f3e3e3"/>`);
      text(x0 - 6, top - band / 2 + 4, 'not stopped', 'text-anchor="end" fill="#a33"', 10);
    }
    for (const [t, name] of ticks) {
      const y = yOf(t);
      parts.push(`<line x1="${x0}" y1="${y}" x2="${x0 + panelW}" y2="${y}" stroke="#ddd"/>`);
      text(x0 - 6, y + 4, name, 'text-anchor="end"', 10);
    }
    rates.forEach((rate, i) => {
      const reached = cells.filter((c) => c.rateMiBs === rate && !c.notRun && c.reachedRateMiBs !== null).map((c) => c.reachedRateMiBs!);
      const r = reached.length ? Math.round(reached.sort((a, b) => a - b)[reached.length >> 1]!) : null;
      text(xOf(x0, i), top + plotH + 16, `${r ?? '-'} MiB/s reached`, 'text-anchor="middle"', 11);
      text(xOf(x0, i), top + plotH + 30, `(${rate} asked; ≈${Math.round((r ?? rate) * scale)} real node)`, 'text-anchor="middle" fill="#777"', 10);
    });
    contenders.forEach((name, k) => {
      const color = COLORS[name] ?? '#000';
      rates.forEach((rate, i) => {
        const c = cells.find((x) => x.contender === name && x.rateMiBs === rate);
        const s = c && !c.notRun ? pick(c) : null;
        if (!s) return;
        const x = xOf(x0, i) + offset(k);
        if (s.lo !== null && s.hi !== null)
          parts.push(
            `<line x1="${x.toFixed(1)}" y1="${yOf(s.lo).toFixed(1)}" x2="${x.toFixed(1)}" y2="${yOf(s.hi).toFixed(1)}" stroke="${color}" stroke-width="1.5"/>`,
          );
        parts.push(
          marker(
            k,
            x,
            yOf(s.median),
            color,
            `${name}, ${c!.reachedRateMiBs} MiB/s reached (${rate} asked): ${formatSummary(s)} ms, ${c!.stopped}/${c!.trials} stopped`,
          ),
        );
      });
    });
    parts.push(`<line x1="${x0}" y1="${top + plotH}" x2="${x0 + panelW}" y2="${top + plotH}" stroke="#333"/>`);
  };
  panel(90, 'common line -> memory back (probe), median and 95% CI (log)', (c) => c.headline, true);
  panel(W - panelW - 40, "protected pod's worst stall, median and 95% CI (log)", (c) => c.worstStall, false);
  contenders.forEach((name, i) => {
    const x = 60 + (i % 8) * 115;
    const y = H - 40 + Math.floor(i / 8) * 18;
    const notRun = cells.some((c) => c.contender === name && c.notRun);
    parts.push(marker(i, x + 6, y - 4, COLORS[name] ?? '#000', name));
    text(x + 18, y, notRun ? `${name} (not run)` : name, '', 11);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`;
}

/** JSON.stringify with the infinities spelled out (JSON has no Infinity: it would print null). */
export function toJson(x: unknown): string {
  return JSON.stringify(x, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v === -Infinity ? '-Infinity' : typeof v === 'bigint' ? String(v) : v));
}
