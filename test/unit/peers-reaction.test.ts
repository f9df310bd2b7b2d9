import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hogSteps } from '../../src/lab/node-lab';
import {
  crossingOf,
  exitNs,
  firstKill,
  oomVictim,
  senderOf,
  reachedRate,
  reactionMs,
  readingAt,
  signalMiB,
  type Line,
} from '../../src/lab/bench/peers/reaction';
import { readingAtLine } from '../../src/lab/bench/peers/calibrate';
import { parseTrace } from '../../src/lab/bench/peers/signal-trace';

const ms = 1_000_000n;
// A hog at 100 MiB/s (a MiB every 10 ms) from t = 1000 ms; each MiB's touch takes 2 ms, then it
// reads /proc/meminfo. MemAvailable falls 1 MiB per MiB from 40 MiB; MemFree + Inactive(file)
// stays 60 MiB above it; MemFree 50 MiB above.
function hogLog(mibs: number): string[] {
  const out = [`${1000n * ms} start`];
  for (let k = 1; k <= mibs; k++) {
    const touch = (1000n + BigInt((k - 1) * 10)) * ms;
    const avail = (40 - k) * 1024;
    out.push(`${touch + 2n * ms} ${k} ${touch} ${avail} ${avail + 50 * 1024} ${10 * 1024}`);
  }
  return out;
}
const schedule = { startNs: 1000n * ms, stepNs: 10n * ms };
const available: Line = { signal: 'MemAvailable', belowMiB: 32 };
const kubelet: Line = { signal: 'memory.available', belowMiB: 92 };

test('hogSteps: old two-field lines unchanged, HOG_METER lines with their reading; -1 fields are no reading', () => {
  assert.deepEqual(hogSteps(['5 1', 'junk', '7 2']), [
    { ns: 5n, mib: 1 },
    { ns: 7n, mib: 2 },
  ]);
  const [s] = hogSteps(['12 3 10 100 200 300']);
  assert.deepEqual(s, { ns: 12n, mib: 3, reading: { touchNs: 10n, availableKb: 100, freeKb: 200, inactiveFileKb: 300 } });
  assert.equal(hogSteps(['12 3 10 -1 200 300'])[0]!.reading, undefined);
  assert.equal(signalMiB(s!.reading!, 'memory.available'), 500 / 1024);
});

test('crossingOf: the start of the MiB whose reading first fell below the line, on each signal', () => {
  const steps = hogSteps(hogLog(12));
  const a = crossingOf(steps, available, schedule, null)!;
  // MemAvailable = 40 - k < 32 first at k = 9: its touch began at 1080 ms, read at 1082 ms.
  assert.deepEqual(a, { touchNs: 1080n * ms, seenNs: 1082n * ms, mib: 9, inferred: false });
  // memory.available = 40 - k + 60 < 92 first at k = 9 too (the calibrated line crosses with it).
  assert.equal(crossingOf(steps, kubelet, schedule, null)!.mib, 9);
  assert.equal(crossingOf(steps, { signal: 'MemFree', belowMiB: 85 }, schedule, null)!.mib, 6);
  assert.equal(crossingOf(steps, { signal: 'MemAvailable', belowMiB: 10 }, schedule, null), null, 'never crossed, nobody killed');
});

test('crossingOf: killed inside the crossing MiB before it could read: inferred from the schedule, only within 2 MiB of the line', () => {
  const steps = hogSteps(hogLog(8)); // last reading: MemAvailable 32 MiB, not below 32
  const killNs = 1081n * ms; // MiB 9's touch began at 1080 ms (the schedule), the hog never read it
  assert.deepEqual(crossingOf(steps, available, schedule, killNs), { touchNs: 1080n * ms, seenNs: null, mib: 9, inferred: true });
  assert.equal(crossingOf(steps, available, schedule, 1075n * ms), null, 'killed while the hog slept after MiB 8: before its line');
  assert.equal(crossingOf(steps, { signal: 'MemAvailable', belowMiB: 20 }, schedule, killNs), null, '12 MiB above the line: not this MiB');
  // A hog behind its schedule starts the next MiB as soon as it has read the last one.
  const late = hogSteps([...hogLog(7), `${1100n * ms} 8 ${1098n * ms} ${32 * 1024} ${82 * 1024} ${10 * 1024}`]);
  assert.equal(crossingOf(late, available, schedule, 1101n * ms)!.touchNs, 1100n * ms);
});

test('crossingOf with HOG_METER_FINE: the start of the 64 KiB chunk whose reading first fell below the line; inferred inside a chunk', () => {
  // MiB 9 read in 16 chunks of 64 KiB, 0.1 ms of touch + read each from 1080 ms; MemAvailable
  // falls below 32 MiB (32768 kB) with the 5th chunk.
  const lines = hogLog(8);
  for (let c = 1; c <= 16; c++) {
    const touch = 1080n * ms + BigInt(c - 1) * (ms / 10n);
    const avail = 32 * 1024 - (c >= 5 ? 64 * (c - 4) : 0);
    const mib = c === 16 ? '9' : (8 + c / 16).toFixed(6);
    lines.push(`${touch + ms / 10n} ${mib} ${touch} ${avail} ${avail + 50 * 1024} ${10 * 1024}`);
  }
  const steps = hogSteps(lines);
  assert.equal(steps[8]!.mib, 8.0625, 'a fractional MiB parses');
  assert.deepEqual(crossingOf(steps, available, schedule, null), {
    touchNs: 1080n * ms + 4n * (ms / 10n),
    seenNs: 1080n * ms + 5n * (ms / 10n),
    mib: 8.3125,
    inferred: false,
  });
  // Killed inside the 5th chunk before it read: the chunk after the last reading starts right
  // after that reading (no sleep inside a MiB), not at the next MiB's due time.
  const cut = hogSteps(lines.slice(0, 1 + 8 + 4));
  const killNs = 1080n * ms + 4n * (ms / 10n) + 50_000n;
  assert.deepEqual(crossingOf(cut, available, schedule, killNs), { touchNs: 1080n * ms + 4n * (ms / 10n), seenNs: null, mib: 9, inferred: true });
});

test('firstKill, oomVictim, exitNs, reactionMs, readingAt: from the kernel trace and the readings', () => {
  const events = parseTrace(
    [
      '      containerd-50 [000] d..1.     1.050000: signal_generate: sig=15 errno=0 code=0 comm=hog pid=999 grp=1 res=0',
      '      containerd-50 [000] d..1.     1.060000: signal_generate: sig=10 errno=0 code=0 comm=hog pid=77 grp=1 res=0',
      '        earlyoom-60 [001] d..1.     1.095500: signal_generate: sig=15 errno=0 code=0 comm=hog pid=77 grp=1 res=0',
      '            node-61 [001] d..1.     1.096000: signal_generate: sig=9 errno=0 code=0 comm=hog pid=77 grp=1 res=0',
      '             hog-77 [000] .....     1.101000: sched_process_exit: comm=hog pid=77 prio=120',
    ].join('\n'),
  );
  const k = firstKill(events, 77)!;
  assert.deepEqual(
    k,
    { ns: 1_095_500_000n, sig: 15, sender: 'earlyoom-60', res: 0 },
    'the first SIGTERM/SIGKILL to the hog, not to another pid, not another signal',
  );
  assert.equal(exitNs(events, 77), 1_101_000_000n);
  assert.equal(oomVictim(events, 77), false);
  assert.equal(oomVictim(parseTrace('hog-77 [000] ..... 1.1: mark_victim: pid=77 comm=hog'), 77), true);
  assert.equal(senderOf(events, k, 77), 'earlyoom');
  // The OOM killer runs in the task whose allocation failed: the kill and mark_victim share it.
  const oom = parseTrace(
    [
      '      containerd-565 [001] d..1.     2.000000: signal_generate: sig=9 errno=0 code=0 comm=hog pid=77 grp=1 res=0',
      '      containerd-565 [001] .....     2.000010: mark_victim: pid=77 comm=hog total-vm=1kB',
    ].join('\n'),
  );
  assert.equal(senderOf(oom, firstKill(oom, 77)!, 77), 'kernel OOM killer (in containerd)');
  assert.equal(senderOf(oom, firstKill(oom, 77)!, 78), 'containerd', 'a victim other than the hog');
  const steps = hogSteps(hogLog(12));
  const cross = crossingOf(steps, available, schedule, k.ns)!;
  assert.equal(reactionMs(cross, k, true), 15.5, '1095.5 ms - the crossing MiB began at 1080 ms');
  assert.equal(reactionMs(cross, k, false), Infinity, 'the kernel stopped it, not the contender');
  assert.equal(reactionMs(null, k, true), -Infinity, 'acted before the hog reached the line');
  assert.equal(reactionMs(cross, { ...k, ns: 1070n * ms }, true), -Infinity);
  assert.equal(reactionMs(null, null, false), null);
  // Memory left at the send: the last reading before it, MiB 10's (read at 1092 ms).
  const at = readingAt(steps, k.ns)!;
  assert.equal(signalMiB(at, 'MemAvailable'), 30);
  assert.equal(signalMiB(at, 'memory.available'), 90);
  assert.equal(readingAt(steps, 1000n * ms), null);
});

test('reachedRate: MiB per second over the last 64 MiB before the crossing, whatever was asked', () => {
  const steps = hogSteps(hogLog(12));
  assert.ok(Math.abs(reachedRate(steps, 9)! - 100) < 1e-9);
  assert.equal(reachedRate(steps.slice(0, 1), 1), null);
});

test('readingAtLine (calibration): what the hog read where MemAvailable first fell below the line', () => {
  const r = readingAtLine(hogSteps(hogLog(12)), 32)!;
  assert.equal(r.kubeletMiB, 91);
  assert.equal(r.freeMiB, 81);
  assert.equal(readingAtLine(hogSteps(hogLog(5)), 32)!.kubeletMiB, 95, 'killed above the line: its last reading');
  assert.equal(readingAtLine([], 32), null);
});
