/**
 * The signal records (src/policy/signals.ts) against everything that reads them: every signal
 * in the table, walked through the config, the scenario reader, the observations, the ranking,
 * node-level reclaim, the eviction message, the reporter's node event and the pass's helper.
 * A new signal whose record one of them does not follow fails here, naming the signal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../../src/kube/client';
import { EvictionReporter, resourceOfSignal } from '../../src/kube/eviction-reporter';
import { compileConfig } from '../../src/policy/config';
import { Quantity } from '../../src/policy/quantity';
import { rankFor } from '../../src/policy/ranking';
import { nodeReclaimFunctions } from '../../src/policy/reclaim';
import { NODE_PARTS, OBSERVED_PARTS, SIGNAL_TABLE, isMemorySignal, needsContainerDiskUsage, type NodePart } from '../../src/policy/signals';
import { conditionsOf, makeObservations, thresholdsForLayout } from '../../src/policy/thresholds';
import { SIGNALS, type FilesystemLayout, type Signal } from '../../src/policy/types';
import { simulate } from '../../src/sim/run';
import { readScenario } from '../../src/sim/scenario';

const LAYOUTS: FilesystemLayout[] = ['single', 'dedicated-imagefs', 'split'];

// The kubelet's own maps (helpers.go signalToResource, signalToNodeCondition) and the formats of
// makeSignalObservations: the facts each record must carry.
const KUBELET: Record<Signal, [resource: string, condition: string, format: string]> = {
  'memory.available': ['memory', 'MemoryPressure', 'BinarySI'],
  'allocatableMemory.available': ['memory', 'MemoryPressure', 'BinarySI'],
  'nodefs.available': ['ephemeral-storage', 'DiskPressure', 'BinarySI'],
  'nodefs.inodesFree': ['inodes', 'DiskPressure', 'DecimalSI'],
  'imagefs.available': ['ephemeral-storage', 'DiskPressure', 'BinarySI'],
  'imagefs.inodesFree': ['inodes', 'DiskPressure', 'DecimalSI'],
  'containerfs.available': ['ephemeral-storage', 'DiskPressure', 'BinarySI'],
  'containerfs.inodesFree': ['inodes', 'DiskPressure', 'DecimalSI'],
  'pid.available': ['pids', 'PIDPressure', 'DecimalSI'],
};

// A node reading in which every signal is far below a 50% threshold. A new field of a node part
// needs a value here.
const FIELD_VALUES: Record<string, number> = {
  availableBytes: 1024 ** 3,
  workingSetBytes: 3 * 1024 ** 3,
  capacityBytes: 4 * 1024 ** 3,
  inodesFree: 100,
  inodes: 1000,
  maxPID: 1000,
  running: 900,
};
function partReading(part: NodePart): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of NODE_PARTS[part].fields) {
    assert.ok(FIELD_VALUES[f] !== undefined, `${part}.${f}: give it a value in FIELD_VALUES`);
    out[f] = FIELD_VALUES[f];
  }
  return out;
}

const pod = {
  name: 'hog',
  containers: [{ name: 'app', usage: { memory: '300Mi', rootfs: '200Mi', logs: '10Mi', inodes: 50 } }],
  volumes: [{ name: 'scratch', emptyDir: {}, usage: '100Mi', inodes: 5 }],
  processes: 40,
};

test('the table holds one record per signal, in SIGNALS order, each named by its key', () => {
  assert.deepEqual(Object.keys(SIGNAL_TABLE), [...SIGNALS]);
  for (const s of SIGNALS) assert.equal(SIGNAL_TABLE[s].name, s);
});

test("each record carries the kubelet's resource, condition and observation format", () => {
  for (const s of SIGNALS) {
    const r = SIGNAL_TABLE[s];
    assert.deepEqual([r.resource, r.condition, r.format], KUBELET[s], s);
    assert.deepEqual(conditionsOf([{ signal: s, kind: 'hard', value: { text: '1' }, gracePeriodNs: 0 }]), [r.condition], s);
  }
});

test('the reporter names the resource of the record, in the result and in its node event', async () => {
  for (const s of SIGNALS) {
    assert.equal(resourceOfSignal(s), SIGNAL_TABLE[s].resource, s);
    const posted: { message?: string }[] = [];
    const client = {
      request: async (_m: string, _p: string, o: { body?: { message?: string } } = {}) => void posted.push(o.body ?? {}),
    } as unknown as KubeClient;
    await new EvictionReporter({ client, nodeName: 'n' }).thresholdMet(s);
    assert.deepEqual(
      posted.map((b) => b.message),
      [`Attempting to reclaim ${SIGNAL_TABLE[s].resource}`],
      s,
    );
  }
  for (const s of ['emptydirfs.limit', 'ephemeralpodfs.limit', 'ephemeralcontainerfs.limit', 'toString', '__proto__'])
    assert.equal(resourceOfSignal(s), undefined, s);
});

test("the scenario reader takes the node parts the records read, each with its shape's fields", () => {
  assert.deepEqual(new Set(OBSERVED_PARTS), new Set(Object.keys(NODE_PARTS)), 'every part described is read by a signal, and every part read is described');
  for (const part of OBSERVED_PARTS) {
    const [step] = readScenario({ steps: [{ node: { [part]: partReading(part) } }] }).steps;
    assert.deepEqual(step!.node, { [part]: partReading(part) }, part);
    assert.throws(
      () => readScenario({ steps: [{ node: { [part]: { nope: 1 } } }] }),
      new RegExp(`steps\\[0\\]\\.node\\.${part}\\.nope: 1: unknown field \\(known: ${NODE_PARTS[part].fields.join(', ')}\\)`),
    );
  }
  assert.throws(() => readScenario({ steps: [{ node: { gpu: {} } }] }), new RegExp(`unknown field \\(known: ${[...OBSERVED_PARTS, 'swap'].join(', ')}\\)`));
});

test('each signal is observed from its own part, and only there', () => {
  for (const part of OBSERVED_PARTS) {
    const obs = makeObservations({ [part]: partReading(part) });
    assert.deepEqual(
      Object.keys(obs),
      SIGNALS.filter((s) => SIGNAL_TABLE[s].observed.part === part),
      part,
    );
    for (const [s, o] of Object.entries(obs)) assert.ok(o.available < o.capacity / 2, `${s}: available ${o.available} of ${o.capacity}`);
  }
});

test('config: exactly the derived signals are never configured; each is copied per layout from its source', () => {
  for (const s of SIGNALS) {
    const config = compileConfig({ evictionHard: { [s]: '1Gi' }, enforceNodeAllocatable: [] });
    const derivedFrom = SIGNAL_TABLE[s].derivedFrom;
    assert.equal(
      config.thresholds.some((t) => t.signal === s),
      !derivedFrom,
      s,
    );
    if (!derivedFrom) continue;
    for (const layout of LAYOUTS) {
      const source = compileConfig({ evictionHard: { [derivedFrom[layout]]: '1Gi' }, enforceNodeAllocatable: [] });
      assert.ok(
        thresholdsForLayout(source.thresholds, layout).some((t) => t.signal === s && t.value.text === '1Gi'),
        `${s} from ${derivedFrom[layout]} on ${layout}`,
      );
    }
  }
});

test('the ranking and the pass read what the record says', () => {
  for (const s of SIGNALS) {
    const r = SIGNAL_TABLE[s];
    // the disk ranking reads writable layers and logs; so does the ephemeral-storage message
    assert.equal(needsContainerDiskUsage(s), r.ranking.by === 'disk', s);
    if (r.resource === 'ephemeral-storage') assert.ok(needsContainerDiskUsage(s), s);
    assert.equal(isMemorySignal(s), r.ranking.by === 'memory', s);
    for (const layout of LAYOUTS) {
      const reasons = rankFor(s, layout, [
        {
          spec: { namespace: 'd', name: 'p', uid: 'p', priority: 0, annotations: {}, containers: [], volumes: [] },
          usage: { containers: [], volumes: [], processes: 3 },
        },
      ])[0]!.reasons;
      if (r.ranking.by === 'memory') assert.match(reasons[0]!, /^memory usage /, s);
      if (r.ranking.by === 'pids') assert.equal(reasons[1], '3 processes', s);
      if (r.ranking.by === 'disk') {
        const measure = r.resource === 'inodes' ? 'inode usage' : 'disk usage';
        assert.ok(reasons[0]!.startsWith(`${measure} 0 (${r.ranking.usage[layout].join('+') || 'nothing'})`), `${s} on ${layout}: ${reasons[0]}`);
      }
    }
  }
});

test('simulate: a met threshold on each signal, on each layout, follows its record end to end', () => {
  for (const s of SIGNALS) {
    const r = SIGNAL_TABLE[s];
    const part = r.observed.part;
    for (const layout of LAYOUTS) {
      const configured = r.derivedFrom ? r.derivedFrom[layout] : s;
      const [out] = [
        ...simulate(
          readScenario({
            config: { evictionHard: { [configured]: '50%' }, enforceNodeAllocatable: [] },
            filesystems: layout,
            steps: [{ node: { [part]: partReading(part) }, pods: [pod] }],
          }),
        ),
      ];
      const what = `${s} on ${layout}`;
      assert.deepEqual(
        out!.thresholdsMet.map((t) => t.signal),
        [s],
        what,
      );
      assert.deepEqual(out!.conditions, [r.condition], what);
      assert.deepEqual(out!.nodeReclaim, nodeReclaimFunctions(s, layout), what);
      assert.deepEqual(out!.nodeReclaim, [...r.reclaim[layout]], what);
      const e = out!.evicted[0]!;
      assert.equal(e.signal, s, what);
      assert.equal(e.annotations.starved_resource, r.resource, what);
      const available = Quantity.fromNumber(makeObservations({ [part]: partReading(part) })[s]!.available, r.format).toString();
      assert.ok(e.message.startsWith(`The node was low on resource: ${r.resource}. Threshold quantity: `), `${what}: ${e.message}`);
      assert.ok(e.message.includes(`, available: ${available}. `), `${what}: ${e.message}`);
    }
  }
});
