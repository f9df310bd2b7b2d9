/** The CRI client's deadline is on the monotonic clock: a wall clock stepped back does not stretch a call's retries. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { CriClient } from '../../src/cri/client';
import { tempDir } from '../support/temp-dir';

test('a runtime that is not there: the retries end at the deadline even when the wall clock steps back an hour meanwhile', async (t) => {
  const dir = tempDir('cri-clock');
  const client = CriClient.connect(`unix://${path.join(dir, 'absent.sock')}`, { timeoutMs: 600 });
  const realNow = Date.now;
  t.after(() => {
    Date.now = realNow;
    client.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const t0 = performance.now();
  const step = setTimeout(() => {
    const back = realNow() - 3_600_000;
    const at = realNow();
    Date.now = () => back + (realNow() - at);
  }, 150);
  await assert.rejects(client.version(), (e: Error & { code?: number }) => /UNAVAILABLE|Unavailable|unavailable/.test(`${e.message}`));
  clearTimeout(step);
  const ms = performance.now() - t0;
  assert.ok(ms < 2_000, `the call ended at its 600 ms deadline, not an hour later (${Math.round(ms)} ms)`);
});
