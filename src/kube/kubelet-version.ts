/**
 * The version of the kubelet on evictd's node, from its Node object (status.nodeInfo.kubeletVersion):
 * written by that kubelet alone, never by a pod. Needs `get` on nodes (deploy/rbac.yaml).
 */
import type { KubeClient } from './client';

interface NodeInfo {
  status?: { nodeInfo?: { kubeletVersion?: unknown } };
}

/** Rejects with the client's ApiError (403, 404, no answer) or when the Node says no version. */
export async function readKubeletVersion(client: KubeClient, nodeName: string, timeoutMs = 5000): Promise<string> {
  const node = await client.request<NodeInfo>('GET', `/api/v1/nodes/${encodeURIComponent(nodeName)}`, { timeoutMs });
  const v = node.status?.nodeInfo?.kubeletVersion;
  if (typeof v !== 'string' || v === '') throw new Error(`node ${nodeName} has no status.nodeInfo.kubeletVersion`);
  return v;
}
