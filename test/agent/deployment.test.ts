/**
 * The deployment as deployed: deploy/daemonset.yaml's container (src/lab/daemonset.ts) run on the
 * lab's containerd from the image it names, the one scripts/image.sh builds (imported with ctr,
 * as on a node without a registry), with its mounts, read-only root, dropped capabilities,
 * seccomp RuntimeDefault, host PID and network, and its args and config. What differs from a
 * cluster, and why:
 * - the image's way in: imported from the tarball, not pulled (no registry here); in the pure
 *   cgroup v2 lab the host builds it before the VM boots (the guest cannot download);
 * - the pod source: the runtime's (no API server here);
 * - the thresholds: flags over the ConfigMap's (the lab's node has 512 MiB), the lab's node
 *   cgroup, a free metrics port, and on cgroup v2 the memory brake on.
 * It shows: the probes' endpoint healthy; /metrics scraped, naming the image's Node 24 and the
 * addon loaded; each memory line watched by the kernel mechanism the node has, the eBPF tripwire
 * on cgroup v2 (loaded in the container, under the runtime's default seccomp profile), the memcg
 * threshold eventfd on v1, in the log and in evictd_memory_line_mechanism; on cgroup v2 a hog braked, the brake's record on the
 * state dir's host path outliving a killed container and the next container releasing it; a hog
 * evicted; and after containerd is killed and started again (a new socket in the mounted
 * directory), the running container reaching the runtime again: the next hog is evicted too.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import path from 'node:path';
import { containerConfig, sandboxConfig } from '../../src/lab/sandbox-config';
import { daemonSetToCri, type DaemonSetDoc } from '../../src/lab/daemonset';
import type { LabPod, NodeLab } from '../../src/lab/node-lab';
import { BRAKE_RECORD_FILE } from '../../src/agent/effects/brake-record';
import { cgroupMode, skipped } from '../support/environment';
import { waitFor } from '../support/wait';
import { docs } from '../kube/manifests';
import { evictdImage } from '../support/image';
import { AGENT_HARNESS_DIR, MiB, criClient, healthz, hog, missingE2e, newLab, releaseHarness, restartContainerd, sleeper } from './agent-harness';

const labs: NodeLab[] = [];
const cleanups: (() => Promise<void>)[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-deployment-'));
const containerLogs: string[] = [];
let passed = false;
after(async () => {
  // evictd's own log is inside the container: on a failure it is the only account of why.
  if (!passed)
    for (const f of containerLogs) if (fs.existsSync(f)) process.stderr.write(`--- ${path.basename(f)} (tail)\n${fs.readFileSync(f, 'utf8').slice(-12_000)}\n`);
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  for (const l of labs) await l.destroy().catch(() => undefined);
  await releaseHarness();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** The container's log (CRI format: "<time> <stream> <tag> <line>"), as evictd's JSON lines. */
function containerLog(file: string): Record<string, unknown>[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((l) => {
      const json = l.split(' ').slice(3).join(' ');
      try {
        return json.startsWith('{') ? [JSON.parse(json) as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
}

/**
 * HostToContainer propagation needs the host path on a shared (or slave) mount, as / is on a
 * systemd node; this machine's / is private, so the stand-in is bound onto itself and shared.
 */
function shared(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['--bind', dir, dir]);
  execFileSync('mount', ['--make-shared', dir]);
  cleanups.push(async () => {
    execFileSync('umount', ['-l', dir]);
  });
  return dir;
}

/** GET /metrics on 127.0.0.1:port: the exposition's text. */
function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/metrics', timeout: 5000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`/metrics: ${res.statusCode}`))));
      })
      .on('error', reject)
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy(new Error('/metrics: no answer in 5 s'));
      });
  });
}

/** The exposition's samples: name, labels, value. */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text.split('\n').flatMap((l) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(l);
    if (!m) return [];
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    return [{ name: m[1]!, labels, value: Number(m[3]) }];
  });
}

/** ctr on the harness's containerd, in the CRI's namespace. */
const ctr = (...args: string[]): string =>
  execFileSync('ctr', ['--address', path.join(AGENT_HARNESS_DIR, 'containerd.sock'), '--namespace', 'k8s.io', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 16 << 20,
  });

/** The image into the harness's containerd, as `ctr -n k8s.io images import` on a node; removed after the test. */
function importImage(): string {
  const { tarball, name } = evictdImage();
  ctr('images', 'import', tarball);
  cleanups.push(async () => {
    ctr('images', 'rm', '--sync', name);
  });
  return name;
}

/**
 * How the container runs, from the runtime and the kernel: the seccomp filter containerd wrote
 * for RuntimeDefault into its OCI spec, its process's /proc status, and whether that process
 * runs its root's /usr/local/bin/node.
 */
function confinement(id: string): { seccomp: { defaultAction: string; syscalls: { names: string[]; action: string }[] }; status: string; imageNode: boolean } {
  const spec = (JSON.parse(ctr('containers', 'info', id)) as { Spec: { linux: { seccomp: never } } }).Spec;
  const pid = taskPid(id);
  // (readlink of /proc/PID/exe names the file from where the reader stands, which varies.)
  const exe = fs.statSync(`/proc/${pid}/exe`);
  const own = fs.statSync(`/proc/${pid}/root/usr/local/bin/node`);
  return { seccomp: spec.linux.seccomp, status: fs.readFileSync(`/proc/${pid}/status`, 'utf8'), imageNode: exe.dev === own.dev && exe.ino === own.ino };
}

/** The host PID of a container's process. */
function taskPid(id: string): string {
  const pid = ctr('tasks', 'ls')
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[0] === id)?.[1];
  assert.ok(pid, `container ${id} has a task`);
  return pid;
}

/** A process's resident memory, MiB, from /proc/PID/status: all, anonymous, file pages. */
function resident(pid: string): string {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (field: string) => (Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) / 1024).toFixed(1);
  return `VmRSS ${mib('VmRSS')} MiB (anonymous ${mib('RssAnon')}, files ${mib('RssFile')}, shared ${mib('RssShmem')}); its container's memory cgroup ${cgroupMiB(pid)} MiB`;
}

/** What the memory cgroup of a process holds (its pages, the page cache it read, kernel memory), MiB. */
function cgroupMiB(pid: string): string {
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  const file = v1
    ? path.join('/sys/fs/cgroup/memory', v1.split(':')[2]!, 'memory.usage_in_bytes')
    : path.join('/sys/fs/cgroup', lines.find((l) => l.startsWith('0::'))!.slice(3), 'memory.current');
  return (Number(fs.readFileSync(file, 'utf8')) / 2 ** 20).toFixed(1);
}

/** Where the test is, for a run cut short (the lab's VM timeout prints nothing of a test in progress). */
const step = (what: string) => fs.appendFileSync(path.join(tmp, 'progress'), `${new Date().toISOString()} ${what}\n`);

const mkdir = (name: string) => {
  const d = path.join(tmp, name);
  fs.mkdirSync(d, { recursive: true });
  return d;
};

test("the DaemonSet's container from evictd's image on the lab's containerd: healthy, its memory lines on the node's kernel mechanism, its metrics scraped, braking and evicting, its brake record surviving a killed container, and the runtime reached again after containerd restarts", async (t) => {
  if (skipped(t, missingE2e())) return;
  const v2 = cgroupMode() === 'v2';
  const { client } = await criClient();
  const ds = docs('daemonset.yaml')[0] as DaemonSetDoc;
  step('importing the image');
  assert.equal(importImage(), ds.spec.template.spec.containers[0]!.image, 'the DaemonSet runs the image scripts/image.sh builds');
  step('image imported');
  const lab = await newLab('deployment', { memoryLimitBytes: 512 * MiB });
  labs.push(lab);
  const kept = await lab.runPod({ name: 'kept', namespace: 'shop', qos: 'Guaranteed', containers: [sleeper('app', 32 * MiB)] });

  const [cm] = docs('configmap.yaml');
  const configDir = mkdir('config');
  fs.writeFileSync(path.join(configDir, 'config.yaml'), cm.data['config.yaml']);
  const stateDir = path.join(tmp, 'state'); // created by the runtime for the mount, as hostPath DirectoryOrCreate would
  fs.mkdirSync(stateDir, { mode: 0o700 });
  const logDir = mkdir('evictd-pod-logs');
  const port = await freePort();
  const { pod, container } = daemonSetToCri(
    ds,
    {
      volumes: {
        config: configDir,
        cgroup: '/sys/fs/cgroup',
        'containerd-run': AGENT_HARNESS_DIR,
        'kubelet-root': shared(path.join(tmp, 'kubelet')),
        'pod-logs': mkdir('pods'),
        'containerd-root': shared(path.join(AGENT_HARNESS_DIR, 'root')),
        state: stateDir,
        tmp: mkdir('tmp'),
      },
      fieldRefs: { NODE_NAME: 'node-a', HOST_IP: '127.0.0.1' },
      replaceArgs: { '--pod-source=api': '--pod-source=runtime', '--metrics-address=$(HOST_IP):9741': `--metrics-address=$(HOST_IP):${port}` },
      extraArgs: [
        `--cgroup-root=${lab.root}`,
        '--eviction-hard=memory.available<128Mi',
        ...(v2
          ? ['--eviction-soft=memory.available<200Mi', '--eviction-soft-grace-period=memory.available=10m', '--memory-brake', '--memory-brake-max-duration=30s']
          : []),
      ],
    },
    { name: 'evictd', namespace: 'kube-system', uid: `evictd-${process.pid}` },
  );
  const sandbox = sandboxConfig({ ...pod, logDirectory: logDir });
  const sandboxId = await client.runPodSandbox(sandbox);
  cleanups.push(async () => {
    await client.stopPodSandbox(sandboxId);
    await client.removePodSandbox(sandboxId);
  });
  let attempt = 0;
  const start = async (): Promise<{ id: string; log: string }> => {
    const log = `evictd-${attempt}.log`;
    const id = await client.createContainer(sandboxId, containerConfig({ ...pod, attempt }, { ...container, logPath: log }), sandbox);
    attempt++;
    await client.startContainer(id);
    const file = path.join(logDir, log);
    containerLogs.push(file);
    await waitFor('the probe endpoint healthy', async () => (await healthz(port)) === 200, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${fs.existsSync(file) ? fs.readFileSync(file, 'utf8').slice(-3000) : 'no log'}`);
    });
    return { id, log: file };
  };
  step('starting the first container');
  const first = await start();
  step('first container healthy');

  // The image's node, under the RuntimeDefault filter (an allow list: bpf() allowed for a
  // container holding CAP_BPF), no new privileges.
  const conf = confinement(first.id);
  assert.ok(conf.imageNode, "the process runs the image's /usr/local/bin/node");
  assert.match(conf.status, /^Seccomp:\s+2$/m, 'a seccomp filter');
  assert.match(conf.status, /^NoNewPrivs:\s+1$/m);
  assert.equal(conf.seccomp.defaultAction, 'SCMP_ACT_ERRNO');
  assert.ok(
    conf.seccomp.syscalls.some((r) => r.action === 'SCMP_ACT_ALLOW' && r.names.includes('bpf')),
    'RuntimeDefault allows bpf() for CAP_BPF',
  );

  // Each memory line on the kernel mechanism this node has, loaded inside the container: the
  // tripwire's BPF program under the runtime's default seccomp profile on cgroup v2.
  const expected = v2 ? 'bpf-tripwire' : 'memcg-threshold-eventfd';
  const lines = () => containerLog(first.log).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('memory line '));
  await waitFor('the memory lines armed', () => lines().length > 0, 30_000);
  assert.deepEqual(
    lines().map((l) => `${String(l.line)}: ${String(l.mechanism)}`),
    lines().map((l) => `${String(l.line)}: ${expected}`),
    `each memory line on ${expected}`,
  );
  // Its footprint at idle, once the start's code pages are given back (docs/benchmarks.md):
  // said, not judged here; the race's RSS column is where it is compared.
  await waitFor(
    'the code pages of the start given back',
    () => containerLog(first.log).some((l) => l.msg === 'code pages of the start given back (MADV_PAGEOUT)'),
    60_000,
  );
  await delay(5000);
  t.diagnostic(`evictd in its image, idle, 5 s after giving back the start's code pages: ${resident(taskPid(first.id))}`);
  const metrics = samples(await scrape(port));
  const build = metrics.filter((m) => m.name === 'evictd_build_info');
  assert.equal(build.length, 1, 'evictd_build_info scraped');
  assert.match(build[0]!.labels.nodejs_version ?? '', /^v24\./, "the image's Node 24");
  assert.equal(build[0]!.labels.addon, 'loaded');
  const inForce = metrics.filter((m) => m.name === 'evictd_memory_line_mechanism' && m.value === 1);
  assert.ok(inForce.length > 0, 'evictd_memory_line_mechanism in force for the lines');
  assert.deepEqual(
    inForce.map((m) => `${m.labels.line}: ${m.labels.mechanism}`),
    inForce.map((m) => `${m.labels.line}: ${expected}`),
  );

  const hogPod = async (name: string): Promise<LabPod> => lab.runPod({ name, namespace: 'shop', qos: 'BestEffort', containers: [hog(100, 700)] });
  const one = await hogPod('hog-1');
  if (v2) {
    // Braked at the soft line (its grace period is long): memory.high set, the record on the host path.
    const high = () => fs.readFileSync(path.join(lab.memoryDir(one.cgroupPath), 'memory.high'), 'utf8').trim();
    await waitFor('the brake', () => high() !== 'max', 20_000);
    assert.ok(fs.existsSync(path.join(stateDir, BRAKE_RECORD_FILE)), "the brake's record on the state dir's host path");
    // The container is killed (an OOM kill, a node problem): the brake stays, so does its record.
    step('brake on; killing the first container');
    await client.stopContainer(first.id, 0);
    step('first container killed');
    assert.notEqual(high(), 'max');
    assert.ok(fs.existsSync(path.join(stateDir, BRAKE_RECORD_FILE)));
    const second = await start();
    step('second container healthy');
    await waitFor(
      "the previous container's brake released",
      () => containerLog(second.log).some((l) => typeof l.msg === 'string' && l.msg.startsWith('memory brake from a previous run')),
      20_000,
    );
  }
  // The hard line: the hog is evicted, the Guaranteed pod stays.
  await waitFor('hog-1 evicted', async () => !(await lab.sandboxReady(one)), 60_000);
  assert.equal(await lab.sandboxReady(kept), true);

  // containerd killed and started again: a new socket in the mounted directory. The container
  // (its shim lives on) reaches the new runtime: the next hog is evicted as well.
  step('hog-1 evicted; restarting containerd');
  await restartContainerd();
  step('containerd restarted');
  const two = await hogPod('hog-2');
  await waitFor('hog-2 evicted after the runtime restarted', async () => !(await lab.sandboxReady(two)), 60_000);
  assert.equal(await lab.sandboxReady(kept), true);
  assert.equal(await healthz(port), 200);
  passed = true;
});
