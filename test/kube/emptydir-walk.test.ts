/**
 * A tenant's emptyDir at its worst for the walk (issue 33): 10^6 names in one directory, 400,000
 * of them hard links, measured the way the agent measures (src/node/volumes.ts diskUsage) in a
 * process of its own, whose memory and event loop are watched while it walks. A pass runs on that
 * loop, so a stall there is a pass late. On a tmpfs of its own when root (a disk otherwise).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const FILES = 600_000;
const LINKS = 400_000;
const volumes = path.resolve(__dirname, '..', '..', 'src', 'node', 'volumes.js');

/** The walk in a child: its result, its RSS before and at peak (sampled every 10 ms, and the kernel's maxRSS), its loop's longest lag. */
const child = `
const { diskUsage } = require(${JSON.stringify(volumes)});
const dir = process.argv[1];
const rss0 = process.memoryUsage().rss;
let peak = rss0, lag = 0, last = performance.now();
const tick = setInterval(() => {
  const now = performance.now();
  lag = Math.max(lag, now - last - 10);
  last = now;
  peak = Math.max(peak, process.memoryUsage().rss);
}, 10);
const t0 = performance.now();
diskUsage(dir).then((u) => {
  clearInterval(tick);
  const ms = performance.now() - t0;
  process.stdout.write(JSON.stringify({ u, rss0: rss0 / 1048576, peak: Math.max(peak, process.resourceUsage().maxRSS * 1024) / 1048576, lagMs: lag, ms }));
});
`;

test('10^6 entries with 400,000 hard links: the walk stays bounded in memory, never stalls its loop, and says where it stopped', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-emptydir-'));
  let mounted = false;
  if (process.geteuid?.() === 0) {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=64m,nr_inodes=${FILES + LINKS + 1000}`, 'evictd-emptydir', dir]);
    mounted = true;
  }
  t.after(() => {
    if (mounted) execFileSync('umount', [dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  // Empty files: what is measured is the walk, not the bytes.
  for (let i = 0; i < FILES; i++) fs.closeSync(fs.openSync(path.join(dir, `f${i}`), 'w'));
  for (let i = 0; i < LINKS; i++) fs.linkSync(path.join(dir, `f${i}`), path.join(dir, `l${i}`));
  const r = spawnSync(process.execPath, ['-e', child, dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { u: { bytes: number; inodes: number; partial?: string }; rss0: number; peak: number; lagMs: number; ms: number };
  t.diagnostic(
    `walk of ${FILES + LINKS} entries: ${Math.round(out.ms)} ms, RSS ${out.rss0.toFixed(1)} -> peak ${out.peak.toFixed(1)} MiB, longest loop lag ${out.lagMs.toFixed(1)} ms, ${JSON.stringify(out.u)}`,
  );
  // 400,000 linked inodes are more than the walk remembers (262,144): it stops counting the
  // ones it cannot remember, and says so; what it counted is a lower bound.
  assert.equal(out.u.partial, 'links');
  assert.ok(out.u.inodes <= 1 + FILES && out.u.inodes >= 1 + FILES - LINKS, `inodes ${out.u.inodes}`);
  // The old walk (a whole readdir, every linked inode a string key) grew by 108 MiB on 400,000
  // entries; the DaemonSet's limit is 256 MiB for the whole agent.
  assert.ok(out.peak - out.rss0 < 48, `the walk grew the process by ${(out.peak - out.rss0).toFixed(1)} MiB`);
  assert.ok(out.lagMs < 250, `the loop stalled ${out.lagMs.toFixed(1)} ms`);
});
