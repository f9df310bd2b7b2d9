/**
 * Node-level reclaim (the kubelet's deleteUnusedContainers / deleteUnusedImages) through the
 * runtime, then a fresh look at the node: resolved when no threshold is met any more (minimum
 * reclaim enforced), and then no pod needs to go this pass.
 */
import type { Logger } from 'pino';
import type { PolicyConfig } from '../../policy/config';
import { resolvedByReclaim } from '../../policy/evaluate';
import type { FilesystemLayout, NodeReclaimFunction, NodeStats, Signal } from '../../policy/types';
import type { AgentMetrics } from '../metrics';
import type { RuntimePort } from '../ports';
import type { Effect, Rehearsal } from './effect';

export interface ReclaimInput {
  signal: Signal;
  functions: NodeReclaimFunction[];
}

export interface NodeReclaimDeps {
  policy: PolicyConfig;
  runtime: RuntimePort;
  /** the node's numbers now, read fresh */
  observe: () => { node: NodeStats; layout: FilesystemLayout };
  logger: Logger;
  metrics: AgentMetrics;
}

export class NodeReclaim implements Effect<ReclaimInput, boolean> {
  constructor(private readonly d: NodeReclaimDeps) {}

  async run({ signal, functions }: ReclaimInput): Promise<boolean> {
    const { d } = this;
    for (const fn of functions) {
      try {
        const r = await d.runtime.reclaim(fn);
        d.logger.info({ signal, function: fn, freedBytes: r.freedBytes }, 'node-level reclaim');
      } catch (err) {
        d.metrics.runtimeErrors.inc({ call: fn });
        d.logger.warn({ err, function: fn }, 'node-level reclaim failed');
      }
    }
    const after = d.observe();
    if (!resolvedByReclaim(d.policy, after.layout, after.node)) return false;
    d.logger.info({ signal }, 'node-level reclaim resolved the pressure; no eviction');
    return true;
  }

  /** Dry run frees nothing, so it never resolves the pressure: the eviction is rehearsed next. */
  rehearse({ signal, functions }: ReclaimInput): Rehearsal<boolean> {
    return { message: 'would reclaim node-level resources', fields: { signal, functions }, outcome: false };
  }
}
