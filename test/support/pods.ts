/** Pod fixtures for the policy's unit tests. */
import { Quantity } from '../../src/policy/quantity';
import type { ActivePod } from '../../src/policy/types';

/** n MiB in bytes. */
export const mi = (n: number): number => n * 2 ** 20;

/**
 * A one-container pod in namespace "ns" (uid "uid-<name>") using `usageMi` of memory against a
 * request of `requestMi` (0: no request, a BestEffort-like container); `extra` overrides the spec.
 */
export const memoryPod = (name: string, usageMi: number, requestMi: number, extra: Partial<ActivePod['spec']> = {}): ActivePod => ({
  spec: {
    namespace: 'ns',
    name,
    uid: `uid-${name}`,
    priority: 0,
    annotations: {},
    volumes: [],
    containers: [{ name: 'c', requests: requestMi ? { memory: Quantity.fromNumber(mi(requestMi), 'BinarySI') } : {}, limits: {} }],
    ...extra,
  },
  usage: { containers: [{ name: 'c', memoryBytes: mi(usageMi) }], volumes: [] },
});
