/** The endpoints' bounds (src/net/http-bounds.ts) on the admission server: a client cannot hold evictd's memory or sockets. */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { startAdmissionServer } from '../../src/kube/admission-server';
import { admit } from '../../src/policy/admission';

const bounds = { maxConnections: 4, headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 200, maxHeaderBytes: 8 * 1024 };

/** A connection that starts a 1 MB upload and stalls after 64 KiB; resolves when the server closes it, with what it answered. */
function stalledUpload(port: number): { closed: Promise<{ ms: number; answer: string }> } {
  const t0 = Date.now();
  const socket = net.connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString()));
  socket.on('connect', () =>
    socket.write(`POST /admit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n${'x'.repeat(64 * 1024)}`),
  );
  socket.on('error', () => undefined);
  return { closed: new Promise((resolve) => socket.on('close', () => resolve({ ms: Date.now() - t0, answer }))) };
}

function get(port: number, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/conditions', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('stalled uploads: at most maxConnections held, each dropped at the request timeout; one connection more is closed at once; the endpoint answers again after', async () => {
  const server = await startAdmissionServer({ decide: (pod, c) => admit(pod, c), conditions: () => [], bounds });
  try {
    const held = Array.from({ length: bounds.maxConnections }, () => stalledUpload(server.port));
    await new Promise((r) => setTimeout(r, 100));
    const extra = stalledUpload(server.port);
    const e = await extra.closed;
    assert.ok(e.ms < 300, `the connection past the cap was closed at once (${e.ms} ms)`);
    const ends = await Promise.all(held.map((h) => h.closed));
    for (const x of ends)
      assert.ok(
        x.ms >= bounds.requestTimeoutMs - 50 && x.ms < bounds.requestTimeoutMs + 1500,
        `a stalled upload is dropped at the request timeout (${x.ms} ms)`,
      );
    assert.equal(await get(server.port), 200, 'the endpoint answers again');
  } finally {
    await server.close();
  }
});

test('headers past the bound are refused (431) before any handler runs', async () => {
  const server = await startAdmissionServer({ decide: (pod, c) => admit(pod, c), conditions: () => [], bounds });
  try {
    assert.equal(await get(server.port, { 'x-filler': 'y'.repeat(16 * 1024) }), 431);
    assert.equal(await get(server.port), 200);
  } finally {
    await server.close();
  }
});
