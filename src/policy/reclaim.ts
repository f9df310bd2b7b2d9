/** Node-level reclaim that runs before any pod is evicted (kubelet's buildSignalToNodeReclaimFuncs). */
import type { FilesystemLayout, NodeReclaimFunction, Signal } from './types';

const BOTH: NodeReclaimFunction[] = ['deleteUnusedContainers', 'deleteUnusedImages'];

export function nodeReclaimFunctions(signal: Signal, layout: FilesystemLayout): NodeReclaimFunction[] {
  const fs = signal.split('.')[0];
  if (layout === 'single') {
    // one device: any filesystem pressure collects dead containers and unused images
    return fs === 'nodefs' || fs === 'imagefs' ? BOTH : [];
  }
  if (layout === 'dedicated-imagefs') {
    // nodefs holds only logs and volumes: nothing to collect there
    return fs === 'imagefs' ? BOTH : [];
  }
  // split: images on imagefs, writable layers on nodefs
  if (fs === 'imagefs') return ['deleteUnusedImages'];
  if (fs === 'nodefs') return ['deleteUnusedContainers'];
  return [];
}
