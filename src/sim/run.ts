/** Runs the policy over a scenario exactly as the agent's passes do, with a fake clock. */
import { admit } from '../policy/admission';
import { evaluate, initialState, resolvedByReclaim, type Eviction } from '../policy/evaluate';
import { formatDuration } from '../policy/duration';
import type { NodeCondition, NodeReclaimFunction } from '../policy/types';
import type { Scenario } from './scenario';

export interface StepResult {
  at: string;
  thresholdsMet: { signal: string; kind: string; quantity: string; gracePeriodMet: boolean }[];
  conditions: NodeCondition[];
  nodeReclaim: NodeReclaimFunction[];
  evicted: { pod: string; signal: string; gracePeriodSeconds: number; message: string; annotations: Record<string, string> }[];
  admission: { pod: string; admit: boolean; reason?: string; message?: string }[];
}

const evicted = (e: Eviction) => ({
  pod: `${e.pod.namespace}/${e.pod.name}`,
  signal: e.signal,
  gracePeriodSeconds: e.gracePeriodSeconds,
  message: e.message,
  annotations: e.annotations,
});

export function* simulate(scenario: Scenario): Generator<StepResult> {
  let state = initialState();
  for (const step of scenario.steps) {
    const ev = evaluate(scenario.config, state, { now: step.at, node: step.node, pods: step.pods, layout: scenario.layout });
    state = ev.state;
    const out: StepResult = {
      at: formatDuration(step.at),
      thresholdsMet: ev.thresholdsMet.map((t) => ({ signal: t.signal, kind: t.kind, quantity: t.quantity, gracePeriodMet: t.gracePeriodMet })),
      conditions: ev.conditions,
      nodeReclaim: [],
      evicted: [],
      admission: [],
    };
    if (ev.localStorageEvictions.length > 0) {
      out.evicted = ev.localStorageEvictions.map(evicted);
    } else if (ev.reclaim) {
      let resolved = false;
      if (ev.reclaim.functions.length > 0) {
        out.nodeReclaim = ev.reclaim.functions;
        // without afterReclaim, reclaim freed nothing: the numbers are those of the step
        resolved = resolvedByReclaim(scenario.config, scenario.layout, step.afterReclaim ?? step.node);
      }
      // every stop succeeds in a simulation, so the first candidate is the one evicted
      const first = ev.plan?.candidates[0];
      if (!resolved && first) out.evicted = [evicted(first)];
    }
    out.admission = step.admit.map((pod) => {
      const r = admit(pod, ev.conditions);
      return { pod: `${pod.namespace}/${pod.name}`, ...r };
    });
    yield out;
  }
}
