/**
 * HugepageAwareEviction as the node's kubelet has it: set by the operator, or else the default of
 * the kubelet release the node runs (policy/kubelet-release.ts), read from the Node at start and
 * again every REFRESH_MS, since a kubelet upgraded in place (kubeadm upgrade node) restarts
 * without restarting the DaemonSet beside it. The node observer asks it for the huge pages to take
 * out of memory.available: none while it is off.
 */
import type { Logger } from 'pino';
import { resolveGate, parseKubeletVersion, type ResolvedGate } from '../policy/kubelet-release';
import type { Clock, Timer } from './ports';

const GATE = 'HugepageAwareEviction';
/** How often the kubelet's version is read again. */
export const REFRESH_MS = 10 * 60_000;

export interface HugepageGateOptions {
  /** the operator's value (file featureGates or --feature-gates); undefined: unset */
  set: boolean | undefined;
  /** the kubelet's version from the Node; absent: no API access (--pod-source runtime) */
  kubeletVersion?: () => Promise<string>;
  /** the node's huge pages reserved, bytes, read now */
  hugePagesBytes: () => number;
  clock: Clock;
  logger: Logger;
}

export class HugepageGate {
  private resolved: ResolvedGate;
  private timer: Timer | null = null;
  private stopped = false;

  constructor(private readonly o: HugepageGateOptions) {
    this.resolved = resolveGate(GATE, o.set, null);
  }

  get on(): boolean {
    return this.resolved.on;
  }

  get state(): ResolvedGate {
    return this.resolved;
  }

  /** The huge pages to take out of memory.available now: the reservation, or 0 while the gate is off. */
  hugePagesBytes(): number {
    return this.resolved.on ? this.o.hugePagesBytes() : 0;
  }

  /** Resolves the gate once (before the first pass), says it, and keeps it current. */
  async start(): Promise<void> {
    if (this.o.set !== undefined || !this.o.kubeletVersion) {
      this.say(null);
      return;
    }
    await this.refresh(true);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  private async refresh(first: boolean): Promise<void> {
    let version: string | null = null;
    let problem: string | null = null;
    try {
      version = await this.o.kubeletVersion!();
    } catch (err) {
      problem = (err as Error).message;
    }
    if (this.stopped) return;
    const release = version === null ? null : parseKubeletVersion(version);
    if (version !== null && release === null) problem = `not a kubelet version: ${JSON.stringify(version)}`;
    // A failed read later on keeps what the last one found: the kubelet did not change by it.
    if (release || first) {
      const before = this.resolved;
      this.resolved = resolveGate(GATE, undefined, release);
      if (first || before.on !== this.resolved.on || before.version !== this.resolved.version) this.say(problem);
    } else this.o.logger.debug({ err: problem }, 'kubelet version not read again; HugepageAwareEviction kept');
    this.timer = this.o.clock.after(REFRESH_MS, () => void this.refresh(false), true);
  }

  private say(problem: string | null): void {
    const r = this.resolved;
    const reserved = this.o.hugePagesBytes();
    const fields = { gate: GATE, on: r.on, source: r.source, ...(r.version ? { kubeletVersion: r.version } : {}), hugePagesBytes: reserved };
    const effect = r.on ? 'huge pages out of memory.available' : 'huge pages left in memory.available';
    if (r.source === 'set') this.o.logger.info(fields, `HugepageAwareEviction as set: ${effect}`);
    else if (r.source === 'kubelet-release') this.o.logger.info(fields, `HugepageAwareEviction as the kubelet ${r.version} has it by default: ${effect}`);
    else if (reserved > 0)
      this.o.logger.warn(
        { ...fields, err: problem ?? 'no API access' },
        "the kubelet's release is unknown: huge pages left in memory.available (HugepageAwareEviction off: never evicting before the kubelet would); a v1.37+ kubelet takes them out: --feature-gates=HugepageAwareEviction=true",
      );
    else
      this.o.logger.info(
        { ...fields, ...(problem ? { err: problem } : {}) },
        "HugepageAwareEviction off, the kubelet's release unknown (no huge pages reserved: the same number either way)",
      );
  }
}
