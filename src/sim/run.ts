/**
 * Runs the policy over a scenario exactly as the agent's passes do, with a fake clock: the same
 * assessment, plan and ordered actions (policy/actions.ts); only their outcome is assumed.
 */
import { decideActions } from '../policy/actions';
import { admit } from '../policy/admission';
import { assess, initialState, planEvictions, resolvedByReclaim, type Eviction } from '../policy/evaluate';
import { formatDuration } from '../policy/duration';
import type { NodeCondition, NodeReclaimFunction } from '../policy/types';
import { decideMemoryPressure, initialMemoryPressureState } from '../policy/memory-pressure';
import type { Scenario } from './scenario';

export interface StepResult {
  at: string;
  thresholdsMet: { signal: string; kind: string; quantity: string; gracePeriodMet: boolean }[];
  conditions: NodeCondition[];
  nodeReclaim: NodeReclaimFunction[];
  evicted: { pod: string; signal: string; gracePeriodSeconds: number; message: string; annotations: Record<string, string> }[];
  /** KEP-5986 (only when on): stage-1 relaxes, `namespace/name/container`, and the pods with the ContainerMemoryPressure condition */
  memoryHighRelaxed?: string[];
  containerMemoryPressure?: string[];
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
  let pressureState = initialMemoryPressureState();
  const cfg = scenario.config;
  for (const step of scenario.steps) {
    const pressure = cfg.memoryPressure ? decideMemoryPressure(cfg.memoryPressure, cfg.maxPodGracePeriodSeconds, pressureState, step.at, step.pods) : undefined;
    if (pressure) pressureState = pressure.state;
    const assessed = assess(scenario.config, state, { now: step.at, node: step.node, layout: scenario.layout });
    const ev = planEvictions(scenario.config, assessed, step.pods, scenario.layout);
    state = ev.state;
    const out: StepResult = {
      at: formatDuration(step.at),
      thresholdsMet: ev.thresholdsMet.map((t) => ({ signal: t.signal, kind: t.kind, quantity: t.quantity, gracePeriodMet: t.gracePeriodMet })),
      conditions: ev.conditions,
      nodeReclaim: [],
      evicted: [],
      admission: [],
    };
    // The memory brake is the agent's alone: a scenario validates it and decides nothing with it.
    if (pressure) {
      out.memoryHighRelaxed = pressure.relax.map((r) => `${r.pod.namespace}/${r.pod.name}/${r.container}`);
      out.containerMemoryPressure = pressure.conditions.map((p) => `${p.namespace}/${p.name}`);
    }
    // every relax succeeds in a simulation (the runtime's refusal is the agent's: relaxOutcome)
    for (const action of decideActions(scenario.config, assessed, ev, undefined, [], pressure)) {
      if (action.type === 'evict-all') out.evicted = action.evictions.map(evicted);
      if (action.type === 'evict-pressured') out.evicted = [evicted(action.eviction)];
      if (action.type === 'reclaim') {
        out.nodeReclaim = action.functions;
        // without afterReclaim, reclaim freed nothing: the numbers are those of the step
        if (resolvedByReclaim(scenario.config, scenario.layout, step.afterReclaim ?? step.node)) break;
      }
      // every stop succeeds in a simulation, so the first candidate is the one evicted
      if (action.type === 'evict-one' && action.candidates[0]) out.evicted = [evicted(action.candidates[0])];
    }
    out.admission = step.admit.map((pod) => {
      const r = admit(pod, ev.conditions);
      return { pod: `${pod.namespace}/${pod.name}`, ...r };
    });
    yield out;
  }
}
