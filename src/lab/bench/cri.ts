/**
 * `evictd bench cri`: latency of each CRI call evictd makes, and of a whole eviction (stop the
 * containers, stop the sandbox, memory back in the node's pod cgroup), over N pods that each
 * hold 64 MiB, on a real containerd (the harness, brought up if needed, or --endpoint).
 * Baseline: Version, the cheapest round trip, measured in the same run.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { CriClient, evictPod, type EvictError, type EvictResult } from '../../cri';
import { containerConfig, sandboxConfig, type SandboxSpec } from '../sandbox-config';
import { ensureHarness, HARNESS_CGROUP, IMAGES, type Harness } from '../harness';
import { badValue, UsageError } from '../../errors';

const MiB = 1024 * 1024;
const HOG_MIB = 64;
const LABEL = 'evictd.bench/run';
const BENCH_DIR = '/run/evictd-harness-bench';
const BENCH_CGROUP = '/evictd-bench';

interface Row {
  name: string;
  n: number;
  p50: number;
  p99: number;
  max: number;
}

function row(name: string, samples: number[]): Row {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
  return { name, n: s.length, p50: at(50), p99: at(99), max: s[s.length - 1] ?? NaN };
}

async function timed<T>(samples: number[], fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const v = await fn();
  samples.push(performance.now() - t);
  return v;
}

/** The node-level pod cgroup's memory usage file (v1 memory controller, else cgroup2). */
function nodeUsageFile(cgroup: string): string {
  const v1 = `/sys/fs/cgroup/memory${cgroup}/memory.usage_in_bytes`;
  if (fs.existsSync(v1)) return v1;
  for (const root of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup']) {
    const f = `${root}${cgroup}/memory.current`;
    if (fs.existsSync(f)) return f;
  }
  throw new Error(`no memory usage file for cgroup ${cgroup}`);
}

const readUsage = (file: string) => Number(fs.readFileSync(file, 'utf8').trim());

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: argv,
      options: {
        pods: { type: 'string' },
        rounds: { type: 'string' },
        endpoint: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    throw new UsageError(`bench cri: ${(e as Error).message}`);
  }
  if (values.help) {
    process.stdout.write(
      'usage: evictd bench cri [--pods N] [--rounds N] [--endpoint unix:///path] [--json]\n\n' +
        'p50/p99 of each CRI call and of a whole eviction over N pods (default 20) holding 64 MiB each,\n' +
        'on the harness containerd (scripts/harness.sh; started and stopped if not running) or --endpoint.\n',
    );
    return 0;
  }
  const pods = values.pods === undefined ? 20 : Number(values.pods);
  if (!Number.isInteger(pods) || pods < 1 || pods > 200) throw badValue('--pods', values.pods, 'must be a whole number from 1 to 200');
  const rounds = values.rounds === undefined ? 50 : Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw badValue('--rounds', values.rounds, 'must be a whole number >= 1');

  // By default a private harness and pod cgroup: 20 pods x 64 MiB must not land in the cgroup
  // an agent or demo on the shared harness is watching, and their pods must not skew ours.
  let harness: Harness | undefined;
  let endpoint = values.endpoint;
  let cgroup = HARNESS_CGROUP;
  if (endpoint === undefined) {
    harness = await ensureHarness(BENCH_DIR, BENCH_CGROUP);
    endpoint = harness.endpoint;
    cgroup = harness.cgroup;
  }
  const client = CriClient.connect(endpoint, { timeoutMs: 30_000 });
  const runId = `${process.pid}-${Date.now().toString(36)}`;
  const samples: Record<string, number[]> = {};
  const s = (name: string) => (samples[name] ??= []);
  try {
    await client.version();
    const specs: SandboxSpec[] = [];
    const sandboxes: string[] = [];
    const containers: string[] = [];
    for (let i = 0; i < pods; i++) {
      const uid = `bench-${runId}-${i}`;
      const spec: SandboxSpec = {
        name: `bench-${i}`,
        uid,
        namespace: 'evictd-bench',
        cgroupParent: `${cgroup}/burstable/pod${uid}`,
        labels: { [LABEL]: runId },
      };
      specs.push(spec);
      const sb = await timed(s('RunPodSandbox'), () => client.runPodSandbox(sandboxConfig(spec)));
      sandboxes.push(sb);
      const cfg = containerConfig(spec, {
        name: 'hog',
        image: IMAGES.hog,
        args: ['2000', String(HOG_MIB)],
        memoryLimitBytes: 2 * HOG_MIB * MiB,
        labels: { [LABEL]: runId },
      });
      const id = await timed(s('CreateContainer'), () => client.createContainer(sb, cfg, sandboxConfig(spec)));
      await timed(s('StartContainer'), () => client.startContainer(id));
      containers.push(id);
    }
    // Every hog must hold its memory before anything is measured.
    const file = nodeUsageFile(cgroup);
    const end = Date.now() + 60_000;
    for (;;) {
      const stats = await client.listContainerStats({ labelSelector: { [LABEL]: runId } }).catch(() => []);
      const full = stats.filter((c) => (c.memory?.workingSetBytes?.value ?? 0) >= HOG_MIB * MiB).length;
      if (full === pods) break;
      if (Date.now() > end) throw new Error(`only ${full} of ${pods} hogs reached ${HOG_MIB} MiB within 60 s`);
      await new Promise((r) => setTimeout(r, 100));
    }

    for (let r = 0; r < rounds; r++) {
      const sb = sandboxes[r % pods] as string;
      const id = containers[r % pods] as string;
      await timed(s('Version'), () => client.version());
      await timed(s('Status'), () => client.status());
      await timed(s('ListPodSandbox'), () => client.listPodSandbox());
      await timed(s('PodSandboxStatus'), () => client.podSandboxStatus(sb));
      await timed(s('ListContainers'), () => client.listContainers());
      await timed(s('ContainerStatus'), () => client.containerStatus(id));
      await timed(s('ContainerStats'), () => client.containerStats(id));
      await timed(s('ListContainerStats'), () => client.listContainerStats());
      await timed(s('PodSandboxStats'), () => client.podSandboxStats(sb));
      await timed(s('ListPodSandboxStats'), () => client.listPodSandboxStats());
      await timed(s('ListPodSandboxStats via container stats'), () => client.listPodSandboxStatsFromContainers());
      await timed(s('ListImages'), () => client.listImages());
      await timed(s('ImageStatus'), () => client.imageStatus(IMAGES.hog));
      await timed(s('ImageFsInfo'), () => client.imageFsInfo());
    }

    // Evictions, one pod at a time, as the agent does under pressure. The memory is "back" when
    // the node-level pod cgroup's usage has dropped by 90% of what the pod held.
    for (let i = 0; i < pods; i++) {
      const sb = sandboxes[i] as string;
      const before = readUsage(file);
      const target = before - 0.9 * HOG_MIB * MiB;
      const t0 = performance.now();
      let backAt = 0;
      const poll = setInterval(() => {
        if (!backAt && readUsage(file) <= target) backAt = performance.now();
      }, 1);
      let r: EvictResult;
      try {
        r = await evictPod(client, sb, 0, { remove: false });
      } catch (err) {
        clearInterval(poll);
        throw new Error(`eviction of pod ${i} failed at ${(err as EvictError).step}: ${(err as Error).message}`, { cause: err });
      }
      const wait = Date.now() + 5000;
      while (!backAt && Date.now() < wait) {
        if (readUsage(file) <= target) backAt = performance.now();
        else await new Promise((res) => setTimeout(res, 1));
      }
      clearInterval(poll);
      s('evict: StopContainer (grace 0)').push(r.timings.stopContainersMs);
      s('evict: StopPodSandbox').push(r.timings.stopSandboxMs);
      s('evict: whole (list+stop+stop sandbox)').push(r.timings.totalMs);
      if (backAt) s('evict: memory back in node cgroup').push(backAt - t0);
      await timed(s('RemovePodSandbox'), () => client.removePodSandbox(sb));
    }
  } finally {
    const left = await client.listPodSandbox({ labelSelector: { [LABEL]: runId } }).catch(() => []);
    for (const p of left) await client.removePodSandbox(p.id).catch(() => undefined);
    client.close();
    await harness?.release();
  }

  const rows = Object.entries(samples).map(([name, v]) => row(name, v));
  const base = rows.find((r) => r.name === 'Version');
  if (values.json) {
    process.stdout.write(JSON.stringify({ pods, rounds, endpoint, baseline: 'Version', rows }, null, 2) + '\n');
    return 0;
  }
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
  const lines = [`CRI latency on ${endpoint}: ${pods} pods x ${HOG_MIB} MiB, ${rounds} rounds per call (ms)`, ''];
  lines.push(`${'call'.padEnd(40)} ${'n'.padStart(4)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'max'.padStart(8)} ${'p50/baseline'.padStart(13)}`);
  for (const r of rows) {
    const ratio = base ? `${(r.p50 / base.p50).toFixed(1)}x` : '-';
    lines.push(`${r.name.padEnd(40)} ${String(r.n).padStart(4)} ${f(r.p50).padStart(8)} ${f(r.p99).padStart(8)} ${f(r.max).padStart(8)} ${ratio.padStart(13)}`);
  }
  lines.push('', 'baseline: Version (one round trip, no runtime work). p99 of n=20 is the slowest sample.');
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}
