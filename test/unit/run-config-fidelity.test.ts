/**
 * `evictd run`'s reading of the kubelet's flags and config file, as the kubelet reads them
 * (cmd/kubelet/app: the file is defaulted, then the command line is parsed over it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseFlags, settingsFromFlags } from '../../src/cli/run';
import { UsageError } from '../../src/errors';
import { tempDir } from '../support/temp-dir';

const dir = tempDir('runcfg');
const config = (name: string, text: string) => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
};
const settings = (...argv: string[]) => settingsFromFlags(parseFlags(argv));

test('a repeated map flag adds to the first, as the kubelet map flags do; a repeated key keeps the last, with a warning', () => {
  const s = settings('--eviction-hard=memory.available<1Gi', '--eviction-hard', 'nodefs.available<5%,memory.available<2Gi');
  assert.deepEqual(
    s.policy.thresholds.map((t) => `${t.signal}<${t.value.text}`),
    ['memory.available<2Gi', 'nodefs.available<5%', 'allocatableMemory.available<2Gi'],
  );
  assert.deepEqual(s.policy.warnings, [
    '--eviction-hard: memory.available is given more than once ("1Gi", then "2Gi"): kept the last, "2Gi", as the kubelet does',
  ]);
  // a non-map flag given twice: the last wins, as pflag does for plain values
  assert.equal(settings('--housekeeping-interval=1s', '--housekeeping-interval=2s').housekeepingIntervalMs, 2000);
});

test('the config file is defaulted before the flags go over it', () => {
  const zero = config(
    'zero.yaml',
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionPressureTransitionPeriod: 0s\nevictionMaxPodGracePeriod: 0\n',
  );
  assert.equal(settings('--config', zero).policy.pressureTransitionPeriodNs, 5 * 60e9);
  assert.equal(settings('--config', zero, '--eviction-pressure-transition-period=0s').policy.pressureTransitionPeriodNs, 0);
  assert.equal(settings('--config', zero, '--eviction-max-pod-grace-period=7').policy.maxPodGracePeriodSeconds, 7);
});

test('a configured containerfs threshold is dropped with a warning naming the file field', () => {
  const f = config(
    'cfs.yaml',
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard:\n  containerfs.available: "10%"\n  memory.available: "1Gi"\n',
  );
  const s = settings('--config', f);
  assert.ok(s.policy.thresholds.every((t) => !t.signal.startsWith('containerfs.')));
  assert.equal(s.policy.warnings.length, 1);
  assert.match(s.policy.warnings[0]!, new RegExp(`^${f.replace(/[.\\/]/g, '\\$&')}: evictionHard\\["containerfs\\.available"\\]: "10%": ignored`));
});

test('timer durations: the longest Node timer is accepted, one millisecond more is refused', () => {
  assert.equal(settings('--housekeeping-interval=2147483647ms').housekeepingIntervalMs, 2 ** 31 - 1);
  assert.throws(
    () => settings('--housekeeping-interval=2147483648ms'),
    (e: unknown) => e instanceof UsageError && /^--housekeeping-interval: "2147483648ms": must be at most 596h31m23\.647s/.test(e.message),
  );
  assert.throws(
    () => settings('--release-timeout=600h'),
    (e: unknown) => e instanceof UsageError && /^--release-timeout: "600h": must be at most/.test(e.message),
  );
  assert.throws(() => settings('--housekeeping-interval=0s'), /must be positive/);
});
