import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chooseLineMechanism, watchUsageThreshold } from '../../src/kernel/select';
import { tempDir } from '../support/temp-dir';

// `--notifications poll`: the adaptive poller is chosen, not fallen back to, so nothing warns
// and the tripwire is never probed (probing would load the BPF object).

test("lines 'poll': the adaptive poller, with no fallback reported, whatever the cgroup", () => {
  for (const dir of ['/', '/sys/fs/cgroup', '/nonexistent']) assert.deepEqual(chooseLineMechanism(dir, 'poll'), { mechanism: 'adaptive-poll', fallbacks: [] });
});

test("lines 'poll': a watched line logs no fallback and reads the cgroup's memory.current", (t) => {
  const dir = tempDir('poll');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'memory.current'), String(10 << 20));
  const warnings: string[] = [];
  const w = watchUsageThreshold(dir, 20 << 20, { intervalMs: 10, lines: 'poll', log: { warn: (_f, message) => warnings.push(message) } });
  t.after(() => w.close());
  assert.equal(w.lineMechanism, 'adaptive-poll');
  assert.equal(w.source, path.join(dir, 'memory.current'));
  assert.deepEqual(warnings, []);
});
