import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kubeletOomScoreAdj } from '../../src/lab/bench/peers/pods';
import { cellOf, notRunCell, ratios, renderTable, svg } from '../../src/lab/bench/peers/report';
import type { Trial } from '../../src/lab/bench/peers/trial';

const MiB = 1024 * 1024;

test("kubeletOomScoreAdj: the kubelet's values per QoS class (pkg/kubelet/qos/policy.go)", () => {
  assert.equal(kubeletOomScoreAdj('Guaranteed', 0, 1024 * MiB), -997);
  assert.equal(kubeletOomScoreAdj('BestEffort', 0, 1024 * MiB), 1000);
  assert.equal(kubeletOomScoreAdj('Burstable', 32 * MiB, 960 * MiB), 967);
  assert.equal(kubeletOomScoreAdj('Burstable', 1024 * MiB, 1024 * MiB), 3, 'never below 1000 + guaranteed');
  assert.equal(kubeletOomScoreAdj('Burstable', 0, 1024 * MiB), 999, 'never 1000, the BestEffort value');
});

const trial = (contender: string, outcome: Trial['outcome'], reactionMs: number | null, via: Trial['via']): Trial => ({
  contender,
  rateMiBs: 100,
  measuredRateMiBs: 90,
  outcome,
  oomKills: outcome === 'oom-killed' ? 1 : 0,
  reactionMs,
  availableAtKillMiB: 20,
  via,
  protectedLost: [],
  psiSomeAvg10Max: outcome === 'oom-killed' ? 7.5 : 1.25,
});

test('report: cells, the ratio to the best peer, a "not run" row kept, an SVG that is well-formed text', () => {
  const cells = [
    cellOf('evictd-poll', 100, [trial('evictd-poll', 'stopped', 50, 'CRI')], 3.125),
    cellOf('earlyoom', 100, [trial('earlyoom', 'stopped', 200, 'bare kill')], 3.125),
    cellOf('kernel', 100, [trial('kernel', 'oom-killed', 9000, 'kernel')], 3.125),
    notRunCell('systemd-oomd', 100, 'needs systemd as PID 1'),
  ];
  assert.equal(cells[0]!.realRateMiBs, 281);
  assert.equal(cells[2]!.stopped, 0);
  assert.equal(cells[2]!.reactionP50Ms, 9000, "the kernel row's reaction is the kernel's kill");
  assert.equal(cells[2]!.psiSomeAvg10Max, 7.5, 'the highest memory PSI of the trials');
  assert.equal(cells[3]!.psiSomeAvg10Max, undefined);
  const [r] = ratios(cells, [100]);
  assert.match(r!.text, /evictd-poll 1\/1 vs best peer earlyoom 1\/1, reaction p50 50 vs 200 ms \(evictd 4x faster\)/);
  const table = renderTable(cells);
  assert.match(table, /systemd-oomd \| \(100\) +\| not run: needs systemd as PID 1/);
  const picture = svg(cells, ['evictd-poll', 'earlyoom', 'systemd-oomd', 'kernel'], [100], 'line MemAvailable < 32 MiB & more', 3.125);
  assert.match(picture, /MemAvailable &lt; 32 MiB &amp; more/);
  assert.doesNotMatch(picture.replace(/<\/?[a-z][^<>]*>/g, ''), /[<>]/, 'no raw < or > outside tags');
  assert.match(picture, /systemd-oomd \(not run\)/);
});
