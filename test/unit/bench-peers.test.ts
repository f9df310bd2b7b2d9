import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { kubeletOomScoreAdj } from '../../src/lab/bench/peers/pods';
import {
  cellOf,
  formatMs,
  formatSummary,
  notRunCell,
  ratios,
  renderConditions,
  renderHeadline,
  renderTable,
  toJson,
  withMovedLine,
} from '../../src/lab/bench/peers/report';
import { svg } from '../../src/lab/bench/peers/chart';
import { parse } from '../../src/lab/bench/peers/options';
import { printReport, readSummary, type Summary } from '../../src/lab/bench/peers/summary';
import { nodeMeminfo } from '../../src/lab/bench/peers/readings';
import { nohangConfig } from '../../src/lab/bench/peers/nohang';
import { calibrationCheck, whatFavoursWhom } from '../../src/lab/bench/peers/fairness';
import type { Trial } from '../../src/lab/bench/peers/trial';
import { ContenderUnavailable, startDaemon, type ContenderContext } from '../../src/lab/bench/peers/contender';
import { UsageError } from '../../src/errors';
import { tempDir } from '../support/temp-dir';

const MiB = 1024 * 1024;

test("kubeletOomScoreAdj: the kubelet's values per QoS class (pkg/kubelet/qos/policy.go)", () => {
  assert.equal(kubeletOomScoreAdj('Guaranteed', 0, 1024 * MiB), -997);
  assert.equal(kubeletOomScoreAdj('BestEffort', 0, 1024 * MiB), 1000);
  assert.equal(kubeletOomScoreAdj('Burstable', 32 * MiB, 960 * MiB), 967);
  assert.equal(kubeletOomScoreAdj('Burstable', 1024 * MiB, 1024 * MiB), 3, 'never below 1000 + guaranteed');
  assert.equal(kubeletOomScoreAdj('Burstable', 0, 1024 * MiB), 999, 'never 1000, the BestEffort value');
});

const trial = (contender: string, outcome: Trial['outcome'], own: number | null, common: number | null, via: Trial['via']): Trial => ({
  contender,
  rateMiBs: 100,
  reachedRateMiBs: 90,
  outcome,
  oomKills: outcome === 'oom-killed' ? 1 : 0,
  ownReactionMs: own,
  commonReactionMs: common,
  ownInferred: false,
  windowMs: 2,
  ownLeadMs: contender === 'evictd' ? 5 : 0,
  kill: {
    sig: contender === 'earlyoom' ? 15 : 9,
    sender: `${contender === 'kernel' ? 'containerd' : contender}-42`,
    by: contender === 'kernel' ? 'kernel OOM killer (in containerd)' : contender,
  },
  exitAfterKillMs: 3,
  availableAtKillMiB: 20,
  kubeletAtKillMiB: 80,
  via,
  protectedLost: [],
  psiSomeAvg10Max: outcome === 'oom-killed' ? 7.5 : 1.25,
  contenderRssMiB: 40,
  contenderMajorFaults: contender === 'oomd' ? (own ?? 0) * 3 : 0,
  // memory back a fixed 4 ms after the common-line reaction; the exit 3 ms after
  commonToBackMs: common === null ? null : common + 4,
  commonToExitMs: common === null ? null : common + 3,
  worstStallMs: 12,
  minAvailableMiB: 20,
});

const many = (n: number, f: (i: number) => Trial) => Array.from({ length: n }, (_, i) => f(i));

test('report: medians with a 95% interval from 10 trials, the ratio from each own line, where evictd is and is not ahead', () => {
  const cells = [
    cellOf(
      'evictd',
      100,
      many(10, (i) => trial('evictd', 'stopped', i + 1, i + 3, 'CRI')),
      3.125,
    ),
    cellOf(
      'earlyoom',
      100,
      many(10, (i) => trial('earlyoom', 'stopped', 10 * (i + 1), 10 * (i + 1), 'bare kill')),
      3.125,
    ),
    cellOf(
      'oomd',
      100,
      many(10, (i) => trial('oomd', i < 4 ? 'oom-killed' : 'stopped', i < 4 ? Infinity : 1, 1, i < 4 ? 'kernel' : 'bare kill')),
      3.125,
    ),
    cellOf(
      'kernel',
      100,
      many(10, () => trial('kernel', 'oom-killed', 9000, 9000, 'kernel')),
      3.125,
    ),
    notRunCell('systemd-oomd', 100, 'needs systemd as PID 1'),
  ];
  const [e, early, oomd, kern] = cells;
  assert.equal(e!.own!.median, 5.5);
  assert.equal(e!.own!.lo, 2);
  assert.equal(e!.own!.hi, 9);
  assert.equal(e!.own!.p95, 10);
  assert.equal(e!.realRateMiBs, 281);
  assert.equal(oomd!.stopped, 6, 'oomd let the kernel kill 4 times');
  assert.equal(kern!.own!.median, 9000, "the kernel row's reaction is the kernel's kill");
  assert.equal(kern!.psiSomeAvg10Max, 7.5);
  assert.deepEqual(oomd!.majorFaults, { median: 3, max: 3 }, "finite faults only: the 4 OOM-killed trials' Infinity*3 are left out");
  assert.deepEqual(e!.majorFaults, { median: 0, max: 0 });
  const [r] = ratios(cells, [100]);
  assert.equal(r!.peer!.contender, 'earlyoom', 'the best peer stops the most hogs first: not oomd, whose median is lower');
  // evictd's headline: common + 4 = i + 7, median 11.5; earlyoom's 10 (i + 1) + 4, median 59
  assert.equal(e!.headline!.median, 11.5);
  assert.equal(r!.headline!.ratio, 59 / 11.5);
  assert.ok(r!.headline!.lo! > 1 && r!.headline!.hi! >= r!.headline!.ratio!, 'a bootstrap interval around the ratio, above 1');
  assert.equal(r!.loses, false);
  assert.match(
    r!.text,
    /^90 MiB\/s reached \(100 asked\): common line -> memory back, evictd 12 \[8\.0, 15\] \/ max 16 ms \(10\/10 stopped\) vs best peer earlyoom 59 \[24, 94\] \/ max 104 ms/,
  );
  assert.match(
    r!.text,
    /ratio earlyoom\/evictd 5\.13 \[[\d.]+, [\d.]+\] \(bootstrap 95%, 2000 reps, seed \d+\): evictd gives memory back 5\.13x sooner \(the whole interval above 1\)/,
  );
  // Where evictd is not ahead, the text says so.
  const slow = cellOf(
    'evictd',
    100,
    many(10, () => trial('evictd', 'stopped', 110, 110, 'CRI')),
    3.125,
  );
  const [s] = ratios([slow, early!], [100]);
  assert.match(s!.text, /evictd LOSES here: memory back 1\.93x later than earlyoom/);
  assert.equal(s!.loses, true);
  const beforeLine = cellOf(
    'evictd',
    100,
    many(10, (i) => ({ ...trial('evictd', 'stopped', 1, 1, 'CRI'), commonToBackMs: i < 7 ? -Infinity : 50 })),
    3.125,
  );
  const [b] = ratios([beforeLine, cells[1]!], [100]);
  assert.equal(b!.headline!.ratio, Infinity, '"<0" ranks as the soonest');
  assert.match(b!.text, /evictd ahead on rank only \(its median <0 against 59\): no finite ratio/);
  assert.match(b!.text, /killed before the hog's readings reached the common line \("<0", ranked soonest\): evictd 7\/10: its own line was crossed first/);
  assert.doesNotMatch(r!.text, /killed before/, 'said only when it happened');
  const close = cellOf(
    'evictd',
    100,
    many(10, (i) => trial('evictd', 'stopped', 10 * (i + 1) - 5, 10 * (i + 1) - 5, 'CRI')),
    3.125,
  );
  assert.match(ratios([close, early!], [100])[0]!.text, /the interval reaches 1: NOT shown ahead/);
  assert.equal(early!.senders, 'earlyoom (TERM)');
  assert.equal(kern!.senders, 'kernel OOM killer (in containerd) (KILL)');
  const table = renderTable(cells);
  assert.match(table, /systemd-oomd \| \(100\) +\| not run: needs systemd as PID 1/);
  assert.match(table, /oomd .*\| none \[1\.0, none\] \/ max none|oomd .*\| 1\.0 \[1\.0, none\] \/ max none/);
  const headline = renderHeadline(cells);
  assert.match(headline.split('\n')[0]!, /^MiB\/s reached \(asked\) \| contender/, 'the reached rate is the first column');
  assert.match(headline, /90 \(100\) +\| evictd +\| 281 +\| 10\/10 +\| 12 \[8\.0, 15\] \/ max 16 +\| 11 \[7\.0, 14\] \/ max 15 +\| 20 \/ 20 +\| 12 \/ 12/);
  assert.match(headline, /\(100\) +\| systemd-oomd \| not run/);
  assert.match(renderConditions(cells), /evictd +\| 100 +\| 5\.0 +\| 2\.0/);
  const picture = svg(cells, ['evictd', 'earlyoom', 'oomd', 'systemd-oomd', 'kernel'], [100], 'line MemAvailable < 32 MiB & more', 3.125);
  assert.match(picture, /MemAvailable &lt; 32 MiB &amp; more/);
  assert.doesNotMatch(picture.replace(/<\/?[a-z][^<>]*>/g, ''), /[<>]/, 'no raw < or > outside tags');
  assert.match(picture, /systemd-oomd \(not run\)/);
  assert.match(picture, />not stopped</, 'a band of its own for the hogs nobody stopped');
  assert.match(picture, /worst stall/);
  assert.match(picture, /<rect x="[\d.]+" y="[\d.]+" width="10" height="10" fill="#d95f02"><title>earlyoom/, 'each contender its own marker');
  assert.ok(
    whatFavoursWhom(cells).some((l) => /evictd 5\.0 ms/.test(l)),
    'the own-line lead, measured',
  );
});

test('formatMs and toJson: the infinities are spelled out, not lost', () => {
  assert.equal(formatMs(-Infinity), '<0');
  assert.equal(formatMs(Infinity), 'none');
  assert.equal(formatMs(3.14159), '3.1');
  assert.equal(formatMs(123.6), '124');
  assert.equal(toJson({ a: Infinity, b: -Infinity, c: 1n }), '{"a":"Infinity","b":"-Infinity","c":"1"}');
});

test('formatSummary: "max" instead of "p95" below 20 trials', () => {
  assert.match(
    formatSummary(
      cellOf(
        'evictd',
        1,
        many(19, (i) => trial('evictd', 'stopped', i, i, 'CRI')),
        1,
      ).own,
    ),
    / \/ max 18$/,
  );
  assert.match(
    formatSummary(
      cellOf(
        'evictd',
        1,
        many(20, (i) => trial('evictd', 'stopped', i, i, 'CRI')),
        1,
      ).own,
    ),
    / \/ p95 18$/,
  );
});

test('flags: 20 trials by default, --quick 1 unless --trials says otherwise, one evictd row, a bad value named', () => {
  const d = parse([], 1234);
  assert.equal(d.trials, 20);
  assert.equal(d.calibrationRamps, 8);
  assert.equal(d.warmUp, true);
  assert.equal(d.scheduling, 'tight');
  assert.equal(d.seed, 1234, 'the seed from the clock unless given');
  assert.equal(parse(['--seed', '7']).seed, 7);
  assert.equal(parse(['--scheduling=normal']).scheduling, 'normal');
  assert.throws(() => parse(['--scheduling', 'rt']), /--scheduling.*"rt".*tight or normal/);
  assert.equal(parse(['--trials', '6']).calibrationRamps, 4, 'a short run: 4 calibration ramps per cell');
  assert.equal(parse(['--quick']).warmUp, false, '--quick skips the warm-up');
  assert.equal(parse(['--quick']).trackLine, false, "a smoke run's line stays where the cell's calibration put it");
  assert.equal(d.trackLine, true, "evictd's line follows the cell's readings");
  assert.equal(parse(['--quick']).calibrationRamps, 1);
  assert.match(parse(['--logs', 'x/y']).logs, /x\/y$/);
  assert.deepEqual(d.rates, [50, 200]);
  assert.ok(!d.contenders.some((c) => c.name === 'evictd-poll'), 'evictd-poll only when named');
  assert.equal(parse(['--quick']).trials, 1);
  assert.equal(parse(['--trials', '4', '--quick']).trials, 4);
  assert.equal(parse(['--quick', '--trials=4']).trials, 4);
  assert.deepEqual(
    parse(['--peers=evictd-poll,kernel']).contenders.map((c) => c.name),
    ['evictd-poll', 'kernel'],
  );
  assert.throws(() => parse(['--trials', '0']), /--trials.*"0"/);
  assert.throws(() => parse(['--peers=evictd,foo']), /--peers.*foo/);
  assert.throws(() => parse(['--bogus']), UsageError);
});

test('nohangConfig: the line and min_sleep 0.01 in the stock file; a file without the keys is refused', () => {
  const stock = 'max_sleep = 3\nmin_sleep = 0.1\nsoft_threshold_min_mem = 5 %\nhard_threshold_min_mem = 2 %\n';
  assert.equal(nohangConfig(stock, 32), 'max_sleep = 3\nmin_sleep = 0.01\nsoft_threshold_min_mem = 32 M\nhard_threshold_min_mem = 16 M\n');
  assert.throws(() => nohangConfig('max_sleep = 3\n', 32), /no soft_threshold_min_mem/);
});

test('--from: a saved --json summary prints the same tables and writes the picture, infinities intact', () => {
  const cells = [
    cellOf(
      'evictd',
      50,
      many(10, (i) => trial('evictd', 'stopped', i + 1, i + 3, 'CRI')),
      3.125,
    ),
    cellOf(
      'kubelet',
      50,
      many(10, () => trial('kubelet', 'oom-killed', Infinity, Infinity, 'kernel')),
      3.125,
    ),
    cellOf(
      'earlyoom',
      50,
      many(10, (i) => trial('earlyoom', 'stopped', 10 * (i + 1), 10 * (i + 1), 'bare kill')),
      3.125,
    ),
  ];
  const summary: Summary = {
    bench: 'protect-peers',
    environment: 'lab',
    lineMiB: 32,
    evictdLineMiB: 97,
    oomdFreeLineMiB: 63,
    calibration: 'x',
    realMarginMiB: 100,
    rates: [50],
    trials: 10,
    contenders: ['evictd', 'kubelet', 'earlyoom'],
    cells,
    configs: { evictd: 'a', kubelet: 'b', earlyoom: 'c' },
    ran: {},
    errors: [],
    seconds: 1,
  };
  const back = readSummary(`{"cell":{}}\n${toJson(summary)}\n`);
  assert.equal(back.cells[1]!.own!.median, Infinity);
  assert.deepEqual(back.cells, cells, 'every value back, the infinities too');
  const out: string[] = [];
  const file = path.join(os.tmpdir(), `evictd-peers-from-${process.pid}.svg`);
  const r = printReport(back, (l) => out.push(l), file);
  assert.equal(r[0]!.peer!.contender, 'earlyoom');
  assert.match(out.join('\n'), /kubelet +\| .*\| none \[none, none\] \/ max none/);
  assert.ok(
    out.indexOf(out.find((l) => l.startsWith('\nheadline'))!) < out.indexOf(out.find((l) => l.startsWith('\nmechanism'))!),
    'the headline table first, the mechanism second',
  );
  assert.match(fs.readFileSync(file, 'utf8'), /^<svg /);
  fs.rmSync(file);
  assert.throws(() => readSummary('not json'), /neither the summary/);
  assert.throws(() => readSummary('{"bench":"protect"}'), /neither the summary/);
});

test('--from: a run cut short (header and trial lines, no summary) is summed up by the same cellOf, and says so', () => {
  const header = {
    environment: 'lab',
    lineMiB: 32,
    evictdLineMiB: 97,
    oomdFreeLineMiB: 63,
    calibration: 'x',
    realMarginMiB: 100,
    rates: [50, 200],
    trials: 10,
    contenders: ['evictd', 'earlyoom'],
    configs: { evictd: 'a', earlyoom: 'c' },
    ownLines: { evictd: 'memory.available < 97 MiB', earlyoom: 'MemAvailable < 32 MiB' },
  };
  const ts = [
    ...many(10, (i) => ({ ...trial('evictd', 'stopped', i + 1, i + 3, 'CRI'), rateMiBs: 50 })),
    ...many(10, (i) => ({ ...trial('earlyoom', 'stopped', 10 * (i + 1), Infinity, 'bare kill'), rateMiBs: 50 })),
    { ...trial('evictd', 'stopped', 2, 4, 'CRI'), rateMiBs: 200 },
  ];
  const text = [toJson({ run: header }), 'a progress line', ...ts.map((t) => toJson({ trial: t }))].join('\n');
  const back = readSummary(text);
  assert.match(back.environment, /cut short: 21 of 40 trials$/);
  const cell = (c: string, r: number) => back.cells.find((x) => x.contender === c && x.rateMiBs === r)!;
  assert.deepEqual(cell('evictd', 50), { ...cellOf('evictd', 50, ts.slice(0, 10), 3.125), ownLine: 'memory.available < 97 MiB' });
  assert.equal(cell('earlyoom', 50).common!.median, Infinity, 'the infinities revived');
  assert.equal(cell('evictd', 200).trials, 1);
  assert.equal(cell('earlyoom', 200).trials, 0);
});

test("--from: a run cut short takes each cell's own lines where the cell wrote them, the header's elsewhere", () => {
  const header = {
    environment: 'lab',
    lineMiB: 32,
    evictdLineMiB: 151,
    oomdFreeLineMiB: 63,
    calibration: 'no agent',
    realMarginMiB: 100,
    rates: [50, 200],
    trials: 10,
    contenders: ['evictd', 'earlyoom'],
    configs: {},
    ownLines: { evictd: 'memory.available < 151 MiB', earlyoom: 'MemAvailable < 32 MiB' },
  };
  const cellLines = {
    rateMiBs: 200,
    evictdLineMiB: 176,
    oomdFreeLineMiB: 60,
    note: 'cell',
    ownLines: { evictd: 'memory.available < 176 MiB', earlyoom: 'MemAvailable < 32 MiB' },
  };
  const text = [toJson({ run: header }), toJson({ cellLines }), toJson({ trial: { ...trial('evictd', 'stopped', 2, 4, 'CRI'), rateMiBs: 200 } })].join('\n');
  const back = readSummary(text);
  const cell = (c: string, r: number) => back.cells.find((x) => x.contender === c && x.rateMiBs === r)!;
  assert.equal(cell('evictd', 200).ownLine, 'memory.available < 176 MiB');
  assert.equal(cell('evictd', 50).ownLine, 'memory.available < 151 MiB', 'a cell that never calibrated keeps the header line');
  assert.deepEqual(back.cellLines, { '200': { evictdLineMiB: 176, oomdFreeLineMiB: 60, note: 'cell' } });
});

test('nodeMeminfo: the fields that part the two signals, in MiB; a field the kernel lacks is NaN', () => {
  const text =
    'MemTotal:         983040 kB\nMemFree:           66560 kB\nMemAvailable:      32768 kB\nActive(file):      10240 kB\nInactive(file):    20480 kB\nSUnreclaim:        51200 kB\n';
  const n = nodeMeminfo(text);
  assert.equal(n.MemFree, 65);
  assert.equal(n.MemAvailable, 32);
  assert.equal(n['Active(file)'], 10);
  assert.equal(n['Inactive(file)'], 20);
  assert.equal(n.SUnreclaim, 50);
  assert.ok(Number.isNaN(n.Percpu));
});

test("calibrationCheck: evictd's line against the kubelet's number where each trial crossed the common line, per rate", () => {
  const at = (c: string, kub: number | null): Trial => ({ ...trial(c, 'stopped', 1, 2, 'CRI'), kubeletAtCommonMiB: kub });
  const evictd = { ...cellOf('evictd', 100, [at('evictd', 170), at('evictd', null)], 3.125), ownLine: 'memory.available < 176 MiB' };
  const peer = { ...cellOf('nohang', 100, [at('nohang', 160), at('nohang', 168), at('nohang', 152)], 3.125), ownLine: 'MemAvailable < 32 MiB' };
  const line = calibrationCheck([evictd, peer])!;
  assert.match(line, /evictd's line 176 MiB against a median of 164\.0 MiB \(152\.0-170\.0, 4 trials\): 12\.0 MiB high \(it acts early\)/);
  assert.equal(calibrationCheck([peer]), null, 'no evictd cell, no check');
  assert.ok(whatFavoursWhom([evictd, peer]).includes(line));
});

test("calibrationCheck and the cell's own line: a line that moved with the cell is read from its trials' lines", () => {
  const at = (c: string, kub: number | null, line?: number): Trial => ({
    ...trial(c, 'stopped', 1, 2, 'CRI'),
    kubeletAtCommonMiB: kub,
    ...(line === undefined ? {} : { ownLineMiB: line }),
  });
  const evictd = withMovedLine({
    ...cellOf('evictd', 100, [at('evictd', null, 160), at('evictd', 166, 165), at('evictd', null, 165)], 3.125),
    ownLine: 'memory.available < 160 MiB',
  });
  assert.deepEqual(evictd.ownLinesMiB, [160, 165, 165]);
  assert.equal(evictd.ownLine, 'memory.available < 160-165 MiB', 'the range its trials ran with');
  const peer = { ...cellOf('nohang', 100, [at('nohang', 162), at('nohang', 168), at('nohang', 164)], 3.125), ownLine: 'MemAvailable < 32 MiB' };
  assert.equal(peer.ownLinesMiB, undefined, "a peer has no line on the kubelet's signal");
  assert.equal(withMovedLine(peer).ownLine, 'MemAvailable < 32 MiB');
  assert.match(
    calibrationCheck([evictd, peer])!,
    /evictd's lines 160-165 MiB \(median over its trials 165\) against a median of 165\.0 MiB \(162\.0-168\.0, 4 trials\): on it/,
  );
  const still = withMovedLine({ ...cellOf('evictd', 100, [at('evictd', null, 170), at('evictd', null, 170)], 3.125), ownLine: 'memory.available < 170 MiB' });
  assert.equal(still.ownLine, 'memory.available < 170 MiB', 'a line that never moved is left as it was');
  assert.match(calibrationCheck([still, peer])!, /evictd's line 170 MiB against a median of 164\.0 MiB .*: 6\.0 MiB high/);
});

test('--from: the line moves a run recorded come back with it', () => {
  const header = {
    environment: 'lab',
    lineMiB: 32,
    evictdLineMiB: 151,
    oomdFreeLineMiB: 63,
    calibration: 'no agent',
    realMarginMiB: 100,
    rates: [200],
    trials: 10,
    contenders: ['evictd'],
    configs: {},
    ownLines: { evictd: 'memory.available < 151 MiB' },
  };
  const moves = { rateMiBs: 200, moves: [{ contender: 'evictd', beforeTrial: 3, fromMiB: 151, toMiB: 156, readings: 12 }] };
  const back = readSummary(
    [
      toJson({ run: header }),
      toJson({ trial: { ...trial('evictd', 'stopped', 2, 4, 'CRI'), rateMiBs: 200, ownLineMiB: 151 } }),
      toJson({ trial: { ...trial('evictd', 'stopped', 2, 4, 'CRI'), rateMiBs: 200, ownLineMiB: 156 } }),
      toJson({ lineMoves: moves }),
    ].join('\n'),
  );
  assert.deepEqual(back.lineMoves, { '200': moves.moves });
  assert.equal(back.cells[0]!.ownLine, 'memory.available < 151-156 MiB');
});

test('bench protect --peers --from: a missing file is one line naming the flag and the value, exit 2', () => {
  const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');
  const r = spawnSync(process.execPath, [bin, 'bench', 'protect', '--peers', '--from', '/nonexistent/run.json'], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.deepEqual(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /--from.*\/nonexistent\/run\.json.*no such file/);
});

test('a peer whose program cannot be executed is "not run" with the reason, never a crash of the bench', async () => {
  const dir = tempDir('peer');
  const notExecutable = path.join(dir, 'earlyoom');
  fs.writeFileSync(notExecutable, '', { mode: 0o644 });
  const ctx = { workDir: dir } as ContenderContext;
  await assert.rejects(
    startDaemon(ctx, 'earlyoom', notExecutable, [], /never/, 5000),
    (e: Error) => e instanceof ContenderUnavailable && /^earlyoom could not be run: .*EACCES/.test(e.message),
  );
  await assert.rejects(
    startDaemon(ctx, 'earlyoom', path.join(dir, 'absent'), [], /never/, 5000),
    (e: Error) => e instanceof ContenderUnavailable && /ENOENT/.test(e.message),
  );
  fs.rmSync(dir, { recursive: true, force: true });
});
