/**
 * systemd-oomd 252 acts only on cgroups that systemd, as PID 1, reports to it over varlink
 * (io.systemd.ManagedOOM.SubscribeManagedOOMCGroups): units with ManagedOOMSwap= or
 * ManagedOOMMemoryPressure=. Tried in the lab VM, whose PID 1 is a busybox script:
 * - systemd 252 as PID 1 of a PID namespace (`unshare --pid --fork --mount-proc`, a -.slice
 *   drop-in with ManagedOOMMemoryPressure=kill) comes up in 8-16 s and opens its varlink server;
 * - systemd-oomd started outside that namespace (so that it could signal the pods, which
 *   containerd starts outside it) is refused: PID 1 hangs up on every subscription, because it
 *   answers only a peer that belongs to its own systemd-oomd.service unit, and a peer outside
 *   its PID namespace has no pid there;
 * - systemd-oomd as that unit, inside the namespace, would get the cgroups, but reads the pods'
 *   processes in cgroup.procs as pid 0 (they are outside its namespace) and cannot kill them.
 * Faking PID 1's side of the varlink protocol would not be systemd-oomd as users run it, so the
 * row is "not run". What it takes: the lab booted with systemd as the VM's real PID 1 (an init
 * mode of scripts/v2vm that runs the job as a unit), or containerd started under that systemd.
 * Even then, without swap its only rule is the root's memory PSI (some avg10) above the limit
 * (default 60%, Debian's user@.service 50%) for at least 1 s: each trial records the peak PSI,
 * and in the lab's ramps that nobody stopped it peaked at 12-49% before the kernel OOM-killed
 * (docs/benchmarks.md).
 */
import type { Contender } from './contender';

export const systemdOomd: Contender = {
  name: 'systemd-oomd',
  stops: 'bare kill',
  missing: () =>
    "needs systemd as the node's PID 1: systemd 252 answers ManagedOOM subscriptions only from its own systemd-oomd.service, and from inside a PID namespace that unit cannot see (or kill) the pods containerd starts outside it; without swap its only rule is memory PSI some avg10 above its limit (50-60%) for >= 1 s: see each trial's PSI peak",
  config: () => 'would be: -.slice ManagedOOMMemoryPressure=kill, ManagedOOMMemoryPressureLimit=50%, DefaultMemoryPressureDurationSec=1s (its minimum)',
  // It has no free-memory line (its only no-swap rule is PSI); were it run, the common line.
  ownLine: (ctx) => ({ signal: 'MemAvailable', belowMiB: ctx.lineMiB }),
  start: () => Promise.reject(new Error('not run')),
};
