/**
 * `evictd demo`: the README's main job on a fresh machine. Brings up the project's containerd
 * harness, makes a 512 MiB "node" cgroup, runs a Guaranteed and a Burstable pod on it, starts
 * `evictd run` on that node, then ramps a BestEffort memory hog toward the node's limit several
 * times (faster each time) and prints each ramp's timeline: threshold crossed, decision, kill
 * sent, memory freed. Tears everything down at the end (also on Ctrl-C).
 */
import { AgentProcess, runRamp, type RampResult } from './ramp-lab';
import { percentile, round } from './stats';
import { NodeLab } from './node-lab';
import { harnessMissing } from './harness';
import { openLabSession } from './lab-session';
import { badValue, UsageError } from '../errors';
import { eachFlag, parseRates } from './flags';
import os from 'node:os';
import path from 'node:path';
import { Quantity } from '../policy/quantity';
import { demoReplay } from './demo-replay';
import { cacheRamp, type CacheRampResult } from './demo-cache';

const MiB = 1024 * 1024;
/** deploy/daemonset.yaml and deploy/evictd.service run evictd run --realtime-priority=10 */
const DEPLOYED_RT_PRIORITY = 10;

const USAGE = `usage: evictd demo [--json] [--rates LIST] [--node-memory MIB] [--threshold QUANTITY] [--record FILE]

Real containerd, real cgroups, real eviction, end to end (needs root; about a minute).
  --json             one JSON object per event; the last line is {"summary": {...}}
  --rates LIST       hog ramp rates in MiB/s, one ramp each (default 200,500,1000,2000,2000)
  --node-memory MIB  the node cgroup's memory limit (default 512)
  --threshold Q      the hard memory.available threshold (default 100Mi)
  --record FILE      where evictd run --record writes the run (default: a file under the OS temp dir);
                     the demo then replays it and asks it "what if" with a line twice as high and one at 1Ki`;

interface DemoOptions {
  json: boolean;
  rates: number[];
  nodeMiB: number;
  threshold: string;
  record: string;
}

function parse(argv: string[]): DemoOptions | null {
  const o: DemoOptions = {
    json: false,
    rates: [200, 500, 1000, 2000, 2000],
    nodeMiB: 512,
    threshold: '100Mi',
    record: path.join(os.tmpdir(), `evictd-demo-${process.pid}.jsonl`),
  };
  if (argv.includes('--help') || argv.includes('-h')) return null;
  eachFlag(argv, (flag, value, raw) => {
    if (flag === '--json') o.json = true;
    else if (flag === '--rates') o.rates = parseRates('--rates', value());
    else if (flag === '--node-memory') {
      const v = value();
      o.nodeMiB = Number(v);
      if (!Number.isInteger(o.nodeMiB) || o.nodeMiB < 256 || o.nodeMiB > 8192)
        throw badValue('--node-memory', v, 'must be a whole number of MiB between 256 and 8192');
    } else if (flag === '--threshold') {
      o.threshold = value();
      if (!/^\d+(Mi|Gi|M|G|Ki)?$/.test(o.threshold)) throw badValue('--threshold', o.threshold, 'must be a quantity such as 100Mi');
    } else if (flag === '--record') o.record = value();
    else throw new UsageError(`demo: unknown flag ${JSON.stringify(raw)} (see evictd demo --help)`);
  });
  return o;
}

export async function demo(argv: string[]): Promise<number> {
  const o = parse(argv);
  if (!o) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const missing = harnessMissing();
  if (missing) throw new UsageError(`demo: ${missing}`);
  const out = (event: Record<string, unknown>, text: string): void => {
    process.stdout.write((o.json ? JSON.stringify(event) : text) + '\n');
  };
  const t0 = Date.now();
  out({ event: 'harness' }, 'demo: bringing up the containerd harness (scripts/harness.sh up)...');
  const session = await openLabSession({ name: 'evictd-demo', memoryLimitBytes: o.nodeMiB * MiB, logDir: 'demo', clientTimeoutMs: 5000, closeOnSignal: false });
  const { harness, lab } = session;
  let agent: AgentProcess | null = null;
  let interrupted = false;
  const onSignal = (): void => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  try {
    out(
      { event: 'node', cgroup: lab.root, memoryMiB: o.nodeMiB, cgroups: lab.layout.mode },
      `demo: node cgroup ${lab.root} with ${o.nodeMiB} MiB (cgroups ${lab.layout.mode})`,
    );
    const guaranteed = await lab.runPod({
      name: 'web-guaranteed',
      namespace: 'demo',
      qos: 'Guaranteed',
      containers: [
        { name: 'app', image: 'localhost/evictd/busybox:1', command: ['/bin/sh', '-c', 'while true; do sleep 1; done'], memoryLimitBytes: 64 * MiB },
      ],
      annotations: { 'evictd.io/requests': 'memory=64Mi,cpu=100m', 'evictd.io/limits': 'memory=64Mi,cpu=100m' },
    });
    const burstable = await lab.runPod({
      name: 'api-burstable',
      namespace: 'demo',
      qos: 'Burstable',
      containers: [
        { name: 'app', image: 'localhost/evictd/busybox:1', command: ['/bin/sh', '-c', 'while true; do sleep 1; done'], memoryLimitBytes: 128 * MiB },
      ],
      annotations: { 'evictd.io/requests': 'memory=32Mi', 'evictd.io/limits': 'memory=128Mi' },
    });
    out({ event: 'pods', pods: [guaranteed.name, burstable.name] }, `demo: pods ${guaranteed.name} (Guaranteed) and ${burstable.name} (Burstable) running`);
    // As the DaemonSet and the systemd unit run it: the thread that wakes on the kernel's events
    // (and runs the pass) in SCHED_FIFO, so the hog saturating a CPU cannot hold it back.
    const deployed = ['--realtime-priority', String(DEPLOYED_RT_PRIORITY)];
    agent = await AgentProcess.start({
      lab,
      endpoint: harness.endpoint,
      evictionHard: `memory.available<${o.threshold}`,
      extraArgs: [...deployed, '--record', o.record],
    });
    out(
      {
        event: 'agent',
        pid: agent.child.pid,
        metricsAddress: agent.metricsAddress,
        evictionHard: `memory.available<${o.threshold}`,
        realtimePriority: DEPLOYED_RT_PRIORITY,
      },
      `demo: evictd run --cgroup-root ${lab.root} --eviction-hard memory.available<${o.threshold} ${deployed.join(' ')} (pid ${agent.child.pid}, metrics http://${agent.metricsAddress}/metrics)`,
    );
    const oomBefore = NodeLab.oomKills();
    const lineMiB = Quantity.parse(o.threshold).value() / MiB;
    // Page cache first: usage far past the line, the kubelet's signal above it, an order standing.
    const caches: CacheRampResult[] = [];
    if (!interrupted) {
      out(
        { event: 'cache-ramp-start' },
        `\ncache ramp: a ballast pod brings memory.available near ${o.threshold}, then cache-writer fills the node with clean page cache (synced files on a disk mount)`,
      );
      const c = await cacheRamp(lab, agent, { nodeMiB: o.nodeMiB, thresholdMiB: lineMiB, namespace: 'demo' });
      caches.push(c);
      out(
        { event: 'cache-ramp', ...c },
        [
          `  ${c.writtenMiB} MiB written: node usage ${c.usageMiB} MiB of ${o.nodeMiB} (past the line), working set ${c.workingSetMiB} MiB, memory.available ${c.availableMiB} MiB > ${c.lineMiB} MiB`,
          `  ${c.spared ? 'not evicted' : `EVICTED: ${c.evicted.join(', ') || 'a pod stopped'}`}: page cache is reclaimable, and the kubelet's signal (capacity - (usage - inactive_file)) never crossed; ` +
            `a standing order stood on ballast ${c.orderStood ? 'the whole time' : '(never placed)'}; crossings its thread refused on the kubelet's numbers read fresh: ${c.refusals ?? 'unknown (metrics unreachable)'}`,
        ].join('\n'),
      );
    }
    const results: RampResult[] = [];
    const gone = agent.gone();
    if (gone) throw new Error(`evictd run ended during the demo: ${gone}`);
    const targetMiB = o.nodeMiB + 128;
    for (let i = 0; i < o.rates.length && !interrupted; i++) {
      const rate = o.rates[i]!;
      out(
        { event: 'ramp-start', ramp: i + 1, rateMiBs: rate },
        `\nramp ${i + 1}: hog-${i + 1} (BestEffort) allocates ${rate} MiB/s toward ${targetMiB} MiB (node limit ${o.nodeMiB} MiB)`,
      );
      const r = await runRamp(lab, agent, { name: `hog-${i + 1}`, rateMiBs: rate, targetMiB, namespace: 'demo' });
      results.push(r);
      if (r.outcome === 'evicted' && r.reactionMs !== undefined) {
        const f = (x: number | undefined) => (x === undefined ? '?' : `+${x.toFixed(1)} ms`);
        out(
          { event: 'ramp', ramp: i + 1, ...r, labPod: undefined },
          // In the order things happened: a standing order's kill comes before the pass that
          // confirms it (the pod was chosen by the pass before the crossing).
          [
            { ms: 0, text: `memory.available crossed ${o.threshold} (hog at ${r.crossingMiB} MiB)` },
            {
              ms: r.decisionMs,
              text:
                r.action === 'standing-order'
                  ? `confirmed: ${r.pod} evicted (${(r.reasons ?? []).join('; ')})`
                  : `decision: evict ${r.pod} (${(r.reasons ?? []).join('; ')})`,
            },
            {
              ms: r.reactionMs,
              text:
                r.action === 'fast-kill'
                  ? 'kill sent (cgroup.kill), StopPodSandbox follows'
                  : r.action === 'standing-order'
                    ? 'killed by its standing order (cgroup.kill at the crossing), StopPodSandbox follows'
                    : 'StopPodSandbox sent',
            },
            { ms: r.freedMs, text: 'memory freed' },
            ...(r.stoppedMs !== undefined ? [{ ms: r.stoppedMs, text: 'StopPodSandbox done' }] : []),
          ]
            .sort((a, b) => (a.ms ?? Infinity) - (b.ms ?? Infinity))
            .map((l) => `  ${f(l.ms).padStart(11)}  ${l.text}`)
            .join('\n'),
        );
      } else {
        out({ event: 'ramp', ramp: i + 1, ...r, labPod: undefined }, `  ${r.outcome}${r.oomKills ? ` (kernel OOM kills: ${r.oomKills})` : ''}`);
      }
      await lab.removePod(r.labPod);
      // The two long-lived pods come back for the next ramp only if something evicted them.
      if (!(await lab.sandboxReady(guaranteed)) || !(await lab.sandboxReady(burstable)))
        out({ event: 'warning', message: 'a protected pod was stopped' }, '  warning: a protected pod was stopped');
    }
    // Idle CPU of the agent: 2 s to settle (the last stop completes), then 10 s of nothing.
    await new Promise((r) => setTimeout(r, 2000));
    const cpu0 = agent.cpuSeconds();
    await new Promise((r) => setTimeout(r, 10_000));
    const idleCpuPercent = ((agent.cpuSeconds() - cpu0) / 10) * 100;
    // The recording is whole once the agent has stopped: replay it, and ask it two what-ifs.
    const stopped = agent;
    agent = null;
    await stopped.stop();
    // Lower: a line no agent can act on before memory runs out (1 KiB lasts microseconds at
    // these rates), so the what-if names the ramps the OOM killer would take wherever the demo
    // runs; a hundredth of the line did on the host and not in the lab, whose ramps are slower.
    const replayed = demoReplay(o.record, stopped.lines, `${Math.round(lineMiB * 2)}Mi`, '1Ki');
    out(
      { event: 'replay', file: o.record, ...replayed },
      [
        `\nrecording ${o.record}: ${replayed.passes} passes, ${replayed.bytes} bytes (${replayed.bytesPerPass} per pass); making a pass's line took ${replayed.recordMsMean} ms on average (max ${replayed.recordMsMax} ms), after the pass's actions`,
        `  replay (evictd simulate ${o.record}): ${replayed.differences.length === 0 ? 'every pass decided as recorded' : `${replayed.differences.length} differences`}; evicted ${replayed.replayed.join(', ') || 'nothing'} (recorded: ${replayed.recorded.join(', ') || 'nothing'})`,
        ...replayed.differences.map((d) => `    ${d}`),
        `  what if memory.available<${replayed.higher.line}: ${replayed.higher.text.join('; ') || 'no change'}`,
        `  what if memory.available<${replayed.lower.line}: ${replayed.lower.text.join('; ') || 'no change'}`,
      ].join('\n'),
    );
    // Kernel OOM kills on this node: the hogs' (their cgroups' counters or containerd's
    // OOMKilled reason) and the protected pods'. The machine-wide count is printed besides,
    // since other work on the machine can move it.
    let oomKills = results.reduce((n, r) => n + r.oomKills, 0);
    for (const p of [guaranteed, burstable]) if (await lab.containerOomKilled(p, 'app')) oomKills++;
    const machineOomKills = NodeLab.oomKills() - oomBefore;
    const reactions = results.flatMap((r) => (r.reactionMs !== undefined ? [r.reactionMs] : []));
    const freed = results.flatMap((r) => (r.freedMs !== undefined ? [r.freedMs] : []));
    const summary = {
      evicted: results.filter((r) => r.outcome === 'evicted').map((r) => r.pod.split('/')[1]),
      oomKills,
      machineOomKills,
      reactionP50Ms: round(percentile(reactions, 50), 2),
      reactionP99Ms: round(percentile(reactions, 99), 2),
      freedP50Ms: round(percentile(freed, 50), 1),
      freedP99Ms: round(percentile(freed, 99), 1),
      ramps: results.length,
      ratesMiBs: o.rates.slice(0, results.length),
      protectedPodsSurvived: (await lab.sandboxReady(guaranteed)) && (await lab.sandboxReady(burstable)),
      idleCpuPercent: round(idleCpuPercent, 2),
      cacheRamps: { ramps: caches.length, spared: caches.filter((c) => c.spared).length },
      replay: {
        passes: replayed.passes,
        recorded: replayed.recorded,
        replayed: replayed.replayed,
        differences: replayed.differences.length,
        earlierWithHigherLine: replayed.higher.earlier,
        oomFirstWithLowerLine: replayed.lower.oomFirst,
        bytesPerPass: replayed.bytesPerPass,
        recordMsMean: replayed.recordMsMean,
      },
      durationS: round((Date.now() - t0) / 1000, 1),
    };
    if (!o.json) {
      process.stdout.write(
        `\nsummary: evicted ${summary.evicted.length}/${results.length} hogs before the kernel OOM killer (kernel OOM kills: ${oomKills}); page-cache ramps spared ${summary.cacheRamps.spared}/${summary.cacheRamps.ramps}\n` +
          `  reaction (crossing -> kill sent) p50 ${summary.reactionP50Ms} ms, p99 ${summary.reactionP99Ms} ms; memory back p50 ${summary.freedP50Ms} ms, p99 ${summary.freedP99Ms} ms\n` +
          `  Guaranteed and Burstable pods survived: ${summary.protectedPodsSurvived}; agent idle CPU ${summary.idleCpuPercent}% of a core\n`,
      );
    }
    process.stdout.write(JSON.stringify({ summary }) + '\n');
    const cacheSpared = summary.cacheRamps.spared === summary.cacheRamps.ramps;
    return summary.evicted.length === results.length && oomKills === 0 && replayed.differences.length === 0 && cacheSpared ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    if (!o.json) process.stdout.write('demo: tearing down\n');
    await agent?.stop();
    await session.close();
  }
}
