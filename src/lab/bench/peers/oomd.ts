/**
 * oomd 0.5 (Debian's package) with a ruleset in the form of its documented example
 * (/etc/oomd/oomd.json: a detector, then kill_by_memory_size_or_growth over a list of cgroups):
 * - detector `memory_above` on the root cgroup. oomd counts the root's usage as
 *   MemTotal - MemFree, not MemAvailable, and the kernel keeps MemFree above MemAvailable by
 *   its reserves: the threshold is MemTotal - line - (MemFree - MemAvailable), the gap taken on
 *   the calibration ramps where MemAvailable crossed the line (about 60 MiB there, 39 at idle:
 *   an idle gap would fire near 10 MiB), so it acts where MemAvailable crosses the line. Its own
 *   line, for its reaction, is therefore MemFree < line + gap.
 * - action `kill_by_memory_size_or_growth` over the BestEffort and Burstable pod cgroups, as an
 *   admin of a Kubernetes node would list them (oomd knows no QoS classes; Guaranteed pods are
 *   left out the way the example leaves out system daemons). It kills every process of the
 *   chosen cgroup: a bare kill, the sandbox stays up.
 * - `--interval 1` (Debian's /etc/default/oomd; whole seconds, parsed with stoi: 1 is the
 *   tightest that is not a busy loop, 0 being no documented setting) and
 *   `--cgroup-fs /sys/fs/cgroup` (the default file points at /sys/fs/cgroup/unified, absent on
 *   pure v2, as its own comment says). post_action_delay 2 s instead of 15: the bench waits for
 *   memory to come back between trials itself, and 15 s would disarm oomd for the next trial.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, which, type Contender, type ContenderContext } from './contender';
import { meminfo } from './meminfo';

function thresholdKiB(ctx: ContenderContext): number {
  return Math.floor(meminfo().total / 1024 - ctx.oomdFreeLineMiB * 1024);
}

function cgroupList(ctx: ContenderContext): string {
  const root = ctx.lab.podRoot.replace(/^\/+/, '');
  return `${root}/besteffort/*,${root}/burstable/*`;
}

function configFile(ctx: ContenderContext): string {
  const kib = thresholdKiB(ctx);
  const config = {
    rulesets: [
      {
        name: 'memory.available below the line',
        detectors: [['node memory above MemTotal - line', { name: 'memory_above', args: { cgroup: '/', threshold: `${kib}K`, duration: '0' } }]],
        actions: [{ name: 'kill_by_memory_size_or_growth', args: { cgroup: cgroupList(ctx), post_action_delay: '2' } }],
      },
    ],
  };
  const file = path.join(ctx.workDir, 'oomd.json');
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

export const oomd: Contender = {
  name: 'oomd',
  stops: 'bare kill',
  missing: () => (which('oomd') ? null : 'oomd is not installed (apt-get install oomd)'),
  config: (ctx) =>
    `oomd --interval 1 --cgroup-fs /sys/fs/cgroup, memory_above cgroup=/ threshold=${thresholdKiB(ctx)}K (MemTotal - ${ctx.lineMiB} MiB - the ${ctx.oomdFreeLineMiB - ctx.lineMiB} MiB MemFree-MemAvailable gap calibrated at the line) duration=0, kill_by_memory_size_or_growth over ${cgroupList(ctx)}`,
  ownLine: (ctx) => ({ signal: 'MemFree', belowMiB: ctx.oomdFreeLineMiB }),
  start: (ctx) =>
    startDaemon(
      ctx,
      'oomd',
      'oomd',
      ['--config', configFile(ctx), '--interval', '1', '--cgroup-fs', '/sys/fs/cgroup'],
      /[Rr]unning oomd|[Ee]ngine|ruleset/,
      5000,
    ),
};
