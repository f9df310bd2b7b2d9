/** Node-level reclaim that runs before any pod is evicted (kubelet's buildSignalToNodeReclaimFuncs). */
import type { FilesystemLayout, NodeReclaimFunction, Signal } from './types';

const BOTH: readonly NodeReclaimFunction[] = ['deleteUnusedContainers', 'deleteUnusedImages'];
const CONTAINERS: readonly NodeReclaimFunction[] = ['deleteUnusedContainers'];
const IMAGES: readonly NodeReclaimFunction[] = ['deleteUnusedImages'];
const NONE: readonly NodeReclaimFunction[] = [];

type Fs = 'nodefs' | 'imagefs' | 'containerfs';

/**
 * Per layout, what each filesystem's pressure collects. containerfs always shares the reclaim of
 * the filesystem that holds the writable layers: nodefs on single and split, imagefs on
 * dedicated-imagefs (the kubelet assigns signalToReclaimFunc[containerfs] from those entries).
 */
const TABLE: Readonly<Record<FilesystemLayout, Readonly<Record<Fs, readonly NodeReclaimFunction[]>>>> = {
  // one device: any filesystem pressure collects dead containers and unused images
  single: { nodefs: BOTH, imagefs: BOTH, containerfs: BOTH },
  // nodefs holds only logs and volumes: nothing to collect there; images and layers share imagefs
  'dedicated-imagefs': { nodefs: NONE, imagefs: BOTH, containerfs: BOTH },
  // split: images alone on imagefs; writable layers (containerfs) on nodefs with logs and volumes
  split: { nodefs: CONTAINERS, imagefs: IMAGES, containerfs: CONTAINERS },
};

export function nodeReclaimFunctions(signal: Signal, layout: FilesystemLayout): NodeReclaimFunction[] {
  const fs = signal.split('.')[0];
  if (fs !== 'nodefs' && fs !== 'imagefs' && fs !== 'containerfs') return []; // memory and pids: nothing node-level
  return [...TABLE[layout][fs]];
}
