import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { compactProbe, felt, memoryBackNs, probeEvents, probeMinAvailableKb, worstStallMs } from '../../src/lab/bench/peers/probe';
import { readProbeLog } from '../../src/lab/bench/peers/readings';
import { tempDir } from '../support/temp-dir';

const ms = 1_000_000n;
// A hand-made probe log (ms from 0, as ns), with the ramp's lines of the same container mixed in:
// the probe starts at 100 ms; a 7 ms gap 1000-1007; MemAvailable below the 32 MiB line at
// 1500 ms, back above at 1620 ms; a 45 ms stall 1560-1605; heartbeats each second.
const log = [
  `${90n * ms} 255`,
  `${100n * ms} probe 32768 255`,
  `${1007n * ms} gap ${1000n * ms}`,
  `${1100n * ms} beat ${7n * ms} 120000`,
  `${1500n * ms} below 32000`,
  `${1605n * ms} gap ${1560n * ms}`,
  `${1620n * ms} above 40000`,
  `${2100n * ms} beat ${45n * ms} 30000`,
  `${3100n * ms} beat 1200000 90000`,
  'hog: noise',
];

test('probeEvents: the probe lines of a container log, the ramp lines and noise skipped', () => {
  const e = probeEvents(log);
  assert.equal(e.length, 8);
  assert.deepEqual(e[0], { kind: 'probe', ns: 100n * ms, lineKb: 32768 });
  assert.deepEqual(e[1], { kind: 'gap', ns: 1007n * ms, startNs: 1000n * ms });
  assert.deepEqual(e[3], { kind: 'below', ns: 1500n * ms, availableKb: 32000 });
  assert.deepEqual(e[7], { kind: 'beat', ns: 3100n * ms, maxGapNs: 1_200_000, minAvailableKb: 90000 });
});

test('memoryBackNs: the first "above" after the send; never below at the send: the send, or the end of a gap spanning it', () => {
  const e = probeEvents(log);
  assert.equal(memoryBackNs(e, 1550n * ms), 1620n * ms, 'below at the send: its next above');
  assert.equal(memoryBackNs(e, 1400n * ms), 1400n * ms, 'above at the send: its next reading, at once');
  assert.equal(memoryBackNs(e, 1003n * ms), 1007n * ms, "above, but stalled across the send: the gap's end");
  assert.equal(memoryBackNs(e, 5000n * ms), null, 'nothing logged after the send: no reading');
  assert.equal(memoryBackNs(probeEvents(log.slice(0, 5)), 1550n * ms), null, 'below and never back: no memory back');
});

test('worstStallMs and probeMinAvailableKb: the gaps and heartbeats overlapping the window', () => {
  const e = probeEvents(log);
  assert.equal(worstStallMs(e, 1200n * ms, 2620n * ms), 45, 'the 45 ms stall');
  assert.equal(worstStallMs(e, 900n * ms, 1100n * ms), 7, 'the 7 ms gap (its heartbeat agrees)');
  assert.equal(worstStallMs(e, 2200n * ms, 3000n * ms), 1.2, "no gap logged: the heartbeat's longest (<= 2 ms)");
  assert.equal(worstStallMs(e, 5000n * ms, 6000n * ms), null);
  assert.equal(probeMinAvailableKb(e, 1200n * ms, 2620n * ms), 30000, "the heartbeat's minimum, below the crossing's reading");
  assert.equal(probeMinAvailableKb(e, 3000n * ms, 3100n * ms), 90000);
});

test('felt: the headline from the common line to memory back, the exit, the stall window [ramp start, memory back + 1 s], the lowest MemAvailable', () => {
  const e = probeEvents(log);
  const readings = [
    { ns: 1400n * ms, availableKb: 40000 },
    { ns: 1490n * ms, availableKb: 31000 },
    { ns: 1540n * ms, availableKb: 29000 },
  ];
  const base = { events: e, readings, rampStartNs: 1200n * ms, commonNs: 1480n * ms, killNs: 1550n * ms, exitNs: 1580n * ms, stoppedByContender: true };
  const f = felt(base);
  assert.equal(f.memoryBackNs, 1620n * ms);
  assert.equal(f.commonToBackMs, 140);
  assert.equal(f.commonToExitMs, 100);
  assert.equal(f.worstStallMs, 45);
  assert.equal(f.minAvailableMiB, 28.3, "the hog's 29000 kB, lower than the probe's");
  // The 7 ms gap at 1000 ms is before the ramp: not this trial's.
  assert.equal(
    felt({ ...base, killNs: 1550n * ms, rampStartNs: 1400n * ms, events: e.filter((x) => x.kind !== 'gap' || x.ns !== 1605n * ms) }).worstStallMs,
    45,
    'the heartbeat at 2100 ms covers the stall too',
  );
  assert.equal(felt({ ...base, stoppedByContender: false }).commonToBackMs, Infinity, 'not stopped: +Infinity');
  assert.equal(felt({ ...base, commonNs: 1560n * ms }).commonToBackMs, -Infinity, 'the kill before the common line');
  assert.equal(felt({ ...base, commonNs: null }).commonToBackMs, -Infinity, 'the common line never reached, a kill');
  assert.equal(felt({ ...base, killNs: null, commonNs: null, stoppedByContender: false }).commonToBackMs, null, 'nobody killed, no line');
  assert.deepEqual(compactProbe(e, 1500n * ms, 1620n * ms), [
    [1500, 'below', 32000].map((x, i) => (i === 0 ? Number(1500n * ms) : x)),
    [Number(1605n * ms), 'gap', Number(1560n * ms)],
    [Number(1620n * ms), 'above', 40000],
  ]);
});

test('readProbeLog: the container log read on from where the last read stopped, a partial last line kept for the next', () => {
  const dir = tempDir('probe-log');
  const pod = { logDirectory: dir } as unknown as Parameters<typeof readProbeLog>[0];
  const cri = (m: string) => `2026-11-27T20:00:00.000000000Z stdout F ${m}\n`;
  fs.writeFileSync(
    path.join(dir, 'app.log'),
    cri('5 255') + cri(`${100n * ms} probe 32768 255`) + cri(`${1007n * ms} gap ${1000n * ms}`) + '2026-11-27T20:00:01Z stdout F 15000',
  );
  assert.deepEqual(
    readProbeLog(pod).map((e) => e.kind),
    ['probe', 'gap'],
  );
  fs.appendFileSync(path.join(dir, 'app.log'), `00000 below 32000\n` + cri(`${1620n * ms} above 40000`));
  const e = readProbeLog(pod);
  assert.deepEqual(
    e.map((x) => x.kind),
    ['probe', 'gap', 'below', 'above'],
    'the line split across two reads is whole',
  );
  assert.deepEqual(e[2], { kind: 'below', ns: 1500000000n, availableKb: 32000 });
  fs.rmSync(dir, { recursive: true, force: true });
});
