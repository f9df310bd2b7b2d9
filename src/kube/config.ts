/**
 * Where the API server is and how to authenticate to it: the pod's service account when
 * evictd runs in a DaemonSet, or a kubeconfig file (systemd unit, development).
 */
import fs from 'node:fs';
import path from 'node:path';
import { badValue, fileProblem, UsageError, yamlProblem } from '../errors';
import { readKubeYaml } from './kube-yaml';

export interface KubeConfig {
  /** https://host:port, no trailing slash */
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  /** re-read on use: bound service-account tokens rotate (about hourly) */
  tokenFile?: string;
  insecureSkipTLSVerify?: boolean;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The in-cluster configuration, as client-go's rest.InClusterConfig builds it. */
export function inClusterConfig(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new UsageError('KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT: unset: not running in a pod (pass --kubeconfig)');
  }
  const tokenFile = path.join(dir, 'token');
  if (!fs.existsSync(tokenFile)) throw badValue('service account token', tokenFile, 'no such file');
  const hostPart = host.includes(':') ? `[${host}]` : host; // IPv6 service address
  const caFile = path.join(dir, 'ca.crt');
  return {
    server: `https://${hostPart}:${port}`,
    tokenFile,
    ca: fs.existsSync(caFile) ? fs.readFileSync(caFile) : undefined,
  };
}

interface Named<T> {
  name?: string;
  [k: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

/**
 * A kubeconfig file: current (or given) context, its cluster and user. Supports tokens, token
 * files, client certificates and CA files or inline data; exec and auth-provider plugins are
 * refused by name (evictd runs no external programs for credentials).
 */
export function loadKubeconfig(file: string, contextName?: string, from = '--kubeconfig'): KubeConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw badValue(from, file, fileProblem(err));
  }
  let doc: Record<string, unknown>;
  try {
    // as client-go's loader reads it (sigs.k8s.io/yaml: `insecure-skip-tls-verify: yes` is true)
    doc = (readKubeYaml(text) ?? {}) as Record<string, unknown>;
  } catch (err) {
    throw badValue(from, file, `not YAML: ${yamlProblem(err, text)}`);
  }
  const dir = path.dirname(path.resolve(file));
  const ctxName = contextName ?? (doc['current-context'] as string | undefined);
  if (!ctxName) throw badValue(`${file}: current-context`, ctxName ?? '', 'no context selected');
  const find = <T>(list: string, name: string, key: 'cluster' | 'user' | 'context'): T => {
    const items = (doc[list] ?? []) as Named<T>[];
    const hit = Array.isArray(items) ? items.find((i) => i && i.name === name) : undefined;
    if (!hit || !hit[key]) throw badValue(`${file}: ${list}`, name, 'not found');
    return hit[key] as T;
  };
  const ctx = find<{ cluster: string; user: string }>('contexts', ctxName, 'context');
  const cluster = find<Record<string, unknown>>('clusters', ctx.cluster, 'cluster');
  const user = ctx.user ? find<Record<string, unknown>>('users', ctx.user, 'user') : {};

  const server = cluster.server;
  if (typeof server !== 'string' || !/^https?:\/\//.test(server)) {
    throw badValue(`${file}: clusters[${ctx.cluster}].server`, server, 'must be an http(s) URL');
  }
  const readRef = (field: string, data: unknown, ref: unknown): Buffer | undefined => {
    if (typeof data === 'string') return Buffer.from(data, 'base64');
    if (typeof ref === 'string') {
      const p = path.resolve(dir, ref);
      try {
        return fs.readFileSync(p);
      } catch (err) {
        throw badValue(`${file}: ${field}`, ref, (err as Error).message);
      }
    }
    return undefined;
  };
  for (const plugin of ['exec', 'auth-provider']) {
    if (user[plugin] !== undefined)
      throw badValue(`${file}: users[${ctx.user}].${plugin}`, plugin, 'credential plugins are not supported; use a token or client certificate');
  }
  if (typeof user.username === 'string') throw badValue(`${file}: users[${ctx.user}].username`, user.username, 'basic auth is not supported');
  return {
    server: server.replace(/\/+$/, ''),
    ca: readRef('certificate-authority', cluster['certificate-authority-data'], cluster['certificate-authority']),
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    cert: readRef('client-certificate', user['client-certificate-data'], user['client-certificate']),
    key: readRef('client-key', user['client-key-data'], user['client-key']),
    token: typeof user.token === 'string' ? user.token : undefined,
    tokenFile: typeof user.tokenFile === 'string' ? path.resolve(dir, user.tokenFile) : undefined,
  };
}
