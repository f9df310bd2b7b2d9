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

/** A pod stopped: its running containers and how long each step took. */
export interface EvictResult {
  sandboxId: string;
  containerIds: string[];
  timings: EvictTimings;
}

/**
 * An eviction that failed at one step: the runtime's error for that call (a CriError, so a
 * caller branches on `code` as for any CRI call), the step, and what was done before it.
 */
export class EvictError extends CriError {
  readonly step: EvictStep;
  /** the containers it was stopping and the steps' timings up to the failure */
  readonly partial: EvictResult;

  constructor(step: EvictStep, cause: CriError, partial: EvictResult) {
    super(cause.rpc, cause.grpcCode, cause.details, cause.attempts);
    this.step = step;
    this.partial = partial;
  }
}

/**
 * Evicts one pod the way the kubelet kills it: stop every running container with the grace
 * period (in parallel; 0 = SIGKILL at once), then stop the sandbox, then remove it. Never waits
 * past the deadlines: a failed or timed-out step ends the eviction with an EvictError (as every
 * CRI call throws its CriError), so the caller can move on to the next candidate. Like the
 * kubelet, a failed container stop does not go on to stop the sandbox.
 */
export async function evictPod(client: CriClient, sandboxId: string, gracePeriodSeconds: number, opts: EvictOptions = {}): Promise<EvictResult> {
  const now = opts.now ?? (() => performance.now());
  const t0 = now();
  const timings: EvictTimings = { listMs: 0, stopContainersMs: 0, perContainerMs: {}, stopSandboxMs: 0, removeSandboxMs: 0, totalMs: 0 };
  const result: EvictResult = { sandboxId, containerIds: [], timings };
  const grace = Math.max(0, Math.floor(gracePeriodSeconds));
  const fail = (step: EvictStep, err: unknown, rpc: string): never => {
    timings.totalMs = now() - t0;
    throw new EvictError(step, asCriError(rpc, err), result);
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
  timings.totalMs = now() - t0;
  return result;
}

/** The runtime's NOT_FOUND: the container or sandbox is gone, so it is stopped. */
function isNotFound(err: unknown): boolean {
  return err instanceof CriError && err.code === 'NOT_FOUND';
}
