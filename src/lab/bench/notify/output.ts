/** What `evictd bench notify` prints: the table and the SVG histogram. */
import { nearestRank } from '../../stats';
import type { Series, Summary } from './stats';

export function table(rows: Summary[]): string {
  const head = ['mechanism', 'method', 'samples', 'p50', 'p90', 'p99', 'max'];
  const fmt = (us: number) =>
    Number.isNaN(us) ? '-' : us >= 10_000 ? `${(us / 1000).toFixed(0)} ms` : us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(0)} us`;
  const cells = rows.map((r) => [r.mechanism, r.method, String(r.samples), fmt(r.p50_us), fmt(r.p90_us), fmt(r.p99_us), fmt(r.max_us)]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => (i < 2 ? x.padEnd(widths[i]) : x.padStart(widths[i]))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** Log-scale latency histograms, one row per mechanism. */
export function histogramSvg(series: Series[], title: string): string {
  const W = 900;
  const rowH = 90;
  const left = 150;
  const right = 20;
  const top = 40;
  const plotW = W - left - right;
  const H = top + rowH * series.length + 50;
  const all = series.flatMap((s) => s.latenciesUs).filter((x) => x > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.max(1, Math.min(...all)))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...all, 10))));
  const decades = Math.log10(hi / lo);
  const binsPerDecade = 10;
  const bins = Math.max(1, Math.round(decades * binsPerDecade));
  const x = (us: number) => left + (Math.log10(us / lo) / decades) * plotW;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${title}</text>`);
  const colors = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d'];
  series.forEach((s, row) => {
    const y0 = top + row * rowH;
    const counts = new Array<number>(bins).fill(0);
    for (const v of s.latenciesUs) {
      const b = Math.min(bins - 1, Math.max(0, Math.floor((Math.log10(Math.max(v, lo)) - Math.log10(lo)) * binsPerDecade)));
      counts[b]++;
    }
    const peak = Math.max(1, ...counts);
    out.push(`<text x="${left - 8}" y="${y0 + rowH / 2}" text-anchor="end">${s.mechanism}</text>`);
    out.push(`<text x="${left - 8}" y="${y0 + rowH / 2 + 14}" text-anchor="end" fill="#666" font-size="10">${s.method}, n=${s.latenciesUs.length}</text>`);
    out.push(`<line x1="${left}" y1="${y0 + rowH - 10}" x2="${W - right}" y2="${y0 + rowH - 10}" stroke="#ccc"/>`);
    counts.forEach((c, b) => {
      if (c === 0) return;
      const bx = left + (b / bins) * plotW;
      const bh = (c / peak) * (rowH - 20);
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${(y0 + rowH - 10 - bh).toFixed(1)}" width="${(plotW / bins - 1).toFixed(1)}" height="${bh.toFixed(1)}" fill="${colors[row % colors.length]}"/>`,
      );
    });
    const sorted = [...s.latenciesUs].sort((a, b) => a - b);
    for (const [p, dash] of [
      [50, ''],
      [99, '4 3'],
    ] as const) {
      const v = nearestRank(sorted, p);
      if (!Number.isFinite(v) || v <= 0) continue;
      out.push(`<line x1="${x(v).toFixed(1)}" y1="${y0 + 8}" x2="${x(v).toFixed(1)}" y2="${y0 + rowH - 10}" stroke="black" stroke-dasharray="${dash}"/>`);
      out.push(`<text x="${(x(v) + 3).toFixed(1)}" y="${y0 + (p === 50 ? 16 : 28)}" font-size="10">p${p}</text>`);
    }
  });
  const axisY = top + rowH * series.length + 5;
  for (let d = 0; d <= decades; d++) {
    const v = lo * Math.pow(10, d);
    const label = v >= 1e6 ? `${v / 1e6} s` : v >= 1000 ? `${v / 1000} ms` : `${v} us`;
    out.push(`<line x1="${x(v).toFixed(1)}" y1="${top}" x2="${x(v).toFixed(1)}" y2="${axisY}" stroke="#eee"/>`);
    out.push(`<text x="${x(v).toFixed(1)}" y="${axisY + 15}" text-anchor="middle">${label}</text>`);
  }
  out.push(
    `<text x="${left + plotW / 2}" y="${axisY + 35}" text-anchor="middle">latency from the crossing to the JS callback (log scale); solid p50, dashed p99</text>`,
  );
  out.push('</svg>');
  return out.join('\n') + '\n';
}
