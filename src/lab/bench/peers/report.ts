/**
 * The results of `bench protect --peers`: one cell per contender and rate, the table printed on
 * stdout (and in docs/benchmarks.md), the ratio of evictd to the best peer, and the SVG: rate on
 * x, two panels (share stopped before any kernel OOM kill; reaction p50, log scale), one series
 * per contender, in the style of `bench protect`.
 */
import { percentile, round } from '../../stats';
import type { Trial } from './trial';

export interface Cell {
  contender: string;
  rateMiBs: number;
  /** the rate the hog reached, median of the trials */
  labRateMiBs: number | null;
  /** the real-node rate this row stands for: the same time from the line to the end of memory */
  realRateMiBs: number | null;
  trials: number;
  stopped: number;
  oomKills: number;
  protectedLost: number;
  reactionP50Ms: number | null;
  reactionP99Ms: number | null;
  availableAtKillP50MiB: number | null;
  via: string;
  /** the highest memory PSI some avg10 (%) in any of the trials (see Trial) */
  psiSomeAvg10Max?: number | null;
  notRun?: string;
}

export function cellOf(contender: string, rate: number, ts: Trial[], scale: number): Cell {
  const labRate = percentile(ts.flatMap((t) => (t.measuredRateMiBs === null ? [] : [t.measuredRateMiBs])), 50);
  const stoppedTs = ts.filter((t) => t.outcome === 'stopped');
  // The reaction of the contender: only ramps it stopped (a kernel kill is the kernel's time).
  const reactions = (contender === 'kernel' ? ts : stoppedTs).flatMap((t) => (t.reactionMs === null ? [] : [t.reactionMs]));
  const avail = (contender === 'kernel' ? ts : stoppedTs).flatMap((t) => (t.availableAtKillMiB === null ? [] : [t.availableAtKillMiB]));
  return {
    contender,
    rateMiBs: rate,
    labRateMiBs: round(labRate, 0),
    realRateMiBs: labRate === null ? null : round(labRate * scale, 0),
    trials: ts.length,
    stopped: stoppedTs.length,
    oomKills: ts.reduce((s, t) => s + t.oomKills, 0),
    protectedLost: ts.reduce((s, t) => s + t.protectedLost.length, 0),
    reactionP50Ms: round(percentile(reactions, 50), 0),
    reactionP99Ms: round(percentile(reactions, 99), 0),
    availableAtKillP50MiB: round(percentile(avail, 50), 0),
    via: [...new Set(ts.map((t) => t.via))].join('/'),
    psiSomeAvg10Max: ts.some((t) => t.psiSomeAvg10Max !== null) ? Math.max(...ts.map((t) => t.psiSomeAvg10Max ?? 0)) : null,
  };
}

export function notRunCell(contender: string, rate: number, reason: string): Cell {
  return { contender, rateMiBs: rate, labRateMiBs: null, realRateMiBs: null, trials: 0, stopped: 0, oomKills: 0, protectedLost: 0, reactionP50Ms: null, reactionP99Ms: null, availableAtKillP50MiB: null, via: '-', notRun: reason };
}

const EVICTD_ROWS = ['evictd', 'evictd-poll'];

/** Per rate: evictd's best row against the best peer (most stopped, then fastest p50). */
export function ratios(cells: Cell[], rates: number[]): { rateMiBs: number; evictd: Cell | null; peer: Cell | null; text: string }[] {
  const better = (a: Cell, b: Cell): Cell => (a.stopped / Math.max(1, a.trials) !== b.stopped / Math.max(1, b.trials) ? (a.stopped / Math.max(1, a.trials) > b.stopped / Math.max(1, b.trials) ? a : b) : (a.reactionP50Ms ?? Infinity) <= (b.reactionP50Ms ?? Infinity) ? a : b);
  return rates.map((rate) => {
    const here = cells.filter((c) => c.rateMiBs === rate && !c.notRun && c.trials > 0);
    const ours = here.filter((c) => EVICTD_ROWS.includes(c.contender));
    const peers = here.filter((c) => !EVICTD_ROWS.includes(c.contender));
    const e = ours.length ? ours.reduce(better) : null;
    const p = peers.length ? peers.reduce(better) : null;
    let text = 'no comparison';
    if (e && p) {
      const share = (c: Cell) => `${c.stopped}/${c.trials}`;
      let speed = '';
      if (e.reactionP50Ms !== null && p.reactionP50Ms !== null && e.reactionP50Ms > 0 && p.reactionP50Ms > 0) {
        const r = p.reactionP50Ms / e.reactionP50Ms;
        speed = `, reaction p50 ${e.reactionP50Ms} vs ${p.reactionP50Ms} ms (${r >= 1 ? `evictd ${round(r, 1)}x faster` : `evictd ${round(1 / r, 1)}x slower`})`;
      }
      text = `${e.contender} ${share(e)} vs best peer ${p.contender} ${share(p)}${speed}`;
    }
    return { rateMiBs: rate, evictd: e, peer: p, text };
  });
}

export function renderTable(cells: Cell[]): string {
  const head = ['contender', 'lab MiB/s (asked)', 'real-node MiB/s', 'stopped before OOM', 'protected lost', 'kernel OOM kills', 'reaction p50/p99 ms', 'MemAvailable at kill MiB', 'stop'];
  const rows = cells.map((c) =>
    c.notRun
      ? [c.contender, `(${c.rateMiBs})`, '-', `not run: ${c.notRun}`, '', '', '', '', '']
      : [
          c.contender,
          `${c.labRateMiBs ?? '-'} (${c.rateMiBs})`,
          String(c.realRateMiBs ?? '-'),
          `${c.stopped}/${c.trials}`,
          String(c.protectedLost),
          String(c.oomKills),
          c.reactionP50Ms === null ? '-' : `${c.reactionP50Ms}/${c.reactionP99Ms}${c.contender === 'kernel' ? ' (kernel)' : ''}`,
          String(c.availableAtKillP50MiB ?? '-'),
          c.via,
        ],
  );
  const widths = head.map((h, i) => Math.max(h.length, ...rows.filter((r) => !r[3]!.startsWith('not run')).map((r) => r[i]!.length)));
  const line = (cols: string[]) => (cols[3]!.startsWith('not run') ? `${cols[0]!.padEnd(widths[0]!)} | ${cols[1]!.padEnd(widths[1]!)} | ${cols[3]}` : cols.map((c, i) => c.padEnd(widths[i]!)).join(' | '));
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map(line)].join('\n');
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const COLORS: Record<string, string> = { evictd: '#1b9e77', 'evictd-poll': '#66a61e', kubelet: '#e7298a', earlyoom: '#d95f02', nohang: '#7570b3', oomd: '#e6ab02', 'systemd-oomd': '#a6761d', kernel: '#666666' };

/** Two panels, rate (lab MiB/s measured, real-node rate beneath) on x, one line per contender. */
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
  const panel = (x0: number, heading: string, ticks: [number, string][], value: (c: Cell) => number | null, label: (c: Cell) => string) => {
    text(x0, 46, escapeXml(heading), 'font-weight="bold"');
    for (const [t, name] of ticks) {
      const y = top + plotH - t * plotH;
      parts.push(`<line x1="${x0}" y1="${y}" x2="${x0 + panelW}" y2="${y}" stroke="#ddd"/>`);
      text(x0 - 6, y + 4, name, 'text-anchor="end"', 10);
    }
    // The asked rate: each contender's measured rate is in the table (and in each point's title).
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
        const x = xOf(x0, i) + (k - contenders.length / 2) * 2;
        const y = top + plotH - v * plotH;
        pts.push(`${x.toFixed(1)},${y.toFixed(1)}`);
        parts.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="4" fill="${COLORS[name] ?? '#000'}"><title>${escapeXml(`${name} ${rate} MiB/s asked, ${c!.labRateMiBs} measured: ${label(c!)}`)}</title></circle>`);
      });
      if (pts.length > 1) parts.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${COLORS[name] ?? '#000'}" stroke-width="2"/>`);
    });
    parts.push(`<line x1="${x0}" y1="${top + plotH}" x2="${x0 + panelW}" y2="${top + plotH}" stroke="#333"/>`);
  };
  panel(
    60,
    'hog stopped before any kernel OOM kill',
    [[0, '0%'], [0.25, '25%'], [0.5, '50%'], [0.75, '75%'], [1, '100%']],
    (c) => (c.trials ? c.stopped / c.trials : null),
    (c) => `${c.stopped}/${c.trials} stopped, ${c.protectedLost} protected lost, ${c.via}`,
  );
  const logScale = (ms: number) => Math.min(1, Math.max(0, Math.log10(Math.max(ms, 1)) / 4));
  panel(
    W - panelW - 40,
    'reaction p50, line crossed -> kill (log)',
    [[0, '1 ms'], [0.25, '10 ms'], [0.5, '100 ms'], [0.75, '1 s'], [1, '10 s']],
    (c) => (c.reactionP50Ms === null ? null : logScale(c.reactionP50Ms)),
    (c) => `p50 ${c.reactionP50Ms} ms, p99 ${c.reactionP99Ms} ms`,
  );
  contenders.forEach((name, i) => {
    const x = 60 + (i % 8) * 110;
    const notRun = cells.some((c) => c.contender === name && c.notRun);
    parts.push(`<rect x="${x}" y="${H - 40}" width="12" height="12" fill="${COLORS[name] ?? '#000'}"/>`);
    text(x + 18, H - 30, notRun ? `${name} (not run)` : name, '', 11);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`;
}
