/**
 * The agent's RuntimePort over src/cri. Stopping follows the kubelet:
 * stop the containers with the grace period, then the sandbox; the sandbox is not removed
 * (the kubelet leaves that to its garbage collection, and so do we).
 */
import { CriClient, evictPod, reclaimContainers, reclaimImages, relaxMemoryHigh } from '../../cri';
import type { MemoryHighReader, RelaxResult } from '../../cri/relax';
import type { PodSandbox } from '../../cri';
import fs from 'node:fs';
import type { ContainerUsage, NodeReclaimFunction } from '../../policy/types';
import { killPodBoundMs } from '../../policy/kill-bound';
import type { ImageFsInfo, RuntimeContainer, RuntimePod, RuntimePort, StopTimings } from '../ports';

export function sandboxToPod(s: PodSandbox): RuntimePod {
  const l = s.labels ?? {};
  const pod: RuntimePod = {
    sandboxId: s.id,
    uid: s.metadata?.uid || l['io.kubernetes.pod.uid'] || s.id,
    name: s.metadata?.name || l['io.kubernetes.pod.name'] || s.id,
    namespace: s.metadata?.namespace || l['io.kubernetes.pod.namespace'] || 'default',
    labels: { ...l },
    annotations: { ...(s.annotations ?? {}) },
    ready: s.state === 'SANDBOX_READY',
  };
  if (s.createdAt) pod.createdAtNs = s.createdAt;
  return pod;
}

export class CriRuntime implements RuntimePort {
  constructor(readonly client: CriClient) {}

  static connect(endpoint: string, timeoutMs = 2000): CriRuntime {
    return new CriRuntime(CriClient.connect(endpoint, { timeoutMs }));
  }

  async listPods(deadlineMs?: number): Promise<RuntimePod[]> {
    const sandboxes = await this.client.listPodSandbox({ state: 'SANDBOX_READY' }, deadlineMs ? { deadlineMs } : {});
    return sandboxes.map(sandboxToPod);
  }

  async stopPod(pod: RuntimePod, gracePeriodSeconds: number): Promise<StopTimings> {
    // The kubelet's bound on killing a pod (killPodNow). A shorter one (the client's 2 s default)
    // fails a stop that is only slow, and a failed stop moves the eviction on to the next candidate.
    const killTimeoutMs = killPodBoundMs(gracePeriodSeconds);
    const r = await evictPod(this.client, pod.sandboxId, gracePeriodSeconds, {
      remove: false,
      stopDeadlineMs: killTimeoutMs,
      sandboxDeadlineMs: killTimeoutMs,
    });
    const t = r.timings;
    return { totalMs: t.totalMs, listMs: t.listMs, stopContainersMs: t.stopContainersMs, stopSandboxMs: t.stopSandboxMs };
  }

  async listContainers(): Promise<RuntimeContainer[]> {
    const list = await this.client.listContainers({ state: 'CONTAINER_RUNNING' });
    return list.map((c) => ({ id: c.id, sandboxId: c.podSandboxId, name: c.metadata?.name || c.labels['io.kubernetes.container.name'] || c.id }));
  }

  relaxMemoryHigh(containerId: string, readMemoryHigh: MemoryHighReader): Promise<RelaxResult> {
    return relaxMemoryHigh(this.client, containerId, readMemoryHigh);
  }

  async reclaim(fn: NodeReclaimFunction): Promise<{ freedBytes?: number }> {
    // settleMs 0: the pass re-observes statfs itself; waiting for containerd's stats timer
    // would only delay the decision.
    if (fn === 'deleteUnusedContainers') {
      const r = await reclaimContainers(this.client, { settleMs: 0 });
      return r.freedBytes !== undefined ? { freedBytes: r.freedBytes } : {};
    }
    const r = await reclaimImages(this.client, { settleMs: 0 });
    return { freedBytes: r.freedBytes };
  }

  async imageFsInfo(): Promise<ImageFsInfo | undefined> {
    const info = await this.client.imageFsInfo();
    const fsu = info.imageFilesystems[0];
    if (!fsu) return undefined;
    const out: ImageFsInfo = {};
    if (fsu.fsId?.mountpoint) out.mountpoint = fsu.fsId.mountpoint;
    if (fsu.usedBytes) out.usedBytes = fsu.usedBytes.value;
    if (fsu.inodesUsed) out.inodesUsed = fsu.inodesUsed.value;
    return out;
  }

  async containerDiskUsage(): Promise<Map<string, ContainerUsage[]>> {
    const [containers, stats] = await Promise.all([this.client.listContainers({ state: 'CONTAINER_RUNNING' }), this.client.listContainerStats()]);
    const byId = new Map(stats.map((s) => [s.attributes?.id ?? '', s]));
    const out = new Map<string, ContainerUsage[]>();
    await Promise.all(
      containers.map(async (c) => {
        const uid = c.labels['io.kubernetes.pod.uid'];
        if (!uid) return;
        const u: ContainerUsage = { name: c.metadata?.name ?? c.id };
        const layer = byId.get(c.id)?.writableLayer;
        if (layer?.usedBytes) u.rootfsBytes = layer.usedBytes.value;
        if (layer?.inodesUsed) u.rootfsInodes = layer.inodesUsed.value;
        // Logs: the CRI log file the runtime writes for the container (on nodefs, as the kubelet's).
        const logPath = (await this.client.containerStatus(c.id).catch(() => null))?.status?.logPath;
        if (logPath) {
          try {
            u.logsBytes = fs.statSync(logPath).size;
            u.logsInodes = 1;
          } catch {
            // rotated or removed
          }
        }
        const list = out.get(uid) ?? [];
        list.push(u);
        out.set(uid, list);
      }),
    );
    return out;
  }

  close(): void {
    this.client.close();
  }
}
