import { asCriError } from './errors';
import type { CallOptions, CriClient } from './client';
import type { LinuxContainerResources } from './types';

/**
 * KEP-5986 stage 1, the runtime's half: a container's cgroup v2 `memory.high` raised to "max"
 * through UpdateContainerResources (`unified["memory.high"] = "max"`), as the kubelet would do
 * it, and a look at the cgroup afterwards to know whether the runtime really did.
 */

/** Reads the container cgroup's `memory.high` as the file holds it ("max" or a byte count). */
export type MemoryHighReader = (containerId: string) => Promise<string>;

export type RelaxOutcome = 'applied' | 'not-applied' | 'refused';

export interface RelaxResult {
  /**
   * applied: the runtime answered OK and memory.high reads "max";
   * not-applied: the runtime answered OK but memory.high does not read "max" (or could not be read);
   * refused: a CRI call failed (`code`), and nothing is known to have changed.
   */
  outcome: RelaxOutcome;
  /** How long UpdateContainerResources took, in ms (0 when it was not sent). */
  runtimeMs: number;
  /** One line for a log or an event: what was sent, what the runtime said, what the cgroup reads. */
  detail: string;
  /** The gRPC status name of the failed call, when refused. */
  code?: string;
  /** memory.high as read back after an OK, when it could be read. */
  memoryHigh?: string;
}

/** The key the relax writes, and the value that takes memory.high out of the way. */
export const MEMORY_HIGH = 'memory.high';
export const UNLIMITED = 'max';

/**
 * The resources to send: the container's current ones with only unified["memory.high"] changed.
 * The kubelet sends a container's full resources on every update, and a runtime may reset a
 * field it receives as 0, so a request with the memory limit or the CPU quota left out could
 * lift them; the other unified keys (memory.swap.max, io.weight, ...) are kept for the same
 * reason. Without current resources (a runtime that reports none) only the one key goes out.
 */
export function relaxedResources(current: LinuxContainerResources | null | undefined): LinuxContainerResources {
  return { ...current, unified: { ...current?.unified, [MEMORY_HIGH]: UNLIMITED } };
}

/**
 * Raises `containerId`'s memory.high to "max" and says whether it happened. Reads the current
 * resources (ContainerStatus, not verbose), sends them back relaxed (UpdateContainerResources),
 * then reads memory.high through `readMemoryHigh`: the runtime's OK is not enough, since CRI-O
 * before 1.35.3 answered OK without writing the unified map (cri-o#9816, #9820). No I/O besides
 * the client's calls and the reader; never throws for a runtime's or the reader's failure.
 */
export async function relaxMemoryHigh(
  client: Pick<CriClient, 'containerStatus' | 'updateContainerResources'>,
  containerId: string,
  readMemoryHigh: MemoryHighReader,
  opts: CallOptions = {},
): Promise<RelaxResult> {
  let current: LinuxContainerResources | null;
  try {
    current = (await client.containerStatus(containerId, false, opts)).status?.resources?.linux ?? null;
  } catch (e) {
    // Without the current resources a full update cannot be built, and a partial one could
    // reset what the runtime took as 0: nothing is sent.
    const err = asCriError('ContainerStatus', e);
    return { outcome: 'refused', runtimeMs: 0, code: err.code, detail: `ContainerStatus failed, no update sent: ${err.code}: ${err.details}` };
  }
  const linux = relaxedResources(current);
  const sent = current ? 'its current resources with memory.high=max' : 'memory.high=max alone (the runtime reports no current resources)';
  const t0 = performance.now();
  try {
    await client.updateContainerResources(containerId, linux, opts);
  } catch (e) {
    const err = asCriError('UpdateContainerResources', e);
    return {
      outcome: 'refused',
      runtimeMs: performance.now() - t0,
      code: err.code,
      detail: `UpdateContainerResources with ${sent} failed: ${err.code}: ${err.details}`,
    };
  }
  const runtimeMs = performance.now() - t0;
  let memoryHigh: string;
  try {
    memoryHigh = (await readMemoryHigh(containerId)).trim();
  } catch (e) {
    // Unread is not applied: the point of the read is not to trust the OK alone.
    return {
      outcome: 'not-applied',
      runtimeMs,
      detail: `the runtime answered OK to ${sent}, but memory.high could not be read back: ${e instanceof Error ? e.message : String(e)}`,
    };
  }
  if (memoryHigh === UNLIMITED)
    return { outcome: 'applied', runtimeMs, memoryHigh, detail: `memory.high reads max after UpdateContainerResources with ${sent}` };
  return {
    outcome: 'not-applied',
    runtimeMs,
    memoryHigh,
    detail: `the runtime answered OK to ${sent}, but memory.high still reads ${JSON.stringify(memoryHigh)}`,
  };
}
