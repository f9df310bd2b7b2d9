import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { UsageError } from '../../src/errors';
import { inClusterConfig, loadKubeconfig } from '../../src/kube/config';
import { credentials, resolveNodeName } from '../../src/kube/setup';

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-kube-'));
}

describe('credentials', () => {
  test('kubeconfig: current context, inline CA, token', () => {
    const dir = tmp();
    const file = path.join(dir, 'config');
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: prod',
        'clusters:',
        '- name: c1',
        '  cluster: {server: "https://10.0.0.1:6443/", certificate-authority-data: ' + Buffer.from('CA PEM').toString('base64') + '}',
        'users:',
        '- name: u1',
        '  user: {token: abc}',
        'contexts:',
        '- name: prod',
        '  context: {cluster: c1, user: u1}',
      ].join('\n'),
    );
    const c = loadKubeconfig(file);
    assert.equal(c.server, 'https://10.0.0.1:6443');
    assert.equal(c.ca?.toString(), 'CA PEM');
    assert.equal(c.token, 'abc');
    assert.equal(c.insecureSkipTLSVerify, false);
  });

  test('kubeconfig: file references resolve relative to the kubeconfig', () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'ca.crt'), 'CA');
    fs.writeFileSync(path.join(dir, 'me.crt'), 'CERT');
    fs.writeFileSync(path.join(dir, 'me.key'), 'KEY');
    const file = path.join(dir, 'kc.yaml');
    fs.writeFileSync(
      file,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://h:1", certificate-authority: ca.crt}}]\n' +
        'users: [{name: u, user: {client-certificate: me.crt, client-key: me.key}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n',
    );
    const c = loadKubeconfig(file);
    assert.equal(c.ca?.toString(), 'CA');
    assert.equal(c.cert?.toString(), 'CERT');
    assert.equal(c.key?.toString(), 'KEY');
  });

  test('kubeconfig errors name the field and value', () => {
    const dir = tmp();
    const file = path.join(dir, 'kc.yaml');
    fs.writeFileSync(
      file,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://h:1"}}]\nusers: [{name: u, user: {exec: {command: aws}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n',
    );
    assert.throws(
      () => loadKubeconfig(file),
      (e: Error) => e instanceof UsageError && /users\[u\]\.exec/.test(e.message),
    );
    assert.throws(
      () => loadKubeconfig(file, 'other'),
      (e: Error) => e instanceof UsageError && /contexts: "other": not found/.test(e.message),
    );
    assert.throws(
      () => loadKubeconfig(path.join(dir, 'missing')),
      (e: Error) => e instanceof UsageError && /--kubeconfig/.test(e.message),
    );
    fs.writeFileSync(file, 'current-context: x\nclusters: [{name: c, cluster: {server: "h:1"}}]\ncontexts: [{name: x, context: {cluster: c}}]\n');
    assert.throws(() => loadKubeconfig(file), /clusters\[c\]\.server: "h:1": must be an http\(s\) URL/);
  });

  test('in-cluster: service env and the service account files; IPv6 host bracketed', () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'token'), 'tok\n');
    fs.writeFileSync(path.join(dir, 'ca.crt'), 'CA');
    const c = inClusterConfig({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, dir);
    assert.equal(c.server, 'https://[fd00::1]:443');
    assert.equal(c.tokenFile, path.join(dir, 'token'));
    assert.equal(c.ca?.toString(), 'CA');
    assert.throws(() => inClusterConfig({}, dir), UsageError);
  });

  test('node name: flag, then NODE_NAME, lower-cased; invalid names refused', () => {
    assert.equal(resolveNodeName('Node-A', {}), 'node-a');
    assert.equal(resolveNodeName(undefined, { NODE_NAME: 'worker-3' }), 'worker-3');
    assert.throws(() => resolveNodeName('bad_name', {}), /--node-name: "bad_name"/);
  });

  test('a value from the environment is named by its variable, a missing file by its code', () => {
    assert.throws(
      () => resolveNodeName(undefined, { NODE_NAME: 'bad_name' }),
      (err: unknown) => err instanceof UsageError && err.message === '$NODE_NAME: "bad_name": not a valid node name (RFC 1123 subdomain)',
    );
    const missing = path.join(tmp(), 'nope');
    assert.throws(
      () => credentials(undefined, { KUBECONFIG: `${missing}:/other` }),
      (err: unknown) => err instanceof UsageError && err.message === `$KUBECONFIG: ${JSON.stringify(missing)}: no such file (ENOENT)`,
    );
    assert.throws(
      () => credentials(missing, {}),
      (err: unknown) => err instanceof UsageError && err.message === `--kubeconfig: ${JSON.stringify(missing)}: no such file (ENOENT)`,
    );
  });
});
