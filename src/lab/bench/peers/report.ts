/**
 * The results of `bench protect --peers`: one cell per contender and rate, the tables printed on
 * stdout (and in docs/benchmarks.md), the ratio of evictd to the best peer from each one's own
 * line, and the SVG: rate on x, two panels (share stopped before any kernel OOM kill; reaction
 * from the own line, median with its 95% interval, log scale), one series per contender.
 */
import { round } from '../../stats';
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
  rssMiB: number | null;
  /** the contender's major page faults during a ramp, median and most (see Trial); absent in runs before they were counted */
  majorFaults?: { median: number; max: number } | null;
  /** the tasks that sent the first kill, by name */
  senders: string;
  via: string;
  /** the highest memory PSI some avg10 (%) in any of the trials (see Trial) */
  psiSomeAvg10Max?: number | null;
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
    rssMiB: round(med(ts.map((t) => t.contenderRssMiB)), 0),
    majorFaults: faultsOf(ts),
    senders: [...new Set(ts.flatMap((t) => (t.kill ? [`${t.kill.by} (${t.kill.sig === 9 ? 'KILL' : 'TERM'})`] : [])))].join(', ') || '-',
    via: [...new Set(ts.map((t) => t.via))].join('/'),
    psiSomeAvg10Max: ts.some((t) => t.psiSomeAvg10Max !== null) ? Math.max(...ts.map((t) => t.psiSomeAvg10Max ?? 0)) : null,
  };
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

/** "median [lo, hi] / p95", the interval omitted when the trials are too few for 95%. */
export function formatSummary(s: MedianSummary | null): string {
  if (!s) return '-';
  const ci = s.lo === null ? ' [n<6]' : ` [${formatMs(s.lo)}, ${formatMs(s.hi)}]`;
  return `${formatMs(s.median)}${ci} / ${formatMs(s.p95)}`;
}

/** The contenders evictd is compared with: not evictd's own rows, not the kernel alone. */
const NOT_PEERS = ['evictd', 'evictd-poll', 'evictd-pageable', 'kernel'];

export interface Ratio {
  rateMiBs: number;
  evictd: Cell | null;
  peer: Cell | null;
  /** best peer's own-line median / evictd's own-line median; null when either is not a positive finite number */
  own: number | null;
  common: number | null;
  /** evictd's own-line p95 is below the best peer's own-line median */
  p95BelowPeerMedian: boolean | null;
  text: string;
}

const share = (c: Cell) => c.stopped / Math.max(1, c.trials);
const ownMedian = (c: Cell) => c.own?.median ?? Infinity;

/** x / y when both are positive and finite. */
function ratioOf(peer: number | undefined, ours: number | undefined): number | null {
  if (peer === undefined || ours === undefined || !Number.isFinite(peer) || !Number.isFinite(ours) || peer <= 0 || ours <= 0) return null;
  return peer / ours;
}

function says(r: number | null, what: string): string {
  if (r === null) return `${what}: no ratio (a median is not a positive number of ms)`;
  return `${what}: evictd ${r >= 1 ? `${round(r, 1)}x faster` : `${round(1 / r, 1)}x slower`}`;
}

/**
 * Per rate: the row `evictd` (as users run it; no best-of across modes) against the best peer
 * (most hogs stopped before the kernel, then the lowest median from its own line).
 */
export function ratios(cells: Cell[], rates: number[]): Ratio[] {
  return rates.map((rate) => {
    const here = cells.filter((c) => c.rateMiBs === rate && !c.notRun && c.trials > 0);
    const e = here.find((c) => c.contender === 'evictd') ?? null;
    const peers = here.filter((c) => !NOT_PEERS.includes(c.contender));
    const p = peers.length ? peers.reduce((a, b) => (share(a) !== share(b) ? (share(a) > share(b) ? a : b) : ownMedian(a) <= ownMedian(b) ? a : b)) : null;
    if (!e || !p) return { rateMiBs: rate, evictd: e, peer: p, own: null, common: null, p95BelowPeerMedian: null, text: 'no comparison (evictd or every peer not run)' };
    const own = ratioOf(p.own?.median, e.own?.median);
    const common = ratioOf(p.common?.median, e.common?.median);
    const p95Below = e.own && p.own ? e.own.p95 < p.own.median : null;
    const text =
      `evictd ${e.stopped}/${e.trials} stopped vs best peer ${p.contender} ${p.stopped}/${p.trials}; ` +
      `own line: ${formatSummary(e.own)} vs ${formatSummary(p.own)} ms (${says(own, 'median')}); ` +
      `common line: ${formatMs(e.common?.median ?? null)} vs ${formatMs(p.common?.median ?? null)} ms (${says(common, 'median')}); ` +
      `evictd's p95 ${p95Below === null ? '-' : p95Below ? 'below' : 'NOT below'} ${p.contender}'s median`;
    return { rateMiBs: rate, evictd: e, peer: p, own, common, p95BelowPeerMedian: p95Below, text };
  });
}

function renderRows(head: string[], rows: string[][], notRun: (i: number) => string | undefined): string {
  const measured = rows.filter((_, i) => notRun(i) === undefined);
  const widths = head.map((h, i) => Math.max(h.length, ...measured.map((r) => r[i]!.length)));
  const line = (cols: string[], i: number) => {
    const why = i >= 0 ? notRun(i) : undefined;
    return why !== undefined ? `${cols[0]!.padEnd(widths[0]!)} | ${cols[1]!.padEnd(widths[1]!)} | not run: ${why}` : cols.map((c, k) => c.padEnd(widths[k]!)).join(' | ');
  };
  return [line(head, -1), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map((r, i) => line(r, i))].join('\n');
}

/** The race: who stopped the hog, how soon from its own line and from the common one, what was left. */
export function renderTable(cells: Cell[]): string {
  const head = ['contender', 'MiB/s reached (asked)', 'real-node MiB/s', 'stopped before OOM', 'protected lost', 'kernel OOM kills', 'own line', 'own-line reaction ms: median [95% CI] / p95', 'common-line reaction ms', 'MemAvailable / memory.available at kill MiB', 'stop', 'first kill sent by'];
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
  const head = ['contender', 'MiB/s asked', 'own line crossed before the common one, ms (median)', 'crossing chunk touch + read, ms (median)', 'own crossings inferred', 'acted before its line', 'kill sent -> hog exited, ms (median)', 'contender RSS MiB', 'contender major faults per ramp (median / most)', 'PSI some avg10 max %'];
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

const COLORS: Record<string, string> = { evictd: '#1b9e77', 'evictd-poll': '#66a61e', 'evictd-pageable': '#a6d854', kubelet: '#e7298a', earlyoom: '#d95f02', nohang: '#7570b3', oomd: '#e6ab02', 'systemd-oomd': '#a6761d', kernel: '#666666' };

/** Two panels, rate asked on x (real-node rate beneath), one line per contender. */
export function svg(cells: Cell[], contenders: string[], rates: number[], title: string, scale: number): string {
  const W = 960;
  const H = 420;
  const panelW = 380;
  const top = 60;
  const plotH = 240;
  const parts: string[] = [];
  const text = (x: number, y: number, s: string, extra = '', size = 12) =>
    parts.push(`<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-family="sans-serif" font-size="${size}" ${extra}>${s}</text>`);
  text(20, 22, escapeXml(title), 'font-weight="bold"', 12);
  const xOf = (x0: number, i: number) => x0 + (rates.length === 1 ? panelW / 2 : 20 + (i * (panelW - 40)) / (rates.length - 1));
  const panel = (x0: number, heading: string, ticks: [number, string][], value: (c: Cell) => [number, number | null, number | null] | null, label: (c: Cell) => string) => {
    text(x0, 46, escapeXml(heading), 'font-weight="bold"');
    for (const [t, name] of ticks) {
      const y = top + plotH - t * plotH;
      parts.push(`<line x1="${x0}" y1="${y}" x2="${x0 + panelW}" y2="${y}" stroke="#ddd"/>`);
      text(x0 - 6, y + 4, name, 'text-anchor="end"', 10);
    }
    rates.forEach((rate, i) => {
      text(xOf(x0, i), top + plotH + 16, `${rate} MiB/s asked`, 'text-anchor="middle"', 11);
      text(xOf(x0, i), top + plotH + 30, `≈${Math.round(rate * scale)} MiB/s real node`, 'text-anchor="middle" fill="#777"', 10);
    });
    contenders.forEach((name, k) => {
      const pts: string[] = [];
      rates.forEach((rate, i) => {
        const c = cells.find((x) => x.contender === name && x.rateMiBs === rate);
        const v = c && !c.notRun ? value(c) : null;
        if (v === null) return;
        // A small horizontal offset per contender keeps equal values from hiding each other.
        const x = xOf(x0, i) + (k - contenders.length / 2) * 3;
        const y = top + plotH - v[0] * plotH;
        const color = COLORS[name] ?? '#000';
        if (v[1] !== null && v[2] !== null) parts.push(`<line x1="${x.toFixed(1)}" y1="${(top + plotH - v[1] * plotH).toFixed(1)}" x2="${x.toFixed(1)}" y2="${(top + plotH - v[2] * plotH).toFixed(1)}" stroke="${color}" stroke-width="1.5"/>`);
        pts.push(`${x.toFixed(1)},${y.toFixed(1)}`);
        parts.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="4" fill="${color}"><title>${escapeXml(`${name} ${rate} MiB/s asked, ${c!.reachedRateMiBs} reached: ${label(c!)}`)}</title></circle>`);
      });
      if (pts.length > 1) parts.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${COLORS[name] ?? '#000'}" stroke-width="2"/>`);
    });
    parts.push(`<line x1="${x0}" y1="${top + plotH}" x2="${x0 + panelW}" y2="${top + plotH}" stroke="#333"/>`);
  };
  panel(
    60,
    'hog stopped before any kernel OOM kill',
    [[0, '0%'], [0.25, '25%'], [0.5, '50%'], [0.75, '75%'], [1, '100%']],
    (c) => (c.trials ? [c.stopped / c.trials, null, null] : null),
    (c) => `${c.stopped}/${c.trials} stopped, ${c.protectedLost} protected lost, ${c.via}`,
  );
  // Log scale from 0.1 ms to 10 s; a value at or below 0.1 ms (or before the line) sits on the
  // floor, "none" (no stop) on the ceiling; a median of "none" is not drawn.
  const logScale = (ms: number | null): number | null => (ms === null ? null : ms === Infinity ? 1 : ms <= 0.1 ? 0 : Math.min(1, Math.log10(ms / 0.1) / 5));
  panel(
    W - panelW - 40,
    'reaction from its own line, median and 95% CI (log)',
    [[0, '≤0.1 ms'], [0.2, '1 ms'], [0.4, '10 ms'], [0.6, '100 ms'], [0.8, '1 s'], [1, '10 s']],
    (c) => (!c.own || c.own.median === Infinity ? null : [logScale(c.own.median)!, logScale(c.own.lo), logScale(c.own.hi)]),
    (c) => `own line ${c.ownLine}: ${formatSummary(c.own)} ms`,
  );
  contenders.forEach((name, i) => {
    const x = 60 + (i % 8) * 110;
    const notRun = cells.some((c) => c.contender === name && c.notRun);
    parts.push(`<rect x="${x}" y="${H - 40}" width="12" height="12" fill="${COLORS[name] ?? '#000'}"/>`);
    text(x + 18, H - 30, notRun ? `${name} (not run)` : name, '', 11);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`;
}

/** JSON.stringify with the infinities spelled out (JSON has no Infinity: it would print null). */
export function toJson(x: unknown): string {
  return JSON.stringify(x, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v === -Infinity ? '-Infinity' : typeof v === 'bigint' ? String(v) : v));
}
