/**
 * The picture of `bench protect --peers`: the headline per rate (median and 95% interval, log
 * scale, "not stopped" in a band of its own) and the protected pod's worst stall, as SVG.
 */
import type { MedianSummary } from './median-interval';
import { formatSummary, type Cell } from './report';
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
