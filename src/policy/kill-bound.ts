/**
 * How long the kubelet waits for a pod's kill before it calls the kill failed (killPodNow):
 * the grace period and half of it again, in whole seconds as the kubelet's integer arithmetic
 * has it (grace 7 -> 10 s, not 10.5), and at least 10 s for the traffic to the runtime.
 */
export function killPodBoundMs(graceSeconds: number): number {
  const g = Math.max(0, Math.floor(graceSeconds));
  return Math.max(10, g + Math.floor(g / 2)) * 1000;
}
