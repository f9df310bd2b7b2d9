/**
 * The kubelet's release, and the feature gates whose default follows it. A gate the operator
 * sets (the configuration file's featureGates, --feature-gates) is taken as set; one left unset
 * takes the default of the kubelet the node runs, as that kubelet does. Pure: the agent reads the
 * release from its Node (status.nodeInfo.kubeletVersion, which only the kubelet writes).
 */

export interface KubeletRelease {
  major: number;
  minor: number;
  /** as the Node says it, e.g. v1.36.2 or v1.37.0-eks-1a2b3c */
  version: string;
}

/**
 * `v1.36.2`, `v1.37.0-rc.1`, `v1.35.4+k3s1`, `v1.34.1-eks-113cf36`: the kubelet's version is a
 * semantic version with a leading v (k8s.io/component-base/version); vendors add a suffix. Null
 * for anything else.
 */
export function parseKubeletVersion(v: unknown): KubeletRelease | null {
  if (typeof v !== 'string') return null;
  const m = /^v?(\d+)\.(\d+)\.\d+(?:[-+].*)?$/.exec(v.trim());
  return m ? { major: Number(m[1]), minor: Number(m[2]), version: v.trim() } : null;
}

/**
 * The gates whose default changed with a release: the first v1 minor release whose kubelet has
 * them on. HugepageAwareEviction: beta and on by default from v1.37 (kubernetes PR #138127),
 * absent before, where huge pages stay in memory.available.
 */
export const GATE_ON_FROM_MINOR: Readonly<Record<string, number>> = { HugepageAwareEviction: 37 };

/** Whether the gate is on by default in this kubelet release. */
export function gateDefaultIn(gate: string, release: KubeletRelease): boolean {
  const from = GATE_ON_FROM_MINOR[gate];
  if (from === undefined) throw new Error(`no release-dependent default for gate ${gate}`);
  return release.major > 1 || (release.major === 1 && release.minor >= from);
}

/** Where a gate's value in force came from. */
export type GateSource = 'set' | 'kubelet-release' | 'release-unknown';

export interface ResolvedGate {
  on: boolean;
  source: GateSource;
  /** the kubelet's version it followed (source kubelet-release) */
  version?: string;
}

/**
 * The value in force: the operator's, else the kubelet release's default, else off. Off while the
 * release is unknown: with it on and a kubelet that leaves huge pages in memory.available, evictd
 * would see less memory than the kubelet and evict pods the kubelet spares; off, it can only be
 * later than a kubelet that takes them out (which then evicts on its own cycle).
 */
export function resolveGate(gate: string, set: boolean | undefined, release: KubeletRelease | null): ResolvedGate {
  if (set !== undefined) return { on: set, source: 'set' };
  if (release) return { on: gateDefaultIn(gate, release), source: 'kubelet-release', version: release.version };
  return { on: false, source: 'release-unknown' };
}
