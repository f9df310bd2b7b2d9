/** Node-level reclaim that runs before any pod is evicted (kubelet's buildSignalToNodeReclaimFuncs). */
import { SIGNAL_TABLE } from './signals';
import type { FilesystemLayout, NodeReclaimFunction, Signal } from './types';

/** What the signal's pressure collects on this layout, in order (its record's reclaim; none for memory and pids). */
export function nodeReclaimFunctions(signal: Signal, layout: FilesystemLayout): NodeReclaimFunction[] {
  return [...SIGNAL_TABLE[signal].reclaim[layout]];
}
