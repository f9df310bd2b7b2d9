import { asCriError, CriError } from './errors';
import type { CriClient } from './client';

export interface EvictOptions {
  /** Remove the sandbox after stopping it (the kubelet leaves that to garbage collection). Default true. */
  remove?: boolean;
  /** Extra ms on top of the grace period for each StopContainer deadline. Default: the client's timeoutMs. */
  stopSlackMs?: number;
  /** The whole StopContainer deadline in ms, overriding grace period + slack. */
  stopDeadlineMs?: number;
  /** The StopPodSandbox deadline in ms. Default: the client's timeoutMs. */
  sandboxDeadlineMs?: number;
  /** Clock for the timings; a monotonic ms clock. Default performance.now. */
  now?: () => number;
}

export interface EvictTimings {
  listMs: number;
  /** Containers stop in parallel; this is the wall time of all of them. */
  stopContainersMs: number;
  perContainerMs: Record<string, number>;
  stopSandboxMs: number;
  removeSandboxMs: number;
  totalMs: number;
}

export type EvictStep = 'listContainers' | 'stopContainer' | 'stopPodSandbox' | 'removePodSandbox';

export interface EvictResult {
  ok: boolean;
  sandboxId: string;
  containerIds: string[];
  timings: EvictTimings;
  /** Set when ok is false: the step that failed and its error. */
  failedStep?: EvictStep;
  error?: CriError;
}

/**
 * Evicts one pod the way the kubelet kills it: stop every running container with the grace
 * period (in parallel; 0 = SIGKILL at once), then stop the sandbox, then remove it. Never
 * throws for runtime failures and never waits past the deadlines: a failed or timed-out step
 * ends the eviction with ok=false, so the caller can move on to the next candidate. Like the
 * kubelet, a failed container stop does not go on to stop the sandbox.
 */
export async function evictPod(client: CriClient, sandboxId: string, gracePeriodSeconds: number, opts: EvictOptions = {}): Promise<EvictResult> {
  const now = opts.now ?? (() => performance.now());
  const t0 = now();
  const timings: EvictTimings = { listMs: 0, stopContainersMs: 0, perContainerMs: {}, stopSandboxMs: 0, removeSandboxMs: 0, totalMs: 0 };
  const result: EvictResult = { ok: false, sandboxId, containerIds: [], timings };
  const grace = Math.max(0, Math.floor(gracePeriodSeconds));
  const fail = (step: EvictStep, err: unknown, rpc: string): EvictResult => {
    result.failedStep = step;
    result.error = asCriError(rpc, err);
    timings.totalMs = now() - t0;
    return result;
  };

  let t = now();
  try {
    const containers = await client.listContainers({ podSandboxId: sandboxId });
    result.containerIds = containers.filter((c) => c.state !== 'CONTAINER_EXITED').map((c) => c.id);
  } catch (e) {
    return fail('listContainers', e, 'ListContainers');
  }
  timings.listMs = now() - t;

  t = now();
  const deadlineMs = opts.stopDeadlineMs ?? grace * 1000 + (opts.stopSlackMs ?? client.timeoutMs);
  const stops = await Promise.allSettled(
    result.containerIds.map(async (id) => {
      const s = now();
      try {
        await client.stopContainer(id, grace, { deadlineMs });
      } finally {
        timings.perContainerMs[id] = now() - s;
      }
    }),
  );
  timings.stopContainersMs = now() - t;
  // A container or sandbox the runtime no longer knows is one that is stopped: gone (removed
  // by the kubelet, or by an earlier try of this stop). The kubelet reads NotFound the same way
  // (kuberuntime: `err != nil && !crierror.IsNotFound(err)`); taking it for a failure had a
  // stop retried forever after its sandbox was removed.
  const failed = stops.find((s): s is PromiseRejectedResult => s.status === 'rejected' && !isNotFound(s.reason));
  if (failed) return fail('stopContainer', failed.reason, 'StopContainer');

  t = now();
  try {
    await client.stopPodSandbox(sandboxId, opts.sandboxDeadlineMs !== undefined ? { deadlineMs: opts.sandboxDeadlineMs } : {});
  } catch (e) {
    if (!isNotFound(e)) return fail('stopPodSandbox', e, 'StopPodSandbox');
  }
  timings.stopSandboxMs = now() - t;

  if (opts.remove ?? true) {
    t = now();
    try {
      await client.removePodSandbox(sandboxId);
    } catch (e) {
      if (!isNotFound(e)) return fail('removePodSandbox', e, 'RemovePodSandbox');
    }
    timings.removeSandboxMs = now() - t;
  }
  result.ok = true;
  timings.totalMs = now() - t0;
  return result;
}

/** The runtime's NOT_FOUND: the container or sandbox is gone, so it is stopped. */
function isNotFound(err: unknown): boolean {
  return err instanceof CriError && err.code === 'NOT_FOUND';
}
