/** Static facts about eviction signals, as the kubelet defines them. */
import { SIGNALS, type NodeCondition, type Signal } from './types';
import type { QuantityFormat } from './quantity';

/** The resource a signal starves (kubelet's signalToResource). */
export const SIGNAL_RESOURCE: Readonly<Record<Signal, string>> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

/** The node condition a met threshold on this signal reports (kubelet's signalToNodeCondition). */
export const SIGNAL_CONDITION: Readonly<Record<Signal, NodeCondition>> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** How the kubelet prints an observed value of this signal: bytes in binary SI, counts in decimal SI. */
export function observationFormat(signal: Signal): QuantityFormat {
  return signal.endsWith('inodesFree') || signal === 'pid.available' ? 'DecimalSI' : 'BinarySI';
}

const signalSet = new Set<string>(SIGNALS);
export function isSignal(s: string): s is Signal {
  return signalSet.has(s);
}

export function isMemorySignal(s: Signal): boolean {
  return s === 'memory.available' || s === 'allocatableMemory.available';
}
