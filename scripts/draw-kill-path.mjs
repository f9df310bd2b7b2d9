// Draws docs/kill-path.svg: the way from a line's crossing to a kill on cgroup v2 (a standing
// order on the tripwire), one lane per place it runs, time downwards. Plain SVG, no fonts or
// scripts to fetch, so GitHub and an offline copy show the same. Run after changing a step:
//   node scripts/draw-kill-path.mjs            (writes docs/kill-path.svg)
//   node scripts/draw-kill-path.mjs --check    (exit 1 when the file differs: the package suite)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const out = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'kill-path.svg');

const LANES = [
  { title: 'kernel', sub: 'the pod charging memory' },
  { title: 'addon order thread', sub: 'SCHED_FIFO with --realtime-priority' },
  { title: 'JS loop', sub: 'passes, normal priority' },
  { title: 'runtime and API', sub: 'containerd or CRI-O, kube-apiserver' },
];
const LANE_W = 270;
const GAP = 20;
const TOP = 78;
const ROW_H = 74;
const BOX_H = 56;

// [lane, row, lines, kind]: kind 'kill' marks the kill itself, 'spare' the way that kills nobody.
const STEPS = [
  [2, 0, ['a pass ranks the pods as the kubelet', 'does and, near the line, places a', 'standing order: who, which line, 1 s TTL'], 'js'],
  [0, 1, ['a page charged: the BPF program', '(fexit on page_counter charging)', "finds the kubelet's number past the line"], 'kernel'],
  [1, 2, ['woken through a ring buffer:', 'reads memory.stat fresh and', "computes the kubelet's number again"], 'thread'],
  [2, 3, ['not past the line on the fresh', 'numbers (page cache, a stale', 'statistic): no kill, the pass decides'], 'spare'],
  [1, 4, ['past it: writes "1" to the', "victim's cgroup.kill at once", '(1-6 ms after the crossing)'], 'kill'],
  [0, 5, ['every task of the pod SIGKILLed;', 'process_mrelease on each frees', 'its memory as the kill lands'], 'kernel'],
  [2, 6, ['the use reaches the loop:', 'a pass confirms it'], 'js'],
  [3, 6, ['StopPodSandbox, grace 0, in the', 'background: tried again until it', 'lands, a runtime outage included'], 'api'],
  [2, 7, ["the pod's memory back (cgroup", 'events, then a sparse poll):', 'the eviction is reported'], 'js'],
  [3, 7, ['pod status Failed/Evicted, the', 'Evicted and EvictionThresholdMet', 'events: retried while evictd lives'], 'api'],
];
// [from step, to step, label]
const ARROWS = [
  [0, 1, 'order in a BPF map'],
  [1, 2, 'crossing'],
  [2, 3, 'below'],
  [2, 4, 'past'],
  [4, 5, 'cgroup.kill'],
  [4, 6, 'use reported'],
  [6, 7, 'at once'],
  [6, 8, 'waits'],
  [8, 9, 'report'],
];

const COLORS = {
  kernel: ['#e8f0fb', '#3d6db5'],
  thread: ['#fdf1e3', '#c8771e'],
  js: ['#eaf6ec', '#3a8a4a'],
  api: ['#f1ecf8', '#7452a8'],
  kill: ['#fde8e8', '#c0392b'],
  spare: ['#f4f4f4', '#777777'],
};

const width = LANES.length * LANE_W + (LANES.length + 1) * GAP;
const ROWS = Math.max(...STEPS.map((st) => st[1])) + 1;
const height = TOP + ROWS * ROW_H + 40;
const laneX = (i) => GAP + i * (LANE_W + GAP);
const box = ([lane, row]) => ({ x: laneX(lane) + 10, y: TOP + row * ROW_H, w: LANE_W - 20, h: BOX_H });
const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const parts = [];
parts.push(
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`,
  '<title>From a crossing to a kill: a standing order on the cgroup v2 tripwire</title>',
  '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>',
  `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
  `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">From a crossing to a kill: a standing order on the cgroup v2 tripwire</text>`,
);
LANES.forEach((l, i) => {
  const x = laneX(i);
  parts.push(
    `<rect x="${x}" y="36" width="${LANE_W}" height="${height - 72}" rx="6" fill="#fafafa" stroke="#dddddd"/>`,
    `<text x="${x + LANE_W / 2}" y="52" text-anchor="middle" font-weight="bold">${esc(l.title)}</text>`,
    `<text x="${x + LANE_W / 2}" y="67" text-anchor="middle" fill="#555" font-size="11">${esc(l.sub)}</text>`,
  );
});
// Arrows first, so boxes cover their ends.
for (const [from, to, label] of ARROWS) {
  const a = box(STEPS[from]);
  const b = box(STEPS[to]);
  let x1, y1, x2, y2;
  if (STEPS[from][0] === STEPS[to][0]) {
    [x1, y1, x2, y2] = [a.x + a.w / 2, a.y + a.h, b.x + b.w / 2, b.y];
  } else {
    const right = STEPS[to][0] > STEPS[from][0];
    [x1, y1] = [right ? a.x + a.w : a.x, a.y + a.h / 2];
    [x2, y2] = [right ? b.x : b.x + b.w, b.y + b.h / 2];
  }
  parts.push(`<line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" stroke="#444" stroke-width="1.4" marker-end="url(#arrow)"/>`);
  if (label) {
    const lx = (x1 + x2) / 2;
    // Beside a steep line rather than on it; above a flat one.
    const steep = Math.abs(x2 - x1) < Math.abs(y2 - y1);
    const ly = (y1 + y2) / 2 + (steep ? 4 : -5);
    parts.push(
      `<text x="${steep ? lx + 6 : lx}" y="${ly}" text-anchor="${steep ? 'start' : 'middle'}" font-size="11" fill="#333" stroke="#ffffff" stroke-width="3" paint-order="stroke">${esc(label)}</text>`,
    );
  }
}
for (const step of STEPS) {
  const b = box(step);
  const [fill, stroke] = COLORS[step[3]];
  const dash = step[3] === 'spare' ? ' stroke-dasharray="4 3"' : '';
  parts.push(`<rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="5" fill="${fill}" stroke="${stroke}" stroke-width="1.5"${dash}/>`);
  const lines = step[2];
  const first = b.y + b.h / 2 - ((lines.length - 1) * 15) / 2 + 4;
  lines.forEach((t, i) => parts.push(`<text x="${b.x + b.w / 2}" y="${first + i * 15}" text-anchor="middle">${esc(t)}</text>`));
}
parts.push(
  `<text x="${GAP}" y="${height - 12}" font-size="11" fill="#555">On cgroup v1 the memcg threshold eventfd wakes the same thread; without a standing order (far from the line, soft thresholds) the pass kills or stops the pod itself.</text>`,
  '</svg>',
);
const svg = parts.join('\n') + '\n';

if (process.argv.includes('--check')) {
  const have = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
  if (have !== svg) {
    process.stderr.write(`${path.relative(process.cwd(), out)} is not what scripts/draw-kill-path.mjs draws: run it\n`);
    process.exit(1);
  }
} else {
  fs.writeFileSync(out, svg);
  process.stdout.write(`wrote ${path.relative(process.cwd(), out)} (${width}x${height})\n`);
}
