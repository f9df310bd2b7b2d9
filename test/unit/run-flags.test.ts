import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseFlags, settingsFromFlags } from '../../src/cli/run';
import { UsageError } from '../../src/errors';
import { FLAG_GROUPS, FLAG_NAMES, runUsage } from '../../src/cli/run-flags';
import { tempDir } from '../support/temp-dir';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');

test('defaults: the kubelet defaults, root cgroup, kubepods, 10 s housekeeping, metrics on loopback', () => {
  const s = settingsFromFlags(parseFlags([]));
  assert.equal(s.cgroupRoot, '/');
  assert.equal(s.podCgroupRoot, '/kubepods');
  assert.equal(s.housekeepingIntervalMs, 10_000);
  assert.deepEqual(s.metrics, { host: '127.0.0.1', port: 9741 });
  assert.equal(s.dryRun, false);
  assert.equal(s.fastKill, true);
  assert.equal(s.endpoint, 'unix:///run/containerd/containerd.sock');
  const hard = s.policy.thresholds.filter((t) => t.kind === 'hard').map((t) => `${t.signal}<${t.value.text}`);
  assert.ok(hard.includes('memory.available<100Mi'), hard.join(','));
  assert.ok(hard.includes('nodefs.available<10%'));
});

test('kubelet-style flags, both --flag value and --flag=value, booleans', () => {
  const s = settingsFromFlags(
    parseFlags([
      '--eviction-hard=memory.available<200Mi',
      '--eviction-soft',
      'memory.available<300Mi',
      '--eviction-soft-grace-period=memory.available=30s',
      '--cgroup-root',
      '/node-a',
      '--housekeeping-interval=250ms',
      '--dry-run',
      '--fast-kill=false',
      '--metrics-address',
      '[::1]:0',
      '--psi-trigger',
      'none',
    ]),
  );
  assert.equal(s.cgroupRoot, '/node-a');
  assert.equal(s.podCgroupRoot, '/node-a/kubepods');
  assert.equal(s.housekeepingIntervalMs, 250);
  assert.equal(s.dryRun, true);
  assert.equal(s.fastKill, false);
  assert.equal(s.psi, null);
  assert.deepEqual(s.metrics, { host: '::1', port: 0 });
  const soft = s.policy.thresholds.find((t) => t.kind === 'soft')!;
  assert.equal(soft.value.text, '300Mi');
  assert.equal(soft.gracePeriodNs, 30e9);
});

test('a kubelet config file works as is; flags win over it', () => {
  const dir = tempDir('run');
  const file = path.join(dir, 'kubelet.yaml');
  fs.writeFileSync(
    file,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'evictionHard:',
      '  memory.available: "500Mi"',
      '  pid.available: "10%"',
      'evictionPressureTransitionPeriod: 30s',
    ].join('\n'),
  );
  const fromFile = settingsFromFlags(parseFlags(['--config', file]));
  assert.deepEqual(fromFile.policy.thresholds.map((t) => `${t.signal}<${t.value.text}`).sort(), [
    'allocatableMemory.available<500Mi',
    'memory.available<500Mi',
    'pid.available<10%',
  ]);
  assert.equal(fromFile.policy.pressureTransitionPeriodNs, 30e9);
  const overridden = settingsFromFlags(parseFlags(['--config', file, '--eviction-hard', 'memory.available<1Gi']));
  assert.ok(overridden.policy.thresholds.some((t) => t.signal === 'memory.available' && t.value.text === '1Gi'));
  assert.ok(!overridden.policy.thresholds.some((t) => t.signal === 'pid.available'));
  fs.rmSync(dir, { recursive: true });
});

test('bad input: one UsageError naming the flag and the value', () => {
  const cases: [string[], RegExp][] = [
    [['--eviction-hard', 'memory.available<lots'], /memory\.available.*"lots"/],
    [['--housekeeping-interval', '10'], /--housekeeping-interval: "10"/],
    [['--housekeeping-interval', '-1s'], /--housekeeping-interval: "-1s"/],
    [['--cgroup-root', 'relative'], /--cgroup-root: "relative": must be an absolute/],
    [['--pod-cgroup-root', '/a/../b'], /--pod-cgroup-root/],
    [['--metrics-address', 'localhost'], /--metrics-address: "localhost"/],
    [['--log-level', 'loud'], /--log-level: "loud"/],
    [['--psi-trigger', 'some 1'], /--psi-trigger: "some 1"/],
    [['--notifications', 'maybe'], /--notifications: "maybe"/],
    [['--pod-source', 'etcd'], /--pod-source: "etcd"/],
    [['--config', '/nonexistent/kubelet.yaml'], /--config: "\/nonexistent\/kubelet.yaml": no such file \(ENOENT\)$/],
    [['--dry-run=perhaps'], /--dry-run: "perhaps"/],
    [['--eviction-hard'], /--eviction-hard: needs a value/],
    [['--frobnicate'], /unknown flag --frobnicate/],
    [['positional'], /unexpected argument "positional"/],
  ];
  for (const [argv, re] of cases) {
    assert.throws(
      () => settingsFromFlags(parseFlags(argv)),
      (err: unknown) => err instanceof UsageError && re.test(err.message) && !err.message.includes('\n'),
      argv.join(' '),
    );
  }
});

test('--notifications: kernel by default; poll and none accepted; anything else refused by name', () => {
  assert.equal(settingsFromFlags(parseFlags([])).notifications, 'kernel');
  for (const mode of ['kernel', 'poll', 'none'] as const) assert.equal(settingsFromFlags(parseFlags([`--notifications=${mode}`])).notifications, mode);
  for (const bad of ['bpf', 'Poll', '']) {
    assert.throws(
      () => settingsFromFlags(parseFlags(['--notifications', bad])),
      (err: unknown) => err instanceof UsageError && err.message === `--notifications: ${JSON.stringify(bad)}: must be kernel, poll or none`,
      bad,
    );
  }
  const cli = spawnSync(process.execPath, [bin, 'run', '--notifications', 'bpf'], { encoding: 'utf8' });
  assert.equal(cli.status, 2);
  assert.equal(cli.stderr.trim(), 'evictd: --notifications: "bpf": must be kernel, poll or none');
  const help = spawnSync(process.execPath, [bin, 'run', '--help'], { encoding: 'utf8' });
  assert.match(
    help.stdout.replace(/\n {8}/g, ' '),
    /^ {2}--notifications MODE\b.*\bpoll \(memory lines on the adaptive poller, no BPF/m,
    'the description, its wrapped lines joined',
  );
});

test('evictd run --help and a bad flag through the real binary', () => {
  const help = spawnSync(process.execPath, [bin, 'run', '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0);
  for (const f of [
    '--config',
    '--eviction-hard',
    '--container-runtime-endpoint',
    '--cgroup-root',
    '--pod-cgroup-root',
    '--housekeeping-interval',
    '--dry-run',
    '--metrics-address',
    '--log-level',
  ])
    assert.match(help.stdout, new RegExp(`^  ${f}\\b`, 'm'));
  const bad = spawnSync(process.execPath, [bin, 'run', '--eviction-hard', 'memory.available<x'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
  assert.doesNotMatch(bad.stderr, /\n\s+at /);
});

test('--realtime-priority: off by default, 1-99 accepted, anything else refused by name', () => {
  assert.equal(settingsFromFlags(parseFlags([])).realtimePriority, 0);
  assert.equal(settingsFromFlags(parseFlags(['--realtime-priority=10'])).realtimePriority, 10);
  for (const bad of ['100', '-1', 'high', '1.5']) {
    assert.throws(
      () => settingsFromFlags(parseFlags([`--realtime-priority=${bad}`])),
      (e: unknown) => e instanceof UsageError && e.message.includes('--realtime-priority') && e.message.includes(bad),
    );
  }
});

test('--standing-orders: on by default, off with =false, on with the bare flag', () => {
  assert.equal(settingsFromFlags(parseFlags([])).standingOrders, true);
  assert.equal(settingsFromFlags(parseFlags(['--standing-orders=false'])).standingOrders, false);
  assert.equal(settingsFromFlags(parseFlags(['--standing-orders'])).standingOrders, true);
  // An order kills through the pod's cgroup: no fast kill, no orders; both asked for is refused.
  assert.equal(settingsFromFlags(parseFlags(['--fast-kill=false'])).standingOrders, false);
  assert.throws(
    () => settingsFromFlags(parseFlags(['--fast-kill=false', '--standing-orders'])),
    (err: unknown) => err instanceof UsageError && /^--standing-orders: true: needs --fast-kill/.test(err.message),
  );
  assert.throws(
    () => parseFlags(['--standing-orders=1']),
    (err: unknown) => err instanceof UsageError && /^--standing-orders: "1": must be true or false$/.test(err.message),
  );
});

test('--admission-address: loopback or a unix socket as is; beyond loopback only with all three TLS files', () => {
  const a = (argv: string[]) => settingsFromFlags(parseFlags(argv)).admission;
  assert.equal(a([]), null);
  assert.deepEqual(a(['--admission-address', '127.0.0.1:9742']), { host: '127.0.0.1', port: 9742, tls: null });
  assert.deepEqual(a(['--admission-address', '[::1]:9742']), { host: '::1', port: 9742, tls: null });
  assert.deepEqual(a(['--admission-address', 'unix:/run/evictd/admit.sock']), { path: '/run/evictd/admit.sock' });
  const tls = ['--admission-tls-cert-file', '/c.pem', '--admission-tls-private-key-file', '/k.pem', '--admission-client-ca-file', '/ca.pem'];
  assert.deepEqual(a(['--admission-address', '10.0.0.5:9742', ...tls]), {
    host: '10.0.0.5',
    port: 9742,
    tls: { certFile: '/c.pem', keyFile: '/k.pem', clientCaFile: '/ca.pem' },
  });
  const cases: [string[], RegExp][] = [
    [['--admission-address', '0.0.0.0:9742'], /^--admission-address: "0\.0\.0\.0:9742": beyond loopback \/admit needs TLS with client certificates/],
    [['--admission-address', ':9742'], /^--admission-address: ":9742": beyond loopback/],
    [['--admission-address', '10.0.0.5:9742', ...tls.slice(0, 4)], /^--admission-address: "10\.0\.0\.5:9742": TLS needs --admission-client-ca-file too/],
    [['--admission-address', 'unix:admit.sock'], /^--admission-address: "unix:admit\.sock": a unix socket takes an absolute path/],
    [['--admission-address', 'unix:/a.sock', ...tls], /^--admission-tls-cert-file: "\/c\.pem": a unix socket takes no TLS/],
    [tls, /^--admission-tls-cert-file: "\/c\.pem": needs --admission-address/],
    [['--admission-address', 'nonsense'], /^--admission-address: "nonsense": expected HOST:PORT or unix:PATH/],
  ];
  for (const [argv, re] of cases) {
    assert.throws(
      () => a(argv),
      (err: unknown) => err instanceof UsageError && re.test(err.message.replace(/^evictd: /, '')) && !err.message.includes('\n'),
      `${argv.join(' ')}`,
    );
  }
});

test('a key given twice in the config file is refused naming the key, as the kubelet decoder does', () => {
  const dir = tempDir('dup');
  try {
    const file = path.join(dir, 'kubelet.yaml');
    fs.writeFileSync(
      file,
      'kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nevictionHard:\n  memory.available: 100Mi\nevictionHard: {}\n',
    );
    assert.throws(
      () => settingsFromFlags(parseFlags(['--config', file])),
      (err: unknown) =>
        err instanceof UsageError && err.message === `--config: ${JSON.stringify(file)}: not YAML or JSON: key "evictionHard" given twice (line 5)`,
    );
    fs.writeFileSync(
      file,
      '{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1", "evictionHard": {"memory.available": "1Gi", "memory.available": "2Gi"}}',
    );
    assert.throws(() => settingsFromFlags(parseFlags(['--config', file])), /key "memory\.available" given twice \(line 1\)$/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an unknown flag names the one meant when it is near enough, and no guess otherwise', () => {
  const refused = (argv: string[]) => {
    try {
      settingsFromFlags(parseFlags(argv));
    } catch (err) {
      return (err as Error).message;
    }
    return '';
  };
  assert.equal(refused(['--eviction-hrad=memory.available<1Gi']), 'run: unknown flag --eviction-hrad (did you mean --eviction-hard?) (see evictd run --help)');
  assert.match(refused(['--dryrun']), /did you mean --dry-run\?/);
  assert.match(refused(['--kubeconfg', 'x']), /did you mean --kubeconfig\?/);
  assert.match(refused(['--realtime', '1']), /did you mean --realtime-priority\?/, 'the only flag it begins');
  assert.equal(refused(['--frobnicate']), 'run: unknown flag --frobnicate (see evictd run --help)', 'no guess when nothing is near');
});

test('run --help: every flag in exactly one section, no line over 100 columns', () => {
  const grouped = FLAG_GROUPS.flatMap((g) => g.flags);
  assert.deepEqual([...grouped].sort(), [...FLAG_NAMES].sort(), 'every flag in a section, and only flags');
  assert.equal(new Set(grouped).size, grouped.length, 'no flag in two sections');
  const text = runUsage();
  for (const line of text.split('\n')) assert.ok(line.length <= 100, `over 100 columns: ${line}`);
  for (const name of FLAG_NAMES) assert.match(text, new RegExp(`^  --${name}\\b`, 'm'));
});
