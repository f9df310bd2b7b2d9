// Who may ask /admit: a unix socket only its owner can connect to, and over the network only
// clients with a certificate from the configured CA (real sockets, real TLS, certificates made
// by openssl in a temporary directory).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { startAdmissionServer } from '../../src/kube/admission-server';
import { admit } from '../../src/policy/admission';

const POD = JSON.stringify({ metadata: { name: 'p', namespace: 'd', uid: 'u' }, spec: { containers: [{ name: 'c' }] } });

function scratch(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-admit-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function answer(req: http.ClientRequest): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(POD);
  });
}

const serve = () => ({ decide: admit, conditions: () => [] });

test('unix socket: created mode 0600, answers /admit, a stale socket is replaced, anything else refused', async (t) => {
  const dir = scratch(t);
  const sock = path.join(dir, 'admit.sock');
  const first = await startAdmissionServer({ ...serve(), listen: { path: sock } });
  assert.equal(first.address, `unix:${sock}`);
  assert.equal(fs.statSync(sock).mode & 0o777, 0o600, 'only the agent user may connect');
  const r = await answer(http.request({ socketPath: sock, path: '/admit', method: 'POST', headers: { 'content-type': 'application/json' } }));
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).admit, true);
  await first.close();

  // An agent killed without closing leaves its socket behind: the next start takes the path.
  const stale = path.join(dir, 'stale.sock');
  spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`], {
    stdio: 'ignore',
  });
  assert.ok(fs.lstatSync(stale).isSocket(), 'a killed process left its socket');
  const second = await startAdmissionServer({ ...serve(), listen: { path: stale } });
  await second.close();

  const file = path.join(dir, 'not-a-socket');
  fs.writeFileSync(file, 'keep me');
  await assert.rejects(
    startAdmissionServer({ ...serve(), listen: { path: file } }),
    (err: NodeJS.ErrnoException) => err.code === 'EEXIST' && /not a socket/.test(err.message),
  );
  assert.equal(fs.readFileSync(file, 'utf8'), 'keep me', 'never removed');
});

/** A CA, a server certificate for 127.0.0.1, a client certificate from the CA, and one from another CA. */
function certificates(dir: string): Record<'ca' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey' | 'otherCert' | 'otherKey', string> {
  const f = (n: string) => path.join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ca = (name: string) =>
    ssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.crt`),
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    );
  const leaf = (name: string, issuer: string, ext: string) => {
    ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`);
    fs.writeFileSync(f(`${name}.ext`), ext);
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f(`${issuer}.crt`),
      '-CAkey',
      f(`${issuer}.key`),
      '-CAcreateserial',
      '-out',
      f(`${name}.crt`),
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
    );
  };
  ca('ca');
  ca('other-ca');
  leaf('server', 'ca', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'ca', 'extendedKeyUsage=clientAuth\n');
  leaf('other', 'other-ca', 'extendedKeyUsage=clientAuth\n');
  const r = (n: string) => fs.readFileSync(f(n), 'utf8');
  return {
    ca: r('ca.crt'),
    serverCert: r('server.crt'),
    serverKey: r('server.key'),
    clientCert: r('client.crt'),
    clientKey: r('client.key'),
    otherCert: r('other.crt'),
    otherKey: r('other.key'),
  };
}

test('TLS: only a client with a certificate from the client CA is answered', async (t) => {
  const c = certificates(scratch(t));
  const server = await startAdmissionServer({
    ...serve(),
    listen: { host: '127.0.0.1', port: 0, tls: { cert: c.serverCert, key: c.serverKey, clientCa: c.ca } },
  });
  t.after(() => server.close());
  const ask = (client: { cert?: string; key?: string }) =>
    answer(
      https.request({
        host: '127.0.0.1',
        port: server.port,
        path: '/admit',
        method: 'POST',
        ca: c.ca,
        ...client,
        headers: { 'content-type': 'application/json' },
        agent: false,
      }),
    );
  const ok = await ask({ cert: c.clientCert, key: c.clientKey });
  assert.equal(ok.status, 200, ok.body);
  assert.equal(JSON.parse(ok.body).admit, true);
  await assert.rejects(ask({}), 'no client certificate: the handshake fails');
  await assert.rejects(ask({ cert: c.otherCert, key: c.otherKey }), 'a certificate from another CA: the handshake fails');
  // Plain HTTP to the TLS port gets no answer from the handler either.
  await assert.rejects(answer(http.request({ host: '127.0.0.1', port: server.port, path: '/admit', method: 'POST', agent: false })));
});
