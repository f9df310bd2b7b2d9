/**
 * One record per eviction signal: every fact about a signal that the policy, the agent's pass,
 * the reporter and the scenario reader need, as the kubelet defines it
 * (pkg/kubelet/eviction/helpers.go: signalToResource, signalToNodeCondition,
 * buildSignalToRankFunc, buildSignalToNodeReclaimFuncs, UpdateContainerFsThresholds; how it is
 * observed and printed: makeSignalObservations).
 *
 * To add a signal:
 *   1. its name in SIGNALS (types.ts); the compiler then asks for
 *   2. its record in RECORDS below;
 *   3. only if it reads a part of NodeStats that no signal reads yet: that part's type in
 *      NodeStats (types.ts); the compiler then asks for its shape in NODE_PARTS below;
 *   4. its observer in src/node/ (observer.ts), which fills that part in on a live node.
 * Thresholds, conditions, ranking, node-level reclaim, eviction messages, the reporter's node
 * events, the pass's read of container disk usage and the scenario's `node` all read the record;
 * test/unit/signal-records.test.ts walks every record through them. Docs list the signals
 * (README.md, docs/scenarios.md). A kernel notification that wakes a pass early on the signal is
 * a mechanism of its own (agent/arming.ts), not part of the signal.
 */
import {
  SIGNALS,
  type FilesystemLayout,
  type FsStats,
  type MemoryStats,
  type NodeCondition,
  type NodeReclaimFunction,
  type NodeStats,
  type PidStats,
  type Signal,
} from './types';
import type { QuantityFormat } from './quantity';

/** A signal's numbers at one moment. */
export interface Observation {
  available: number;
  capacity: number;
}

/** The resource a signal starves, as the kubelet names it (events, messages, annotations). */
export type StarvedResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

/** A pod's usage that can sit on a filesystem: writable layers, container logs, local volumes. */
export type PodFsUsage = 'root' | 'logs' | 'volumes';

export type PerLayout<T> = Readonly<Record<FilesystemLayout, T>>;

export type NodePart = keyof NodeStats;

/** How a signal is read from one part of NodeStats. */
interface PartReader<P extends NodePart> {
  readonly part: P;
  /** undefined when the part lacks a number this signal needs */
  read(stats: NonNullable<NodeStats[P]>): Observation | undefined;
}
export type SignalObserver = { [P in NodePart]-?: PartReader<P> }[NodePart];

/** Which pods go first (the kubelet's rank function for the signal). */
export type Ranking =
  /** rankMemoryPressure */
  | { readonly by: 'memory' }
  /** rankPIDPressure */
  | { readonly by: 'pids' }
  /** rankDiskPressureFunc: the pod usage that sits on the signal's filesystem, per layout; bytes, or inodes when the resource is inodes */
  | { readonly by: 'disk'; readonly usage: PerLayout<readonly PodFsUsage[]> };

export interface SignalRecord {
  readonly name: Signal;
  readonly resource: StarvedResource;
  /** reported while a threshold on this signal is met */
  readonly condition: NodeCondition;
  readonly observed: SignalObserver;
  /** how the kubelet prints an observed value: bytes in binary SI, counts in decimal SI */
  readonly format: QuantityFormat;
  readonly ranking: Ranking;
  /** node-level reclaim tried before any pod is evicted, in order */
  readonly reclaim: PerLayout<readonly NodeReclaimFunction[]>;
  /**
   * A met threshold needs the pods' per-container disk usage (writable layers, logs: a runtime
   * call per container), which the disk ranking and the ephemeral-storage message read.
   */
  readonly containerDiskUsage: boolean;
  /** never configured: its thresholds are copies of this signal's, per layout (UpdateContainerFsThresholds) */
  readonly derivedFrom?: PerLayout<Signal>;
}

const perLayout = <T>(f: (layout: FilesystemLayout) => T): PerLayout<T> => ({
  single: f('single'),
  'dedicated-imagefs': f('dedicated-imagefs'),
  split: f('split'),
});

const memoryOf = (part: 'memory' | 'allocatableMemory'): SignalObserver => ({
  part,
  // capacity = available + working set, as the kubelet derives it from the summary API
  read: (m: MemoryStats) => ({ available: m.availableBytes, capacity: m.availableBytes + m.workingSetBytes }),
});

type FsPart = 'nodefs' | 'imagefs' | 'containerfs';
const bytesOf = (part: FsPart): SignalObserver => ({
  part,
  read: (f: FsStats) =>
    f.availableBytes !== undefined && f.capacityBytes !== undefined ? { available: f.availableBytes, capacity: f.capacityBytes } : undefined,
});
const inodesOf = (part: FsPart): SignalObserver => ({
  part,
  read: (f: FsStats) => (f.inodesFree !== undefined && f.inodes !== undefined ? { available: f.inodesFree, capacity: f.inodes } : undefined),
});

const NO_RECLAIM = perLayout((): readonly NodeReclaimFunction[] => []);
const BOTH: readonly NodeReclaimFunction[] = ['deleteUnusedContainers', 'deleteUnusedImages'];
const ALL_USAGE: readonly PodFsUsage[] = ['root', 'logs', 'volumes'];

interface FsFacts {
  usage: PerLayout<readonly PodFsUsage[]>;
  reclaim: PerLayout<readonly NodeReclaimFunction[]>;
}
// single: one device holds everything, so any filesystem's pressure collects both and ranks all usage.
const NODEFS: FsFacts = {
  // dedicated-imagefs: only logs and volumes stay on nodefs, nothing there to collect;
  // split: the writable layers sit on nodefs with logs and volumes (images alone on imagefs)
  usage: { single: ALL_USAGE, 'dedicated-imagefs': ['logs', 'volumes'], split: ALL_USAGE },
  reclaim: { single: BOTH, 'dedicated-imagefs': [], split: ['deleteUnusedContainers'] },
};
const IMAGEFS: FsFacts = {
  // dedicated-imagefs: images and writable layers; split: images alone, which no pod is charged for
  usage: { single: ALL_USAGE, 'dedicated-imagefs': ['root'], split: [] },
  reclaim: { single: BOTH, 'dedicated-imagefs': BOTH, split: ['deleteUnusedImages'] },
};
/** The filesystem holding the writable layers: containerfs takes its facts and its thresholds. */
const LAYERS_ON: PerLayout<'nodefs' | 'imagefs'> = { single: 'nodefs', 'dedicated-imagefs': 'imagefs', split: 'nodefs' };
const layersFs = (l: FilesystemLayout) => (LAYERS_ON[l] === 'nodefs' ? NODEFS : IMAGEFS);
const CONTAINERFS: FsFacts = { usage: perLayout((l) => layersFs(l).usage[l]), reclaim: perLayout((l) => layersFs(l).reclaim[l]) };

const RECORDS: { readonly [S in Signal]: Omit<SignalRecord, 'name'> } = {
  'memory.available': {
    resource: 'memory',
    condition: 'MemoryPressure',
    observed: memoryOf('memory'),
    format: 'BinarySI',
    ranking: { by: 'memory' },
    reclaim: NO_RECLAIM,
    containerDiskUsage: false,
  },
  'allocatableMemory.available': {
    resource: 'memory',
    condition: 'MemoryPressure',
    observed: memoryOf('allocatableMemory'),
    format: 'BinarySI',
    ranking: { by: 'memory' },
    reclaim: NO_RECLAIM,
    containerDiskUsage: false,
  },
  'nodefs.available': {
    resource: 'ephemeral-storage',
    condition: 'DiskPressure',
    observed: bytesOf('nodefs'),
    format: 'BinarySI',
    ranking: { by: 'disk', usage: NODEFS.usage },
    reclaim: NODEFS.reclaim,
    containerDiskUsage: true,
  },
  'nodefs.inodesFree': {
    resource: 'inodes',
    condition: 'DiskPressure',
    observed: inodesOf('nodefs'),
    format: 'DecimalSI',
    ranking: { by: 'disk', usage: NODEFS.usage },
    reclaim: NODEFS.reclaim,
    containerDiskUsage: true,
  },
  'imagefs.available': {
    resource: 'ephemeral-storage',
    condition: 'DiskPressure',
    observed: bytesOf('imagefs'),
    format: 'BinarySI',
    ranking: { by: 'disk', usage: IMAGEFS.usage },
    reclaim: IMAGEFS.reclaim,
    containerDiskUsage: true,
  },
  'imagefs.inodesFree': {
    resource: 'inodes',
    condition: 'DiskPressure',
    observed: inodesOf('imagefs'),
    format: 'DecimalSI',
    ranking: { by: 'disk', usage: IMAGEFS.usage },
    reclaim: IMAGEFS.reclaim,
    containerDiskUsage: true,
  },
  'containerfs.available': {
    resource: 'ephemeral-storage',
    condition: 'DiskPressure',
    observed: bytesOf('containerfs'),
    format: 'BinarySI',
    ranking: { by: 'disk', usage: CONTAINERFS.usage },
    reclaim: CONTAINERFS.reclaim,
    containerDiskUsage: true,
    derivedFrom: perLayout((l) => `${LAYERS_ON[l]}.available` as const),
  },
  'containerfs.inodesFree': {
    resource: 'inodes',
    condition: 'DiskPressure',
    observed: inodesOf('containerfs'),
    format: 'DecimalSI',
    ranking: { by: 'disk', usage: CONTAINERFS.usage },
    reclaim: CONTAINERFS.reclaim,
    containerDiskUsage: true,
    derivedFrom: perLayout((l) => `${LAYERS_ON[l]}.inodesFree` as const),
  },
  'pid.available': {
    resource: 'pids',
    condition: 'PIDPressure',
    observed: { part: 'pid', read: (p: PidStats) => ({ available: p.maxPID - p.running, capacity: p.maxPID }) },
    format: 'DecimalSI',
    ranking: { by: 'pids' },
    reclaim: NO_RECLAIM,
    containerDiskUsage: false,
  },
};

/** Every signal's record, in SIGNALS order. */
export const SIGNAL_TABLE: Readonly<Record<Signal, SignalRecord>> = Object.freeze(
  Object.fromEntries(SIGNALS.map((name) => [name, Object.freeze({ name, ...RECORDS[name] })])) as Record<Signal, SignalRecord>,
);

/**
 * The numbers of one NodeStats part, for a reader that gets them from outside (a scenario).
 * `whole`: a part missing one of its numbers is not observed at all, as the kubelet skips memory
 * without both; a filesystem's parts are kept, each signal observed when its own two are there.
 */
interface PartShape<T> {
  readonly fields: readonly (keyof T & string)[];
  readonly whole: boolean;
  /** [a number, the number it never exceeds on a real node] */
  readonly notAbove: readonly (readonly [keyof T & string, keyof T & string])[];
}
const MEMORY_PART: PartShape<MemoryStats> = { fields: ['availableBytes', 'workingSetBytes'], whole: true, notAbove: [] };
const FS_PART: PartShape<FsStats> = {
  fields: ['availableBytes', 'capacityBytes', 'inodesFree', 'inodes'],
  whole: false,
  notAbove: [
    ['availableBytes', 'capacityBytes'],
    ['inodesFree', 'inodes'],
  ],
};
export const NODE_PARTS: { readonly [P in NodePart]-?: PartShape<NonNullable<NodeStats[P]>> } = {
  memory: MEMORY_PART,
  allocatableMemory: MEMORY_PART,
  nodefs: FS_PART,
  imagefs: FS_PART,
  containerfs: FS_PART,
  pid: { fields: ['maxPID', 'running'], whole: true, notAbove: [['running', 'maxPID']] },
};

/** The NodeStats parts some signal is read from, in signal order (a scenario's `node` keys). */
export const OBSERVED_PARTS: readonly NodePart[] = [...new Set(SIGNALS.map((s) => SIGNAL_TABLE[s].observed.part))];

/** The signal's numbers in `node`, or undefined when it is not observed there. */
export function observeSignal(signal: Signal, node: NodeStats): Observation | undefined {
  const { part, read } = SIGNAL_TABLE[signal].observed;
  const stats = node[part];
  // The union of readers loses the link between a part and its reader; each record pairs them.
  return stats === undefined ? undefined : (read as (s: NonNullable<NodeStats[NodePart]>) => Observation | undefined)(stats);
}

/** The resource a signal starves (kubelet's signalToResource). */
export const SIGNAL_RESOURCE: Readonly<Record<Signal, StarvedResource>> = tableOf((r) => r.resource);

/** The node condition a met threshold on this signal reports (kubelet's signalToNodeCondition). */
export const SIGNAL_CONDITION: Readonly<Record<Signal, NodeCondition>> = tableOf((r) => r.condition);

function tableOf<T>(pick: (r: SignalRecord) => T): Readonly<Record<Signal, T>> {
  return Object.freeze(Object.fromEntries(SIGNALS.map((s) => [s, pick(SIGNAL_TABLE[s])])) as Record<Signal, T>);
}

/** How the kubelet prints an observed value of this signal. */
export function observationFormat(signal: Signal): QuantityFormat {
  return SIGNAL_TABLE[signal].format;
}

const signalSet = new Set<string>(SIGNALS);
export function isSignal(s: string): s is Signal {
  return signalSet.has(s);
}

export function isMemorySignal(s: Signal): boolean {
  // `?.`: a caller holding an eviction's signal may hold a local-storage or KEP-5986 one
  return SIGNAL_TABLE[s]?.resource === 'memory';
}

/**
 * Whether a met threshold on this signal needs the pods' per-container disk usage read this
 * pass (the agent's pass: read it when some met threshold's signal says so).
 */
export function needsContainerDiskUsage(signal: Signal): boolean {
  return SIGNAL_TABLE[signal].containerDiskUsage;
}
