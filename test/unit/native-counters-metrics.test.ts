/** Counters native code keeps (order refusals, reaped tasks), as /metrics shows them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentMetrics } from '../../src/agent/metrics';

function series(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${name}\\{[a-z]+="([^"]+)"\\} (\\d+)$`, 'gm'))) out[m[1]!] = Number(m[2]);
  return out;
}

test('a native count shows from the first scrape, follows the count, and counts on when the count starts again', async () => {
  let counts = { reaped: 0, 'not-reaped': 0 };
  let refusals = { 'bpf-tripwire': 0 };
  const m = new AgentMetrics({ reaps: () => counts, orderRefusals: () => refusals });
  assert.deepEqual(series(await m.registry.metrics(), 'evictd_killed_tasks_reaped_total'), { reaped: 0, 'not-reaped': 0 });
  counts = { reaped: 3, 'not-reaped': 1 };
  refusals = { 'bpf-tripwire': 2 };
  let text = await m.registry.metrics();
  assert.deepEqual(series(text, 'evictd_killed_tasks_reaped_total'), { reaped: 3, 'not-reaped': 1 });
  assert.deepEqual(series(text, 'evictd_standing_order_refusals_total'), { 'bpf-tripwire': 2 });
  // The addon's environment restarted: its counts begin at 0 again, and what they count is new.
  counts = { reaped: 1, 'not-reaped': 0 };
  text = await m.registry.metrics();
  assert.deepEqual(series(text, 'evictd_killed_tasks_reaped_total'), { reaped: 4, 'not-reaped': 1 });
  counts = { reaped: 5, 'not-reaped': 2 };
  assert.deepEqual(series(await m.registry.metrics(), 'evictd_killed_tasks_reaped_total'), { reaped: 8, 'not-reaped': 3 });
});
