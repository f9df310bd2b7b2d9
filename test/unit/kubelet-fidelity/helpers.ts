/** Small builders shared by the kubelet-fidelity tables: scenarios in, step results out. */
import { readScenario } from '../../../src/sim/scenario';
import { simulate, type StepResult } from '../../../src/sim/run';
import { compileConfig, configFromKubeletConfiguration, type PolicyConfig } from '../../../src/policy/config';

export const run = (doc: unknown): StepResult[] => [...simulate(readScenario(doc))];

/** A KubeletConfiguration document compiled as `evictd run --config` and `simulate` do. */
export const compileDoc = (doc: unknown): PolicyConfig => compileConfig(configFromKubeletConfiguration(doc));

/** "signal<text (kind)" per threshold, in order: compact enough to compare whole tables. */
export const describe = (c: PolicyConfig): string[] =>
  c.thresholds.map((t) => `${t.signal}<${t.value.text} (${t.kind}${t.gracePeriodNs ? ` ${t.gracePeriodNs / 1e9}s` : ''})`);

export const mem = (available: string, workingSet = '4Gi') => ({ memory: { availableBytes: available, workingSetBytes: workingSet } });

export const memPod = (name: string, usage: string, request?: string, extra: Record<string, unknown> = {}) => ({
  name,
  containers: [{ name: 'app', ...(request ? { requests: { memory: request } } : {}), usage: { memory: usage } }],
  ...extra,
});

export const diskPod = (name: string, usage: { rootfs?: string; logs?: string; inodes?: number }, extra: Record<string, unknown> = {}) => ({
  name,
  containers: [{ name: 'app', usage }],
  ...extra,
});

export const names = (s: StepResult): string[] => s.evicted.map((e) => e.pod);
