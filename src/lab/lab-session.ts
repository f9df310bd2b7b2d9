/**
 * What the demo and the benches run on: the offline containerd harness, a CRI client on it and
 * a NodeLab (the node cgroup and its pods). close() takes them down in reverse, each step's
 * failure swallowed so the next still runs: a bench that failed halfway must not leave a node
 * cgroup or a containerd behind. Nor one stopped by SIGINT or SIGTERM: close() runs then too
 * (interrupt.ts), unless the command ends itself in order on a signal (the demo).
 */
import path from 'node:path';
import { CriClient } from '../cri';
import { ensureHarness, type Harness } from './harness';
import { onInterrupt } from './interrupt';
import { NodeLab } from './node-lab';

export interface LabSession {
  harness: Harness;
  client: CriClient;
  lab: NodeLab;
  close(): Promise<void>;
}

export interface LabSessionOptions {
  /** the node cgroup's name (see NodeLabOptions.name) */
  name: string;
  /** the node's capacity; null: the whole machine is the node */
  memoryLimitBytes: number | null;
  /** pod logs go to <harness dir>/<logDir>/<pid> */
  logDir: string;
  /** the CRI client's deadline for the lab's own calls (run, stop, status) */
  clientTimeoutMs: number;
  /** false: the command handles SIGINT itself and closes the session in order (default true: closed on SIGINT/SIGTERM, then exit) */
  closeOnSignal?: boolean;
}

export async function openLabSession(o: LabSessionOptions): Promise<LabSession> {
  const harness = await ensureHarness();
  const client = CriClient.connect(harness.endpoint, { timeoutMs: o.clientTimeoutMs });
  const lab = NodeLab.create(client, { name: o.name, memoryLimitBytes: o.memoryLimitBytes, logRoot: path.join(harness.dir, o.logDir, String(process.pid)) });
  let closing: Promise<void> | null = null;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      forget();
      await lab.destroy().catch(() => undefined);
      client.close();
      await harness.release().catch(() => undefined);
    })());
  const forget = o.closeOnSignal === false ? () => undefined : onInterrupt(close);
  return { harness, client, lab, close };
}
