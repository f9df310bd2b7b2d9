/**
 * The README's promise, one test per bad input: a wrong flag, config or scenario is refused at
 * start with ONE line on stderr naming the field and the value, exit status 2, no stack trace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from '../support/wait';
import { tempDir } from '../support/temp-dir';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');
const dir = tempDir('bad');
let n = 0;
const file = (text: string, ext = 'yaml') => {
  const p = path.join(dir, `f${n++}.${ext}`);
  fs.writeFileSync(p, text);
  return p;
};
// --notifications=none and a bad --metrics-address keep a run that slipped through from starting
const evictd = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 20_000 });

/** Exit 2, exactly one stderr line matching `line`, nothing on stdout, no stack frames. */
function refused(r: ReturnType<typeof evictd>, line: RegExp): void {
  assert.equal(r.status, 2, `status ${r.status}; stderr: ${r.stderr}`);
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, line);
  assert.doesNotMatch(r.stderr, /\n\s+at |TypeError|RangeError/);
  assert.equal(r.stdout, '');
}

test('run --config: a self-referencing YAML alias is refused in one line', () => {
  refused(
    evictd('run', '--config', file('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: &a\n  memory.available: *a\n')),
    /^evictd: .*evictionHard\["memory.available"\]: \{"memory.available":"\[circular\]"\}: must be a string/,
  );
});

test('run --config: a YAML alias used twice is fine until a value is wrong', () => {
  refused(
    evictd(
      'run',
      '--config',
      file('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: &h {memory.available: "-1Gi"}\nevictionSoft: *h\n'),
    ),
    /evictionHard\["memory.available"\]: "-1Gi": eviction threshold memory.available must be positive/,
  );
});

test('run --eviction-hard: a quantity no node can be above is refused (it would evict every pod)', () => {
  refused(
    evictd('run', '--eviction-hard=memory.available<91e934'),
    /^evictd: --eviction-hard\["memory.available"\]: "91e934": eviction threshold memory.available must be at most 9223372036854775807: no node has more$/,
  );
  refused(evictd('run', '--eviction-hard=nodefs.inodesFree<9223372036854775808'), /nodefs.inodesFree must be at most 9223372036854775807/);
});

test('run --config: a bare number where a quantity string belongs', () => {
  refused(
    evictd('run', '--config', file('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard:\n  memory.available: 100\n')),
    /evictionHard\["memory.available"\]: 100: must be a string/,
  );
});

test('run --config: a file that is not a KubeletConfiguration the kubelet decodes (no kind, another kind, another group or version) is refused naming the field', () => {
  refused(evictd('run', '--config', file('evictionHard:\n  memory.available: "1Gi"\n')), /: kind: null: expected KubeletConfiguration$/);
  refused(evictd('run', '--config', file('apiVersion: v1\nkind: ConfigMap\n')), /: kind: "ConfigMap": expected KubeletConfiguration$/);
  refused(
    evictd('run', '--config', file('apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n')),
    /: apiVersion: "kubeproxy.config.k8s.io\/v1alpha1": expected one of kubelet.config.k8s.io\/v1beta1, kubelet.config.k8s.io\/v1$/,
  );
  refused(evictd('run', '--config', file('kind: KubeletConfiguration\n')), /: apiVersion: null: expected one of/);
});

test('run --root-dir that is a file, and a --psi-trigger window the kernel would refuse', () => {
  refused(evictd('run', '--root-dir', file('x')), /^evictd: --root-dir: ".*": is not a directory$/);
  refused(evictd('run', '--psi-trigger', 'some 100000 200000'), /^evictd: --psi-trigger: "some 100000 200000": the window must be from 500000 to 10000000 us/);
  refused(evictd('run', '--psi-trigger', 'full 100000 20000000'), /the window must be from 500000 to 10000000 us/);
});

test('run --config: an empty or comment-only file', () => {
  for (const text of ['', '# nothing here\n', '---\n']) {
    const f = file(text);
    refused(evictd('run', '--config', f), new RegExp(`^evictd: --config: "${f.replace(/[.\\/]/g, '\\$&')}": is empty`));
  }
});

test('run --config: YAML that does not parse, and a duplicated key, are refused in one line', () => {
  refused(evictd('run', '--config', file('evictionHard: {memory.available: "1Gi"\n')), /^evictd: --config: ".*": not YAML or JSON: /);
  refused(
    evictd('run', '--config', file('evictionHard: {memory.available: "1Gi", memory.available: "2Gi"}\n')),
    /^evictd: --config: ".*": not YAML or JSON: key "memory\.available" given twice \(line 1\)$/,
  );
});

test('run: a duration that feeds a timer is refused past 2^31-1 ms', () => {
  refused(evictd('run', '--housekeeping-interval=600h'), /^evictd: --housekeeping-interval: "600h": must be at most 596h31m23.647s \(the longest timer\)$/);
  refused(evictd('run', '--release-timeout', '25d'), /^evictd: --release-timeout: "25d": time: unknown unit "d"/);
  refused(evictd('run', '--release-timeout', '597h'), /^evictd: --release-timeout: "597h": must be at most/);
});

test('run: --log-level names the choices it really takes', () => {
  refused(evictd('run', '--log-level=loud'), /^evictd: --log-level: "loud": must be one of trace, debug, info, warn, error, fatal, silent$/);
});

test('run: a bad flag value in a kubelet map flag names the flag', () => {
  refused(evictd('run', '--eviction-hard=memory.available<1Gi,memory.available'), /^evictd: --eviction-hard: "memory.available": malformed pair/);
  refused(evictd('run', '--enforce-node-allocatable=pods,pods'), /--enforce-node-allocatable: \["pods","pods"\]: duplicated enforcement "pods"/);
});

const NODE = '{memory: {availableBytes: "1Gi", workingSetBytes: "1Gi"}}';
const simulate = (yaml: string) => evictd('simulate', file(yaml));

test('simulate: negative quantities are refused with the path to the field', () => {
  refused(
    simulate(`steps:\n  - at: 0s\n    node: {memory: {availableBytes: "-1Gi", workingSetBytes: "1Gi"}}\n`),
    /^evictd: steps\[0\]\.node\.memory\.availableBytes: "-1Gi": must not be negative$/,
  );
  refused(
    simulate(`steps:\n  - at: 0s\n    pods: [{name: p, containers: [{name: c, usage: {memory: -5}}]}]\n`),
    /^evictd: steps\[0\]\.pods\[0\]\.containers\[0\]\.usage\.memory: -5: must not be negative$/,
  );
  refused(
    simulate(`steps:\n  - at: 0s\n    pods: [{name: p, containers: [{name: c, requests: {memory: "-1Mi"}}]}]\n`),
    /requests\.memory: "-1Mi": must not be negative/,
  );
});

test('simulate: available above capacity is refused', () => {
  refused(
    simulate(`steps:\n  - at: 0s\n  - at: 1s\n    node: {nodefs: {availableBytes: "21Gi", capacityBytes: "20Gi"}}\n`),
    /^evictd: steps\[1\]\.node\.nodefs\.availableBytes: "21Gi": above capacityBytes \(21474836480\)$/,
  );
  refused(simulate(`steps:\n  - node: {imagefs: {inodesFree: 11, inodes: 10}}\n`), /^evictd: steps\[0\]\.node\.imagefs\.inodesFree: 11: above inodes \(10\)$/);
  refused(simulate(`steps:\n  - node: {pid: {maxPID: 100, running: 101}}\n`), /^evictd: steps\[0\]\.node\.pid\.running: 101: above maxPID \(100\)$/);
});

test('simulate: two pods with the same namespace/name are refused', () => {
  refused(
    simulate(`steps:\n  - pods: [{name: a, containers: []}, {name: b}, {name: a, namespace: default}]\n`),
    /^evictd: steps\[0\]\.pods\[2\]: "default\/a": pod namespace\/name already given at steps\[0\]\.pods\[0\]$/,
  );
  // the same name in another namespace is another pod
  assert.equal(simulate(`steps:\n  - pods: [{name: a}, {name: a, namespace: other}]\n`).status, 0);
});

test('simulate: unknown fields (typos) are refused with their path', () => {
  refused(
    simulate(`steps:\n  - at: 0s\n  - at: 1s\n  - at: 2s\n  - at: 3s\n    node: {memory: {available: "1Gi"}}\n`),
    /^evictd: steps\[3\]\.node\.memory\.available: "1Gi": unknown field \(known: availableBytes, workingSetBytes\)$/,
  );
  refused(simulate(`step: []\n`), /^evictd: scenario\.step: \[\]: unknown field/);
  refused(
    simulate(`steps:\n  - pods: [{name: p, containers: [{name: c, usage: {memroy: 1}}]}]\n`),
    /steps\[0\]\.pods\[0\]\.containers\[0\]\.usage\.memroy: 1: unknown field/,
  );
  refused(simulate(`steps:\n  - pods: [{name: p, terminationGracePeriod: 5}]\n`), /steps\[0\]\.pods\[0\]\.terminationGracePeriod: 5: unknown field/);
  refused(simulate(`config: {evictionHardd: {}}\nsteps: []\n`), /^evictd: config\.evictionHardd: \{\}: unknown eviction field/);
});

test('simulate: quantities that overflow are refused, never Infinity', () => {
  refused(
    simulate(`steps:\n  - node: {memory: {availableBytes: "91e934", workingSetBytes: "1Gi"}}\n`),
    /^evictd: steps\[0\]\.node\.memory\.availableBytes: "91e934": too large: at most 9007199254740991/,
  );
  refused(simulate(`steps:\n  - node: {memory: {availableBytes: 1e400, workingSetBytes: "1Gi"}}\n`), /availableBytes: Infinity: invalid quantity/);
  refused(simulate(`steps:\n  - pods: [{name: p, containers: [{name: c, limits: {memory: "9Ei"}}]}]\n`), /limits\.memory: "9Ei": too large/);
});

test('simulate: a toleration the API server would refuse is refused', () => {
  refused(
    simulate(`steps:\n  - admit: [{name: p, tolerations: [{key: k, operator: Exist}]}]\n`),
    /^evictd: steps\[0\]\.admit\[0\]\.tolerations\[0\]\.operator: "Exist": must be one of Exists, Equal$/,
  );
  refused(simulate(`steps:\n  - admit: [{name: p, tolerations: [{value: v}]}]\n`), /tolerations\[0\]\.operator: "": must be Exists when key is empty/);
});

test('simulate: a self-referencing alias in a scenario is refused in one line', () => {
  refused(simulate(`config: &c\n  evictionHard: *c\nsteps: []\n`), /^evictd: config\.evictionHard\["evictionHard"\]: .*\[circular\].*: must be a string/);
  refused(simulate(`steps: &s\n  - pods: *s\n`), /^evictd: steps\[0\]\.pods\[0\]\.pods: .*unknown field/);
});

test('simulate: a containerfs threshold in config runs, with one warning naming it', () => {
  const r = simulate(`config: {evictionHard: {containerfs.available: "10%", nodefs.available: "5%"}}\nsteps: [{at: 0s, node: ${NODE}}]\n`);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^evictd: warning: config\.evictionHard\["containerfs\.available"\]: "10%": ignored: containerfs thresholds are derived/);
  assert.equal(r.stdout.trim().split('\n').length, 1);
});

test('run --standing-orders: only true or false', () => {
  refused(evictd('run', '--standing-orders=sometimes'), /^evictd: --standing-orders: "sometimes": must be true or false$/);
});

test('bench protect --pods: a count out of range, an empty list and an unknown flag are refused in one line', () => {
  refused(evictd('bench', 'protect', '--pods', '0,999'), /^evictd: --pods: "0,999": must be whole numbers from 0 to 300, comma separated$/);
  refused(evictd('bench', 'protect', '--pods=1.5'), /^evictd: --pods: "1.5": must be whole numbers from 0 to 300/);
  refused(evictd('bench', 'protect', '--pods', '10', '--trials', '0'), /^evictd: --trials: "0": must be a whole number from 1 to 100$/);
  refused(evictd('bench', 'protect', '--pods', '10', '--bogus'), /^evictd: bench protect --pods: unknown flag "--bogus"$/);
  refused(evictd('bench', 'memory-pressure', '--grace', 'soon'), /^evictd: --grace: "soon": must be a duration from 0s to 60s$/);
  refused(evictd('bench', 'memory-pressure', '--grace=-1s'), /^evictd: --grace: "-1s": must be a duration from 0s to 60s$/);
  refused(evictd('bench', 'memory-pressure', '--trials', '0'), /^evictd: --trials: "0": must be a whole number from 1 to 200$/);
  refused(evictd('bench', 'memory-pressure', '--bogus'), /^evictd: bench memory-pressure: unknown flag "--bogus"$/);
});

/** `evictd run` on the runtime's pods with no notifications, to its exit (killed after 15 s: status null). */
function runUntilExit(args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, 'run', '--pod-source=runtime', '--notifications=none', '--metrics-address=127.0.0.1:0', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (status) => {
      clearTimeout(kill);
      resolve({ status, stderr });
    });
  });
}

test('run: a start that fails half-way (the admission port in use, after the metrics server is up) exits at once', async () => {
  const held = net.createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  const port = (held.address() as net.AddressInfo).port;
  try {
    const t0 = Date.now();
    // A state dir of its own: on a machine where evictd once ran, /run/evictd is root's, and an
    // unprivileged run would be refused there before it reached the port this test is about.
    const stateDir = tempDir('halfway');
    const r = await runUntilExit([`--admission-address=127.0.0.1:${port}`, `--state-dir=${stateDir}`]);
    assert.equal(r.status, 2, `exit status (null: still running after 15 s, killed); stderr: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^evictd: --admission-address: "127.0.0.1:${port}": EADDRINUSE`, 'm'));
    assert.ok(Date.now() - t0 < 15_000);
  } finally {
    held.close();
  }
});

test('run --state-dir that others can write is refused (the brakes record would be theirs to forge)', () => {
  const open = tempDir('open');
  fs.chmodSync(open, 0o777);
  refused(evictd('run', `--state-dir=${open}`), new RegExp(`^evictd: --state-dir: "${open}": writable by others \\(mode 0777\\)$`));
});

/** `evictd run` with nothing to act on, until it has started; then `signals`, one after another. */
async function stopWith(signals: NodeJS.Signals[]): Promise<{ status: number | null; stdout: string }> {
  const state = tempDir('sig');
  const child = spawn(
    process.execPath,
    [
      bin,
      'run',
      '--dry-run',
      '--pod-source=runtime',
      '--notifications=none',
      '--metrics-address=127.0.0.1:0',
      '--container-runtime-endpoint=unix:///nonexistent/evictd.sock',
      `--state-dir=${state}`,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let stdout = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
  const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await new Promise<void>((resolve) =>
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('"evictd starting"')) resolve();
    }),
  );
  for (const s of signals) child.kill(s);
  const status = await exited;
  clearTimeout(kill);
  return { status, stdout };
}

test('run: SIGHUP, and a second SIGTERM while stopping, end in the same clean stop (exit 0), never the default death', async () => {
  const hup = await stopWith(['SIGHUP']);
  assert.equal(hup.status, 0, hup.stdout);
  assert.match(hup.stdout, /"signal":"SIGHUP","msg":"stopping"/);
  assert.match(hup.stdout, /"msg":"stopped"/);
  const twice = await stopWith(['SIGTERM', 'SIGTERM']);
  assert.equal(twice.status, 0, twice.stdout);
  assert.match(twice.stdout, /"msg":"stopped"/);
});

test('run under systemd (Type=notify): READY=1 once running, WATCHDOG=1 while the loop is alive, STOPPING=1 at stop', async () => {
  const sock = path.join(tempDir('notify'), 'notify.sock');
  // Node has no AF_UNIX datagram socket: Python (a stated prerequisite) plays systemd's side.
  const listener = spawn(
    'python3',
    [
      '-u',
      '-c',
      `import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint('bound',flush=True)\nwhile True:\n  print(repr(s.recv(4096).decode()),flush=True)`,
      sock,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let got = '';
  listener.stdout.on('data', (d: Buffer) => (got += d.toString()));
  try {
    await waitFor('the listener', () => got.includes('bound'), 10_000);
    const state = tempDir('sig');
    const child = spawn(
      process.execPath,
      [
        bin,
        'run',
        '--dry-run',
        '--pod-source=runtime',
        '--notifications=none',
        '--housekeeping-interval=100ms',
        '--metrics-address=127.0.0.1:0',
        '--container-runtime-endpoint=unix:///nonexistent/evictd.sock',
        `--state-dir=${state}`,
      ],
      {
        stdio: ['ignore', 'ignore', 'ignore'],
        env: { ...process.env, NOTIFY_SOCKET: sock, WATCHDOG_USEC: '400000' },
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
    await waitFor('READY=1 and a watchdog ping', () => got.includes('READY=1') && got.includes("'WATCHDOG=1'"), 15_000);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    await waitFor('STOPPING=1', () => got.includes("'STOPPING=1'"), 5000);
    assert.match(got, /'READY=1\\nSTATUS=watching \d+ thresholds'/);
  } finally {
    listener.kill();
  }
});

test("run: /admit TLS files that cannot serve (missing, or a key not the certificate's) are refused by flag, exit 2", async () => {
  const dir = tempDir('admit-tls');
  try {
    const f = (n: string) => path.join(dir, n);
    for (const n of ['a', 'b'])
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          f(`${n}.key`),
          '-out',
          f(`${n}.crt`),
          '-days',
          '1',
          '-subj',
          `/CN=${n}`,
        ],
        { stdio: 'pipe' },
      );
    const start = (tls: string[]) => runUntilExit(['--admission-address=127.0.0.1:0', ...tls, `--state-dir=${f('state')}`]);
    const mismatched = await start([
      '--admission-tls-cert-file',
      f('a.crt'),
      '--admission-tls-private-key-file',
      f('b.key'),
      '--admission-client-ca-file',
      f('a.crt'),
    ]);
    assert.equal(mismatched.status, 2, mismatched.stderr);
    assert.match(mismatched.stderr, new RegExp(`^evictd: --admission-tls-private-key-file: "${f('b.key')}": with --admission-tls-cert-file `, 'm'));
    assert.doesNotMatch(mismatched.stderr, /^\s+at /m, 'no stack trace');
    const missing = await start([
      '--admission-tls-cert-file',
      f('a.crt'),
      '--admission-tls-private-key-file',
      f('a.key'),
      '--admission-client-ca-file',
      f('nope.crt'),
    ]);
    assert.equal(missing.status, 2, missing.stderr);
    assert.match(missing.stderr, new RegExp(`^evictd: --admission-client-ca-file: "${f('nope.crt')}": no such file \\(ENOENT\\)$`, 'm'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
