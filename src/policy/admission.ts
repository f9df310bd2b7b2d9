/** Pod admission under node pressure (kubelet's eviction manager Admit). */
import { EVICTION_REASON, nodeConditionMessage } from './messages';
import { isCritical, qosClass } from './pods';
import type { NodeCondition, PodSpec } from './types';

export interface AdmissionResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

const MEMORY_PRESSURE_TAINT = { key: 'node.kubernetes.io/memory-pressure', value: '', effect: 'NoSchedule' };

/**
 * core/v1 Toleration.ToleratesTaint, applied as the kubelet's Admit does
 * (TolerationsTolerateTaint with the memory-pressure taint, effect NoSchedule, no value):
 * an empty effect or key matches any, Exists matches any value, Equal (or no operator) needs
 * the same value, and any other operator matches nothing.
 */
function toleratesMemoryPressure(pod: PodSpec): boolean {
  const taint = MEMORY_PRESSURE_TAINT;
  return (pod.tolerations ?? []).some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if (t.key && t.key !== taint.key) return false;
    if (t.operator === undefined || (t.operator as string) === '' || t.operator === 'Equal') return (t.value ?? '') === taint.value;
    return t.operator === 'Exists';
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
