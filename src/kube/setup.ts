/**
 * Wiring from the agent's flags to the Kubernetes parts: which credentials, which pod source,
 * the eviction reporter. Bad flags throw UsageError naming the flag. `--pod-source=runtime`
 * needs none of this: the agent makes its specs from the runtime's sandboxes itself
 * (agent/active-pods.ts), as it does for any pod the source here does not know.
 */
import os from 'node:os';
import { badValue } from '../errors';
import { ApiPodSource } from './api-pod-source';
import { KubeClient } from './client';
import { inClusterConfig, loadKubeconfig, type KubeConfig } from './config';
import { EvictionReporter } from './eviction-reporter';
import { KubeletPodSource } from './kubelet-pod-source';
import type { Log } from '../log';
import type { PodSource } from './pod-source';

export interface KubeFlags {
  /** --kubeconfig; absent: the in-cluster service account */
  kubeconfig?: string;
  /** --node-name; absent: $NODE_NAME (downward API), else the host name as the kubelet uses it */
  nodeName?: string;
  /** --pod-source: api (the default) or kubelet */
  podSource?: string;
  /** --kubelet-url (default https://127.0.0.1:10250), for --pod-source=kubelet */
  kubeletUrl?: string;
  /** --kubelet-insecure-tls: skip verifying the kubelet's self-signed serving certificate */
  kubeletInsecureTLS?: boolean;
  /** --dry-run: no API writes (the reporter is not created) */
  dryRun?: boolean;
}

export interface KubeParts {
  nodeName: string;
  /** the API watch or the kubelet's /pods */
  source: PodSource;
  /** undefined with --dry-run: nothing to write to */
  reporter?: EvictionReporter;
  client: KubeClient;
  close(): void;
}

export function resolveNodeName(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  // A bad value is named by where it came from: the flag, the environment, or the host.
  const [from, raw] =
    flag !== undefined ? ['--node-name', flag] : env.NODE_NAME !== undefined ? ['$NODE_NAME', env.NODE_NAME] : ['the host name', os.hostname()];
  const name = raw.trim().toLowerCase();
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) throw badValue(from, raw, 'not a valid node name (RFC 1123 subdomain)');
  return name;
}

export function credentials(kubeconfig: string | undefined, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  if (kubeconfig) return loadKubeconfig(kubeconfig);
  if (env.KUBECONFIG && !env.KUBERNETES_SERVICE_HOST) return loadKubeconfig(env.KUBECONFIG.split(':')[0]!, undefined, '$KUBECONFIG');
  return inClusterConfig(env);
}

export function createKubeParts(flags: KubeFlags, log?: Log): KubeParts {
  const kind = flags.podSource ?? 'api';
  if (kind !== 'api' && kind !== 'kubelet') throw badValue('--pod-source', flags.podSource, 'must be api or kubelet here (runtime needs no Kubernetes parts)');
  const nodeName = resolveNodeName(flags.nodeName);

  const client = new KubeClient(credentials(flags.kubeconfig), { userAgent: `evictd/${nodeName}` });
  let source: PodSource;
  let kubeletClient: KubeClient | undefined;
  if (kind === 'kubelet') {
    const url = flags.kubeletUrl ?? 'https://127.0.0.1:10250';
    if (!/^https?:\/\/[^/]+$/.test(url)) throw badValue('--kubelet-url', url, 'must be http(s)://host:port');
    // the cluster CA verifies the kubelet only when it serves a CA-signed certificate
    // (serverTLSBootstrap: true); a self-signed one needs --kubelet-insecure-tls
    const base = credentials(flags.kubeconfig);
    kubeletClient = new KubeClient({ ...base, server: url, insecureSkipTLSVerify: Boolean(flags.kubeletInsecureTLS) });
    source = new KubeletPodSource({ client: kubeletClient, log });
  } else {
    source = new ApiPodSource({ client, nodeName, log });
  }
  const reporter = flags.dryRun ? undefined : new EvictionReporter({ client, nodeName, log });
  return {
    nodeName,
    source,
    reporter,
    client,
    close() {
      reporter?.stop();
      client.close();
      kubeletClient?.close();
    },
  };
}
