/**
 * The client over real TLS, as in a cluster: the server verified against the cluster CA,
 * a client certificate or a bearer token from a file that rotates.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { ApiError, KubeClient } from '../../src/kube/client';

const fixtures = path.resolve(__dirname, '../../../test/kube/fixtures');
const read = (f: string) => fs.readFileSync(path.join(fixtures, f));

describe('KubeClient over TLS', () => {
  let server: https.Server;
  let url: string;
  let expectedToken = 'first';
  const seen: { cn?: string; auth?: string }[] = [];

  before(async () => {
    server = https.createServer(
      { key: read('server.key'), cert: read('server.crt'), ca: read('ca.crt'), requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        const cn = peer && peer.subject ? String(peer.subject.CN) : undefined;
        seen.push({ cn, auth: req.headers.authorization });
        const ok = (cn && (req.socket as TLSSocket).authorized) || req.headers.authorization === `Bearer ${expectedToken}`;
        res.writeHead(ok ? 200 : 401, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(ok ? { kind: 'PodList', items: [] } : { kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' }));
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('verifies the server against the given CA and authenticates with a client certificate', async () => {
    const c = new KubeClient({ server: url, ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key') });
    try {
      assert.deepEqual(await c.request('GET', '/api/v1/pods'), { kind: 'PodList', items: [] });
      assert.equal(seen.at(-1)!.cn, 'system:serviceaccount:kube-system:evictd');
    } finally {
      c.close();
    }
  });

  test('refuses a server its CA did not sign, unless told to skip verification', async () => {
    const strict = new KubeClient({ server: url, token: 'first' });
    const lax = new KubeClient({ server: url, token: 'first', insecureSkipTLSVerify: true });
    try {
      await assert.rejects(strict.request('GET', '/'), (e: ApiError) => e.status === 0 && /certificate/i.test(e.message));
      await lax.request('GET', '/');
    } finally {
      strict.close();
      lax.close();
    }
  });

  test("refuses the server when given another cluster's CA, with a token or a client certificate", async () => {
    const wrongCa = read('other-ca.crt');
    const withToken = new KubeClient({ server: url, ca: wrongCa, token: 'first' });
    const withCert = new KubeClient({ server: url, ca: wrongCa, cert: read('client.crt'), key: read('client.key') });
    const before = seen.length;
    try {
      for (const c of [withToken, withCert]) {
        await assert.rejects(c.request('GET', '/api/v1/pods'), (e: ApiError) => e.status === 0 && /certificate|self.signed|issuer/i.test(e.message));
      }
      assert.equal(seen.length, before, 'no request reached the server');
    } finally {
      withToken.close();
      withCert.close();
    }
  });

  test('a rotated token file is read again after a 401', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-token-'));
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, 'first\n');
    const c = new KubeClient({ server: url, ca: read('ca.crt'), tokenFile });
    try {
      await c.request('GET', '/');
      assert.equal(seen.at(-1)!.auth, 'Bearer first');
      fs.writeFileSync(tokenFile, 'second\n');
      expectedToken = 'second';
      await assert.rejects(c.request('GET', '/'), (e: ApiError) => e.status === 401);
      await c.request('GET', '/');
      assert.equal(seen.at(-1)!.auth, 'Bearer second');
    } finally {
      c.close();
    }
  });
});
