/**
 * Node conditions and their transition period on every signal (helpers.go nodeConditions,
 * nodeConditionsLastObservedAt, nodeConditionsObservedSince; signalToNodeCondition).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FilesystemLayout } from '../../../src/policy/types';
import { compileConfig, configFromFlags } from '../../../src/policy/config';
import { evaluate, initialState } from '../../../src/policy/evaluate';
import { run } from './helpers';

interface Case {
  signal: string;
  condition: string;
  config: Record<string, unknown>;
  layout?: FilesystemLayout;
  met: Record<string, unknown>;
  clear: Record<string, unknown>;
}

const fs = (available: string, inodesFree = 1000) => ({ availableBytes: available, capacityBytes: '100Gi', inodesFree, inodes: 1000 });
const CASES: Case[] = [
  {
    signal: 'memory.available',
    condition: 'MemoryPressure',
    config: { evictionHard: { 'memory.available': '1Gi' } },
    met: { memory: { availableBytes: '500Mi', workingSetBytes: '1Gi' } },
    clear: { memory: { availableBytes: '5Gi', workingSetBytes: '1Gi' } },
  },
  {
    signal: 'allocatableMemory.available',
    condition: 'MemoryPressure',
    config: { evictionHard: { 'memory.available': '1Gi' } }, // addAllocatableThresholds
    met: { allocatableMemory: { availableBytes: '500Mi', workingSetBytes: '1Gi' } },
    clear: { allocatableMemory: { availableBytes: '5Gi', workingSetBytes: '1Gi' } },
  },
  {
    signal: 'nodefs.available',
    condition: 'DiskPressure',
    config: { evictionHard: { 'nodefs.available': '10%' } },
    met: { nodefs: fs('1Gi') },
    clear: { nodefs: fs('50Gi') },
  },
  {
    signal: 'nodefs.inodesFree',
    condition: 'DiskPressure',
    config: { evictionHard: { 'nodefs.inodesFree': '5%' } },
    met: { nodefs: fs('50Gi', 10) },
    clear: { nodefs: fs('50Gi', 900) },
  },
  {
    signal: 'imagefs.available',
    condition: 'DiskPressure',
    config: { evictionHard: { 'imagefs.available': '15%' } },
    layout: 'dedicated-imagefs',
    met: { imagefs: fs('1Gi') },
    clear: { imagefs: fs('50Gi') },
  },
  {
    signal: 'imagefs.inodesFree',
    condition: 'DiskPressure',
    config: { evictionHard: { 'imagefs.inodesFree': '5%' } },
    layout: 'dedicated-imagefs',
    met: { imagefs: fs('50Gi', 10) },
    clear: { imagefs: fs('50Gi', 900) },
  },
  {
    signal: 'containerfs.available',
    condition: 'DiskPressure',
    config: { evictionHard: { 'nodefs.available': '10%' } },
    layout: 'split',
    met: { containerfs: fs('1Gi') },
    clear: { containerfs: fs('50Gi') },
  },
  {
    signal: 'containerfs.inodesFree',
    condition: 'DiskPressure',
    config: { evictionHard: { 'imagefs.inodesFree': '5%' } },
    layout: 'dedicated-imagefs',
    met: { containerfs: fs('50Gi', 10) },
    clear: { containerfs: fs('50Gi', 900) },
  },
  {
    signal: 'pid.available',
    condition: 'PIDPressure',
    config: { evictionHard: { 'pid.available': '100' } },
    met: { pid: { maxPID: 1000, running: 950 } },
    clear: { pid: { maxPID: 1000, running: 10 } },
  },
];

test('every signal reports its condition, held for the transition period after it was last met', () => {
  for (const c of CASES) {
    const steps = run({
      config: { ...c.config, evictionPressureTransitionPeriod: '1m' },
      filesystems: c.layout ?? 'single',
      steps: [
        { at: '0s', node: c.clear },
        { at: '10s', node: c.met },
        { at: '20s', node: c.clear }, // cleared: the condition is held (20s - 10s < 1m)
        { at: '1m9s', node: c.clear }, // 59s after the last sighting: still held
        { at: '1m10s', node: c.clear }, // exactly 1m: "duration < period" fails, the condition goes
      ],
    });
    const held = steps.map((s) => s.conditions.join(','));
    assert.deepEqual(held, ['', c.condition, c.condition, c.condition, ''], c.signal);
    assert.deepEqual(
      steps[1]!.thresholdsMet.map((t) => t.signal),
      [c.signal],
      c.signal,
    );
  }
});

test('a soft threshold sets its condition before its grace period is met', () => {
  const steps = run({
    config: { evictionHard: {}, evictionSoft: { 'memory.available': '2Gi' }, evictionSoftGracePeriod: { 'memory.available': '5m' } },
    steps: [{ at: '0s', node: { memory: { availableBytes: '1Gi', workingSetBytes: '1Gi' } } }],
  });
  assert.deepEqual(steps[0]!.conditions, ['MemoryPressure']);
  assert.equal(steps[0]!.thresholdsMet[0]!.gracePeriodMet, false);
});

test('conditions are sorted when several hold (the kubelet lists them in map order; evictd sorts)', () => {
  const [s] = run({
    config: { evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10%', 'pid.available': '100' } },
    steps: [{ at: '0s', node: { ...CASES[8]!.met, ...CASES[2]!.met, ...CASES[0]!.met } }],
  });
  assert.deepEqual(s!.conditions, ['DiskPressure', 'MemoryPressure', 'PIDPressure']);
});

test('a 1ns transition period shows a condition only while it is met; "0s" in a file means 5m', () => {
  const steps = run({
    // in a scenario's config (a file) "0s" is the zero value and means 5m; "1ns" is the shortest hold
    config: { evictionHard: { 'memory.available': '1Gi' }, evictionPressureTransitionPeriod: '1ns' },
    steps: [
      { at: '0s', node: CASES[0]!.met },
      { at: '1s', node: CASES[0]!.clear },
    ],
  });
  assert.deepEqual(
    steps.map((s) => s.conditions),
    [['MemoryPressure'], []],
  );
  // A literal 0 (a flag's "0s") shows no condition at all, even while met: nodeConditionsObservedSince
  // keeps a condition while "now - last seen < period", and 0 < 0 is false.
  const config = compileConfig(configFromFlags({ evictionHard: 'memory.available<1Gi', evictionPressureTransitionPeriod: '0s' }));
  const met = evaluate(config, initialState(), { now: 0, node: { memory: { availableBytes: 1, workingSetBytes: 2 ** 30 } }, pods: [], layout: 'single' });
  assert.equal(met.thresholdsMet.length, 1);
  assert.deepEqual(met.conditions, []);
  const defaulted = run({
    config: { evictionHard: { 'memory.available': '1Gi' }, evictionPressureTransitionPeriod: '0s' },
    steps: [
      { at: '0s', node: CASES[0]!.met },
      { at: '4m59s', node: CASES[0]!.clear },
    ],
  });
  assert.deepEqual(
    defaulted.map((s) => s.conditions),
    [['MemoryPressure'], ['MemoryPressure']],
  );
});
