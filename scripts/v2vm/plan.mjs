#!/usr/bin/env node
// Splits the pure cgroup v2 lab's test files over LABS virtual machines that run side by side
// (scripts/v2vm/suites): the longest file first, each to the lab with the least work so far, by
// the seconds each file took in the lab in CI (SECONDS below; a file not listed counts
// DEFAULT_SECONDS). A stale table only balances the labs less well: every file still runs once.
//
//   node scripts/v2vm/plan.mjs LABS SUITE...
//
// Prints one line per lab: its suites in SUITE's order, each as SUITE=FILE,FILE (paths under
// dist/test/SUITE/). A lab's suites run one after the other in it, each file alone
// (--test-concurrency=1), as in one lab; the labs share nothing but the host's read-only tree.
import fs from 'node:fs';
import path from 'node:path';

/**
 * Seconds of tests per file in the lab, from the CI run of 2026-11-29 (a 2-core host, TCG; the
 * sum of the file's tests' durations). Loading the tree adds about LOAD_SECONDS to every file.
 */
const SECONDS = {
  'kernel/adaptive-poller.test.js': 4,
  'kernel/bench-notify.test.js': 24,
  'kernel/lifecycle.test.js': 21,
  'kernel/memcg-threshold.test.js': 0,
  'kernel/memory-lock.test.js': 4,
  'kernel/notification-contract.test.js': 9,
  'kernel/oom-events.test.js': 1,
  'kernel/order-exactness.test.js': 57,
  'kernel/polling.test.js': 1,
  'kernel/psi.test.js': 2,
  'kernel/reap.test.js': 15,
  'kernel/scheduling.test.js': 2,
  'kernel/tripwire-working-set.test.js': 30,
  'kernel/tripwire.test.js': 29,
  'e2e/containerd-faults.test.js': 51,
  'e2e/containerd.test.js': 71,
  'e2e/cri-client.test.js': 18,
  'e2e/relax-memory-high.test.js': 30,
  'agent/bench-interrupt.test.js': 60,
  'agent/bench-peers.test.js': 286,
  'agent/brake-memory-qos.test.js': 2,
  'agent/brake.test.js': 65,
  'agent/container-pressure.test.js': 24,
  'agent/crash-points.test.js': 63,
  'agent/demo.test.js': 67,
  'agent/deployment.test.js': 130,
  'agent/evict-disk.test.js': 32,
  'agent/evict-faults.test.js': 66,
  'agent/evict-local-storage.test.js': 30,
  'agent/evict-memory.test.js': 39,
  'agent/kube-faults.test.js': 36,
  'agent/kube-pods.test.js': 11,
  'agent/memory-pressure.test.js': 60,
  'agent/node-lab-destroy.test.js': 3,
  'agent/node-observer.test.js': 4,
  'agent/record-process.test.js': 13,
  'agent/run-process.test.js': 18,
  'agent/runtime-outage.test.js': 50,
  'agent/soft-stop-in-flight.test.js': 40,
  'agent/state-dir-faults.test.js': 25,
};
const DEFAULT_SECONDS = 30;
const LOAD_SECONDS = 4;

const [labsArg, ...suites] = process.argv.slice(2);
const labs = Number(labsArg);
if (!Number.isInteger(labs) || labs < 1 || suites.length === 0) {
  console.error('usage: node scripts/v2vm/plan.mjs LABS SUITE...');
  process.exit(2);
}
const files = suites.flatMap((suite) => {
  const dir = path.join('dist/test', suite);
  if (!fs.existsSync(dir)) {
    console.error(`plan: no ${dir} (a suite of the lab: kernel, e2e or agent, built by npm run build)`);
    process.exit(2);
  }
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.test.js'))
    .sort()
    .map((f) => ({ suite, file: path.join(dir, f), seconds: (SECONDS[`${suite}/${f}`] ?? DEFAULT_SECONDS) + LOAD_SECONDS }));
});
const plan = Array.from({ length: labs }, () => ({ seconds: 0, files: [] }));
for (const f of [...files].sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file))) {
  const lab = plan.reduce((least, l) => (l.seconds < least.seconds ? l : least));
  lab.seconds += f.seconds;
  lab.files.push(f);
}
for (const lab of plan) {
  const parts = suites.flatMap((suite) => {
    const mine = lab.files.filter((f) => f.suite === suite).map((f) => f.file);
    return mine.length ? [`${suite}=${mine.sort().join(',')}`] : [];
  });
  console.log(parts.join(' '));
}
