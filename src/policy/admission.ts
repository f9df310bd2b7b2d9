/** Pod admission under node pressure (kubelet's eviction manager Admit). */
import { EVICTION_REASON, nodeConditionMessage } from './messages';
import { isCritical, qosClass } from './pods';
import type { NodeCondition, PodSpec } from './types';

export interface AdmissionResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

const MEMORY_PRESSURE_TAINT = 'node.kubernetes.io/memory-pressure';

function toleratesMemoryPressure(pod: PodSpec): boolean {
  return (pod.tolerations ?? []).some((t) => {
    if (t.effect && t.effect !== 'NoSchedule') return false;
    if (!t.key) return t.operator === 'Exists'; // empty key with Exists tolerates everything
    if (t.key !== MEMORY_PRESSURE_TAINT) return false;
    return t.operator === 'Exists' || !t.value; // the taint has no value
  });
}

/**
 * Under MemoryPressure alone only BestEffort pods are refused (unless they tolerate the
 * memory-pressure taint); under any other condition every pod is refused. Critical pods are
 * always admitted. `conditions` are the node's current (transition-period-held) conditions.
 */
export function admit(pod: PodSpec, conditions: readonly NodeCondition[]): AdmissionResult {
  if (conditions.length === 0) return { admit: true };
  if (isCritical(pod)) return { admit: true };
  if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
    if (qosClass(pod) !== 'BestEffort') return { admit: true };
    if (toleratesMemoryPressure(pod)) return { admit: true };
  }
  return { admit: false, reason: EVICTION_REASON, message: nodeConditionMessage(conditions) };
}
