import { asCriError, CriError } from './errors';
import type { CriClient } from './client';
import type { Image, ImageFsInfoResponse } from './types';

export interface FsSample {
  usedBytes: number;
  /** When the runtime measured it (ns since the epoch, the runtime's clock). */
  timestampNs: number;
}

export interface ReclaimOptions {
  /**
   * How long to wait for the runtime to re-measure its image filesystem after removing things,
   * in ms. containerd refreshes ImageFsInfo on a timer (stats_collect_period, 10 s by default,
   * 1 s in the harness), so an immediate read would report nothing freed. Default 3000; 0 = don't wait.
   */
  settleMs?: number;
}

export interface ReclaimContainersResult {
  removedContainers: number;
  removedSandboxes: number;
  /** ImageFsInfo before minus after (writable layers live on the image filesystem); undefined if unknown. */
  freedBytes?: number;
  /** False when the runtime did not re-measure within settleMs: freedBytes may then be stale. */
  settled: boolean;
  errors: CriError[];
}

export interface ReclaimImagesResult {
  removedImages: string[];
  keptImages: string[];
  freedBytes: number;
  before?: FsSample;
  after?: FsSample;
  settled: boolean;
  errors: CriError[];
}

function imageFs(info: ImageFsInfoResponse): FsSample | undefined {
  const fs = info.imageFilesystems;
  if (!fs.length) return undefined;
  return { usedBytes: fs.reduce((a, f) => a + (f.usedBytes?.value ?? 0), 0), timestampNs: Math.min(...fs.map((f) => f.timestamp)) };
}

async function sampleFs(client: CriClient): Promise<FsSample | undefined> {
  try {
    return imageFs(await client.imageFsInfo());
  } catch {
    return undefined;
  }
}

/** Polls ImageFsInfo until the runtime has measured after `sinceNs`, or settleMs passes. */
async function settledSample(client: CriClient, sinceNs: number, settleMs: number): Promise<{ sample?: FsSample; settled: boolean }> {
  const end = Date.now() + settleMs;
  let sample = await sampleFs(client);
  while (sample && sample.timestampNs <= sinceNs && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    sample = await sampleFs(client);
  }
  return { sample, settled: sample !== undefined && sample.timestampNs > sinceNs };
}

/**
 * Node-level container reclaim, as the kubelet's container GC under disk pressure: removes
 * every exited container and every sandbox that is no longer ready (which removes what is
 * left inside it). Failures are collected, not thrown; one bad container does not stop the rest.
 */
export async function reclaimContainers(client: CriClient, opts: ReclaimOptions = {}): Promise<ReclaimContainersResult> {
  const result: ReclaimContainersResult = { removedContainers: 0, removedSandboxes: 0, settled: false, errors: [] };
  const before = await sampleFs(client);
  const exited = await client.listContainers({ state: 'CONTAINER_EXITED' });
  for (const c of exited) {
    try {
      await client.removeContainer(c.id);
      result.removedContainers++;
    } catch (e) {
      result.errors.push(asCriError('RemoveContainer', e));
    }
  }
  const notReady = await client.listPodSandbox({ state: 'SANDBOX_NOTREADY' });
  for (const s of notReady) {
    try {
      await client.removePodSandbox(s.id);
      result.removedSandboxes++;
    } catch (e) {
      result.errors.push(asCriError('RemovePodSandbox', e));
    }
  }
  if (before && result.removedContainers + result.removedSandboxes > 0) {
    const { sample, settled } = await settledSample(client, Date.now() * 1e6, opts.settleMs ?? 3000);
    result.settled = settled;
    if (sample) result.freedBytes = before.usedBytes - sample.usedBytes;
  }
  return result;
}

export interface ReclaimImagesOptions extends ReclaimOptions {
  /** Image refs or ids never to remove, besides pinned images and the runtime's sandbox image. */
  keep?: string[];
}

function names(img: Image): string[] {
  return [img.id, ...img.repoTags, ...img.repoDigests];
}

/** The sandbox (pause) image from the runtime's verbose status, where containerd reports its config. */
async function sandboxImage(client: CriClient): Promise<string | undefined> {
  try {
    const st = await client.status(true);
    const config = st.info.config ? (JSON.parse(st.info.config) as { sandboxImage?: string }) : {};
    return config.sandboxImage || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Node-level image reclaim, as the kubelet's image GC: removes every image that no container
 * (in any state) uses, except pinned images, the sandbox image and `keep`. Reports the bytes
 * freed as the runtime's ImageFsInfo before and after.
 */
export async function reclaimImages(client: CriClient, opts: ReclaimImagesOptions = {}): Promise<ReclaimImagesResult> {
  const result: ReclaimImagesResult = { removedImages: [], keptImages: [], freedBytes: 0, settled: false, errors: [] };
  result.before = await sampleFs(client);
  const [images, containers, pause] = await Promise.all([client.listImages(), client.listContainers(), sandboxImage(client)]);
  const used = new Set<string>(opts.keep ?? []);
  if (pause) used.add(pause);
  for (const c of containers) {
    for (const ref of [c.imageRef, c.imageId, c.image?.image]) if (ref) used.add(ref);
  }
  for (const img of images) {
    if (img.pinned || names(img).some((n) => used.has(n))) {
      result.keptImages.push(img.repoTags[0] ?? img.id);
      continue;
    }
    try {
      await client.removeImage(img.id);
      result.removedImages.push(img.repoTags[0] ?? img.id);
    } catch (e) {
      result.errors.push(asCriError('RemoveImage', e));
    }
  }
  if (result.before && result.removedImages.length > 0) {
    const { sample, settled } = await settledSample(client, Date.now() * 1e6, opts.settleMs ?? 3000);
    result.after = sample;
    result.settled = settled;
    if (sample) result.freedBytes = result.before.usedBytes - sample.usedBytes;
  }
  return result;
}
