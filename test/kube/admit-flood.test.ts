/**
 * 300 stalled 1 MB uploads to /admit against a real `evictd run` (issue 33): it stays up, its
 * peak RSS stays far under the DaemonSet's 256Mi limit, and /healthz and its passes go on
 * meanwhile. No runtime is needed: the agent runs (and passes) with its runtime down, and says
 * so apart: /livez ok, /readyz not.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const bin = path.join(__dirname, '..', '..', '..', 'bin', 'evictd.js');
const UPLOADS = 300;

const kib = (pid: number, field: 'VmRSS' | 'VmHWM'): number =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

function get(url: string): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - t0 }));
      })
      .on('error', reject);
  });
}

test(`${UPLOADS} stalled 1 MB uploads to /admit: evictd stays up, its RSS bounded, /healthz and its passes on time`, async (t) => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-admit-flood-'));
  const child = spawn(
    process.execPath,
    [
      bin,
      'run',
      '--pod-source=runtime',
      '--container-runtime-endpoint=unix:///nonexistent/evictd-test.sock',
      '--housekeeping-interval=1s',
      '--metrics-address=127.0.0.1:0',
      '--admission-address=127.0.0.1:0',
      `--state-dir=${stateDir}`,
      '--lock-memory=false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.after(() => {
    child.kill('SIGKILL');
    fs.rmSync(stateDir, { recursive: true, force: true });
  });
  let metrics = '';
  let admit = '';
  await new Promise<void>((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let l: Record<string, unknown>;
      try {
        l = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (l.msg === 'evictd starting' && typeof l.metricsAddress === 'string') metrics = l.metricsAddress;
      if (l.msg === 'admission endpoint: POST /admit' && typeof l.address === 'string') admit = l.address;
      if (metrics && admit) resolve();
    });
    child.once('exit', (code) => reject(new Error(`evictd exited ${code}`)));
    setTimeout(() => reject(new Error('evictd did not start within 30 s')), 30_000);
  });
  const passes = async () => Number(/^evictd_passes_total (\d+)/m.exec((await get(`http://${metrics}/metrics`)).body)?.[1] ?? NaN);
  // The pass duration histogram's cumulative counts by bucket: the longest pass between two
  // scrapes lies in the first bucket that holds every pass of the interval.
  const passBuckets = async () =>
    [...(await get(`http://${metrics}/metrics`)).body.matchAll(/^evictd_pass_duration_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)].map((m) => ({
      le: m[1] === '+Inf' ? Infinity : Number(m[1]),
      count: Number(m[2]),
    }));
  const buckets0 = await passBuckets();
  const rss0 = kib(child.pid!, 'VmRSS');
  const passes0 = await passes();
  const [host, port] = [admit.slice(0, admit.lastIndexOf(':')), Number(admit.slice(admit.lastIndexOf(':') + 1))];
  const sockets: net.Socket[] = [];
  for (let i = 0; i < UPLOADS; i++) {
    const s = net.connect(port, host);
    s.on('error', () => undefined);
    s.on('connect', () =>
      s.write(`POST /admit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n${'x'.repeat(256 * 1024)}`),
    );
    sockets.push(s);
  }
  // While they stall (the request timeout is 10 s), /healthz answers and passes go on.
  let slowest = 0;
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const h = await get(`http://${metrics}/healthz`);
    slowest = Math.max(slowest, h.ms);
  }
  const passes1 = await passes();
  const buckets1 = await passBuckets();
  const during = buckets1.map((b, i) => ({ le: b.le, count: b.count - buckets0[i]!.count }));
  const longestPassAtMostS = during.find((b) => b.count === during[during.length - 1]!.count)!.le;
  const hwm = kib(child.pid!, 'VmHWM');
  for (const s of sockets) s.destroy();
  t.diagnostic(
    `RSS ${(rss0 / 1024).toFixed(1)} MiB before, peak ${(hwm / 1024).toFixed(1)} MiB; slowest /healthz ${slowest.toFixed(1)} ms; passes ${passes0} -> ${passes1} in 5 s, the longest at most ${longestPassAtMostS * 1000} ms (${JSON.stringify(during.filter((b) => b.count > 0).slice(0, 3))})`,
  );
  assert.equal(child.exitCode, null, 'evictd is up');
  assert.ok(hwm / 1024 < 160, `peak RSS ${(hwm / 1024).toFixed(1)} MiB`);
  assert.ok(slowest < 1000, `/healthz took ${slowest.toFixed(1)} ms`);
  assert.ok(passes1 - passes0 >= 3, `passes went on: ${passes0} -> ${passes1}`);
  assert.ok(longestPassAtMostS <= 1, `no pass took over a second: ${JSON.stringify(during)}`);
  // The runtime was never there: evictd is live (its passes go on) but not ready, once the
  // outage outlasts 3 housekeeping intervals + 5 s.
  const until = Date.now() + 20_000;
  let ready = await get(`http://${metrics}/readyz`);
  while (ready.status === 200 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500));
    ready = await get(`http://${metrics}/readyz`);
  }
  assert.equal(ready.status, 503, ready.body);
  assert.match(ready.body, /unhealthy: .*ms\)/);
  assert.equal((await get(`http://${metrics}/livez`)).status, 200, 'live: a runtime outage is no reason to restart evictd');
});
