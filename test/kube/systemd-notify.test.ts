/**
 * `evictd run` under a unit of Type=notify on a node where the native addon did not load: it
 * still tells systemd it is ready (and stopping), through systemd-notify, and says why. evictd
 * runs with the unit's capability bounding set (so systemd-notify cannot pass its parent's pid
 * off as the sender: it needs CAP_SYS_ADMIN for that). A receiver on $NOTIFY_SOCKET does what
 * systemd does with each datagram, late (a busy manager): it takes the sender's pid from the
 * credentials and looks up its cgroup; a sender gone by then would be dropped by systemd. It
 * also honours BARRIER=1 as systemd does (closing the fd it carries, once read).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { NO_ADDON_REQUIRE } from '../support/no-addon';
import { skipped } from '../support/environment';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');

// systemd's side: SO_PASSCRED; each datagram read LATE_S after the last, then the sender's cgroup
// as systemd reads it (/proc/PID/cgroup); any fd it carries (BARRIER=1's) closed. One JSON line
// per datagram.
const RECEIVER = `
import array, json, os, socket, struct, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(sys.argv[1])
print(json.dumps({"listening": True}), flush=True)
def cgroup(pid):
    try:
        with open("/proc/%d/cgroup" % pid) as f: return f.read().strip()
    except OSError:
        return None
while True:
    time.sleep(float(sys.argv[2]))
    msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12) + socket.CMSG_SPACE(4 * 8))
    pid, fds = None, []
    for (lvl, typ, d) in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS: pid = struct.unpack("iII", d[:12])[0]
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS: fds = array.array("i", d[: len(d) - len(d) % 4]).tolist()
    print(json.dumps({"fields": msg.decode().split("\\n"), "pid": pid, "cgroup": cgroup(pid)}), flush=True)
    for fd in fds: os.close(fd)
`;
const LATE_S = 1;

type Datagram = { fields: string[]; pid: number; cgroup: string | null };

function lines(stream: NodeJS.ReadableStream, onLine: (l: Record<string, unknown>) => void): void {
  readline.createInterface({ input: stream }).on('line', (line) => {
    try {
      onLine(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not a JSON line
    }
  });
}

test('without the native addon, under Type=notify: READY=1 and STOPPING=1 reach systemd through systemd-notify, from a sender still in the unit when systemd reads it; the log says why', async (t) => {
  const python = spawnSync('python3', ['--version']).status === 0;
  const notify = spawnSync('systemd-notify', ['--help']).status === 0;
  const root = process.getuid?.() === 0;
  const missing = !root ? "needs root (to run evictd with the unit's capability bounding set)" : !python ? 'python3 is not installed (the receiver)' : null;
  if (skipped(t, missing ?? (!notify ? 'systemd-notify is not installed (package systemd)' : null))) return;
  const unitFile = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'deploy', 'evictd.service'), 'utf8');
  assert.match(unitFile, /^NotifyAccess=all$/m, 'the shipped unit takes notifications from the fallback');
  // CapabilityBoundingSet=CAP_KILL CAP_SYS_NICE ... -> setpriv's -all,+kill,+sys_nice,...
  const caps = /^CapabilityBoundingSet=(.+)$/m
    .exec(unitFile)![1]!
    .split(/\s+/)
    .map((c) => `+${c.replace(/^CAP_/, '').toLowerCase()}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-notify-'));
  const socketPath = path.join(dir, 'notify.sock');
  const receiver = spawn('python3', ['-c', RECEIVER, socketPath, String(LATE_S)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const datagrams: Datagram[] = [];
  await new Promise<void>((resolve, reject) => {
    lines(receiver.stdout!, (l) => (l.listening ? resolve() : datagrams.push(l as unknown as Datagram)));
    receiver.once('exit', (code) => reject(new Error(`the receiver exited ${code}`)));
  });
  const child = spawn(
    'setpriv',
    [
      `--bounding-set=-all,${caps.join(',')}`,
      '--',
      process.execPath,
      ...NO_ADDON_REQUIRE,
      bin,
      'run',
      '--pod-source=runtime',
      '--container-runtime-endpoint=unix:///nonexistent/evictd-test.sock',
      '--metrics-address=127.0.0.1:0',
      `--state-dir=${path.join(dir, 'state')}`,
      '--lock-memory=false',
      '--realtime-priority=0',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NOTIFY_SOCKET: socketPath } },
  );
  t.after(() => {
    child.kill('SIGKILL');
    receiver.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const log: Record<string, unknown>[] = [];
  lines(child.stdout!, (l) => log.push(l));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async <T>(what: string, get: () => T | undefined, ms: number, whileRunning = true): Promise<T> => {
    const until = Date.now() + ms;
    for (;;) {
      const v = get();
      if (v !== undefined) return v;
      if (Date.now() > until || (whileRunning && child.exitCode !== null))
        throw new Error(`${what}: not within ${ms} ms (evictd exit ${child.exitCode}); log: ${log.map((l) => l.msg).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const ready = await waitFor('READY=1', () => datagrams.find((d) => d.fields.includes('READY=1')), 30_000);
  const unit = fs.readFileSync(`/proc/${child.pid}/cgroup`, 'utf8').trim();
  assert.equal(ready.cgroup, unit, `read ${LATE_S} s after it was sent, the sender is still there, in evictd's cgroup (the unit's)`);
  assert.notEqual(ready.pid, child.pid, 'not from the main process: the unit needs NotifyAccess=all');
  assert.match(ready.fields.find((f) => f.startsWith('STATUS=')) ?? '', /^STATUS=watching \d+ thresholds$/);
  const why = log.find((l) => typeof l.msg === 'string' && l.msg.includes('notified through systemd-notify'));
  assert.ok(why, 'the fallback is said');
  assert.equal(why.level, 40, 'at warn');
  assert.match(String(why.err), /hidden by test\/support\/no-addon/, "with the addon's load error");
  assert.equal(log.filter((l) => l.msg === why.msg).length, 1, 'said once');
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  const stopping = await waitFor('STOPPING=1', () => datagrams.find((d) => d.fields.includes('STOPPING=1')), 10_000, false);
  assert.equal(stopping.cgroup, unit, 'STOPPING=1 attributable too');
});
