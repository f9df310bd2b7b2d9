/**
 * Property-based tests over every parser that reads user or kernel input: no input crashes,
 * and every refusal is one line that names the field. The seed is fixed (EVICTD_FC_SEED, default
 * below) so a CI failure replays exactly; a failure prints the seed and the shrunk input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Quantity, QuantityError } from '../../src/policy/quantity';
import { DurationError, formatDuration, parseDuration } from '../../src/policy/duration';
import { compileConfig, configFromFlags, configFromKubeletConfiguration, ConfigError } from '../../src/policy/config';
import { readScenario } from '../../src/sim/scenario';
import { simulate } from '../../src/sim/run';
import { UsageError } from '../../src/errors';
import { parseKeyValues } from '../../src/node/cgroups';
import { parseCounters } from '../../src/kernel/counters';
import { readMeminfo } from '../../src/node/memory';

const seed = Number(process.env.EVICTD_FC_SEED ?? 20261123);
const params = (numRuns = 400): fc.Parameters<unknown> => ({ seed, numRuns });
const check = <T>(arb: fc.Arbitrary<T>, predicate: (v: T) => void, numRuns?: number) =>
  fc.assert(fc.property(arb, predicate), params(numRuns) as fc.Parameters<[T]>);

/** A refusal: the expected class, one line, and starting with a field name from `fields`. */
function isOneLineRefusal(e: unknown, classes: (new (...a: never[]) => Error)[], fieldStart: RegExp): void {
  assert.ok(
    classes.some((c) => e instanceof c),
    `unexpected ${String(e)}${e instanceof Error ? `\n${e.stack}` : ''}`,
  );
  const message = (e as Error).message;
  assert.doesNotMatch(message, /[\r\n]/, message);
  assert.match(message, fieldStart, message);
}

// Strings near the grammar find more edge cases than uniform noise; noise is mixed in too.
const quantityish = fc.oneof(
  fc.stringMatching(/^[+-]?[0-9.]{0,8}([eE][+-]?[0-9]{0,5}|[numkKMGTPE]i?)?$/),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('91e934', '1e4096', '1e4097', '9Ei', '8Ei', '-0', '.', '+', '1.G', '0.0000000001', '1e-99999'),
);
const durationish = fc.oneof(
  fc.stringMatching(/^[+-]?([0-9.]{0,6}(ns|us|µs|μs|ms|s|m|h|d|x)?){0,3}$/),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('9223372036854775807ns', '9223372036854775808ns', '2562047h47m16.854775807s', '-2562047h47m16.854775808s', '0', '-0', '.s'),
);
const percentish = fc.oneof(
  fc.stringMatching(/^[+-]?[0-9.]{0,6}([eE][+-]?[0-9]{0,3})?%{1,2}$/),
  fc.constantFrom('NaN%', 'Inf%', '-0%', '100.0%', '1e-50%', '%'),
);
const SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
];
const signalish = fc.oneof(fc.constantFrom(...SIGNALS, '__proto__'), fc.string({ maxLength: 10 }));

test('quantities: parse or refuse with QuantityError; what parses prints back to the same value', () => {
  check(
    quantityish,
    (s) => {
      let q: Quantity;
      try {
        q = Quantity.parse(s);
      } catch (e) {
        return isOneLineRefusal(e, [QuantityError], /^invalid quantity /);
      }
      assert.equal(Quantity.parse(q.toString()).cmp(q), 0, `${s} -> ${q.toString()}`);
    },
    2000,
  );
});

test('durations: parse or refuse with DurationError; what parses prints back to the same value', () => {
  check(
    durationish,
    (s) => {
      let ns: number;
      try {
        ns = parseDuration(s);
      } catch (e) {
        return isOneLineRefusal(e, [DurationError], /^time: /);
      }
      if (Math.abs(ns) <= Number.MAX_SAFE_INTEGER) assert.equal(parseDuration(formatDuration(ns)), ns, `${s} -> ${formatDuration(ns)}`);
    },
    2000,
  );
});

test('threshold statements and percentages in flags: compile or refuse naming the flag', () => {
  const statement = fc.tuple(signalish, fc.oneof(quantityish, percentish)).map(([s, v]) => `${s}<${v}`);
  const flag = fc.array(fc.oneof(statement, fc.string({ maxLength: 8 })), { maxLength: 4 }).map((a) => a.join(','));
  const pairs = fc
    .array(
      fc.tuple(signalish, fc.oneof(durationish, quantityish, percentish)).map(([s, v]) => `${s}=${v}`),
      { maxLength: 3 },
    )
    .map((a) => a.join(','));
  check(
    fc.record({ evictionHard: flag, evictionSoft: flag, evictionSoftGracePeriod: pairs, evictionMinimumReclaim: pairs }, { requiredKeys: [] }),
    (flags) => {
      try {
        const p = compileConfig(configFromFlags(flags));
        for (const w of p.warnings) assert.doesNotMatch(w, /[\r\n]/);
        for (const t of p.thresholds) if (t.value.percentage !== undefined) assert.ok(t.value.percentage > 0 && t.value.percentage <= 1, t.value.text);
      } catch (e) {
        isOneLineRefusal(e, [ConfigError], /^--eviction-(hard|soft|soft-grace-period|minimum-reclaim)(\["(?:[^"\\]|\\.)*"\])?: /);
      }
    },
    1000,
  );
});

const FIELDS = [
  'evictionHard',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionMinimumReclaim',
  'evictionMaxPodGracePeriod',
  'evictionPressureTransitionPeriod',
  'enforceNodeAllocatable',
  'mergeDefaultEvictionSettings',
  'kind',
];
const mapOf = (v: fc.Arbitrary<unknown>) => fc.dictionary(signalish, v, { maxKeys: 3 });
const kubeletConfig = fc.oneof(
  fc.record(
    {
      evictionHard: fc.oneof(mapOf(fc.oneof(quantityish, percentish)), fc.anything()),
      evictionSoft: fc.oneof(mapOf(fc.oneof(quantityish, percentish)), fc.anything()),
      evictionSoftGracePeriod: fc.oneof(mapOf(durationish), fc.anything()),
      evictionMinimumReclaim: fc.oneof(mapOf(fc.oneof(quantityish, percentish)), fc.anything()),
      evictionMaxPodGracePeriod: fc.oneof(fc.integer(), fc.double(), fc.anything()),
      evictionPressureTransitionPeriod: fc.oneof(durationish, fc.anything()),
      enforceNodeAllocatable: fc.oneof(
        fc.array(fc.constantFrom('pods', 'none', 'system-reserved', 'kube-reserved', 'system-reserved-compressible', 'x')),
        fc.anything(),
      ),
      mergeDefaultEvictionSettings: fc.oneof(fc.boolean(), fc.anything()),
      kind: fc.oneof(fc.constant('KubeletConfiguration'), fc.anything()),
      evictonHard: fc.anything(),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);

test('KubeletConfiguration documents: compile or refuse naming the field', () => {
  const field = new RegExp(`^(config|${[...FIELDS, 'evictonHard'].join('|')})(\\["(?:[^"\\\\]|\\\\.)*"\\])?: `);
  check(
    kubeletConfig,
    (doc) => {
      try {
        compileConfig(configFromKubeletConfiguration(doc, ''));
      } catch (e) {
        isOneLineRefusal(e, [ConfigError], field);
      }
    },
    1500,
  );
});

// Scenarios: a valid skeleton whose every leaf may be replaced by noise, plus plain noise.
const leaf = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: fc.anything() as fc.Arbitrary<unknown> });
const amount = leaf(fc.oneof(quantityish, fc.nat(), fc.constantFrom('1Gi', '100Mi', '0')));
const fsStats = leaf(fc.record({ availableBytes: amount, capacityBytes: amount, inodesFree: amount, inodes: amount }, { requiredKeys: [] }));
const memStats = leaf(fc.record({ availableBytes: amount, workingSetBytes: amount }, { requiredKeys: [] }));
const node = leaf(
  fc.record(
    {
      memory: memStats,
      allocatableMemory: memStats,
      nodefs: fsStats,
      imagefs: fsStats,
      containerfs: fsStats,
      pid: leaf(fc.record({ maxPID: amount, running: amount }, { requiredKeys: [] })),
    },
    { requiredKeys: [] },
  ),
);
const resources = leaf(fc.dictionary(fc.constantFrom('cpu', 'memory', 'ephemeral-storage', '__proto__'), amount, { maxKeys: 3 }));
const container = leaf(
  fc.record(
    {
      name: leaf(fc.constantFrom('a', 'b')),
      requests: resources,
      limits: resources,
      usage: leaf(fc.record({ memory: amount, rootfs: amount, logs: amount, inodes: amount }, { requiredKeys: [] })),
    },
    { requiredKeys: ['name'] },
  ),
);
const pod = leaf(
  fc.record(
    {
      name: leaf(fc.constantFrom('p', 'q', 'r')),
      namespace: leaf(fc.constantFrom('default', 'kube-system')),
      priority: leaf(fc.integer()),
      terminationGracePeriodSeconds: leaf(fc.nat()),
      annotations: leaf(fc.constantFrom({}, { 'kubernetes.io/config.source': 'file' })),
      containers: leaf(fc.array(container, { maxLength: 2 })),
      volumes: leaf(
        fc.array(
          fc.record(
            {
              name: leaf(fc.constantFrom('v', 'w')),
              emptyDir: leaf(fc.record({ sizeLimit: amount, medium: leaf(fc.constantFrom('', 'Memory')) }, { requiredKeys: [] })),
              usage: amount,
            },
            { requiredKeys: ['name'] },
          ),
          { maxLength: 2 },
        ),
      ),
      tolerations: leaf(
        fc.array(
          fc.record(
            {
              key: leaf(fc.constantFrom('node.kubernetes.io/memory-pressure', '')),
              operator: leaf(fc.constantFrom('Exists', 'Equal')),
              effect: leaf(fc.constantFrom('NoSchedule', 'NoExecute')),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 2 },
        ),
      ),
      processes: amount,
    },
    { requiredKeys: ['name'] },
  ),
);
const scenario = fc.oneof(
  fc.record(
    {
      config: leaf(kubeletConfig),
      filesystems: leaf(fc.constantFrom('single', 'dedicated-imagefs', 'split')),
      steps: leaf(
        fc.array(
          leaf(
            fc.record(
              {
                at: leaf(fc.oneof(fc.constantFrom('0s', '10s', '1m'), durationish)),
                node,
                pods: leaf(fc.array(pod, { maxLength: 3 })),
                afterReclaim: node,
                admit: leaf(fc.array(pod, { maxLength: 2 })),
              },
              { requiredKeys: [] },
            ),
          ),
          { maxLength: 3 },
        ),
      ),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);

test('scenarios: run to the end or refuse with the path to the field', () => {
  check(
    scenario,
    (doc) => {
      try {
        for (const step of simulate(readScenario(doc))) JSON.stringify(step);
      } catch (e) {
        isOneLineRefusal(e, [UsageError, ConfigError], /^(scenario|config|filesystems|steps)(\.[\w./-]+|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*: /);
      }
    },
    1500,
  );
});

// Kernel files: flat keyed (memory.stat, memory.events, cgroup.events) and PSI lines.
const counterText = fc
  .array(
    fc.oneof(
      fc
        .tuple(
          fc.constantFrom('anon', 'file', 'inactive_file', 'oom_kill', 'populated', 'frozen', 'max', 'high', '__proto__', 'constructor'),
          fc.oneof(fc.nat().map(String), fc.string({ maxLength: 6 }), fc.constantFrom('-1', '1e3', '0x10', '', '18446744073709551615')),
        )
        .map(([k, v]) => `${k} ${v}`),
      fc
        .tuple(
          fc.constantFrom('some', 'full'),
          fc.array(
            fc.tuple(
              fc.constantFrom('avg10', 'avg60', 'avg300', 'total'),
              fc.oneof(
                fc.double({ min: 0, max: 100, noNaN: true }).map((d) => d.toFixed(2)),
                fc.constantFrom('-1.00', 'nan', ''),
              ),
            ),
            { maxLength: 4 },
          ),
        )
        .map(([k, pairs]) => `${k} ${pairs.map(([a, b]) => `${a}=${b}`).join(' ')}`),
      fc.string({ maxLength: 16 }),
    ),
    { maxLength: 6 },
  )
  .map((lines) => lines.join('\n'));

test('memory.stat, memory.events, cgroup.events and PSI lines: no throw, no negative, no NaN', () => {
  check(
    counterText,
    (text) => {
      for (const parsed of [parseKeyValues(text), parseCounters(text)]) {
        assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
        for (const [k, v] of Object.entries(parsed)) assert.ok(Number.isFinite(v) && v >= 0, `${k}=${v} from ${JSON.stringify(text)}`);
      }
    },
    1500,
  );
});

const meminfo = fc
  .record({
    total: fc.oneof(fc.nat(), fc.constant(-1)),
    free: fc.oneof(fc.nat(), fc.constant(-5)),
    inactive: fc.nat(),
    drop: fc.constantFrom('', 'MemTotal', 'MemFree', 'Inactive(file)'),
    noise: fc.string({ maxLength: 20 }),
  })
  .map(({ total, free, inactive, drop, noise }) =>
    [`MemTotal: ${total} kB`, `MemFree:  ${free} kB`, `Inactive(file):  ${inactive} kB`, noise]
      .filter((l) => drop === '' || !l.startsWith(`${drop}:`))
      .join('\n'),
  );

test('/proc/meminfo: free and inactive are clamped to total; a missing line is one refusal', () => {
  check(
    fc.oneof(meminfo, fc.string({ maxLength: 40 })),
    (text) => {
      try {
        const m = readMeminfo(text);
        assert.ok(m.totalBytes >= 0 && m.freeBytes >= 0 && m.inactiveFileBytes >= 0);
        assert.ok(m.freeBytes <= m.totalBytes && m.inactiveFileBytes <= m.totalBytes, JSON.stringify(m));
      } catch (e) {
        isOneLineRefusal(e, [Error], /^\/proc\/meminfo: no (MemTotal|MemFree|Inactive\(file\)) line$/);
      }
    },
    1000,
  );
});
