/**
 * systemd-oomd 252 acts only on units systemd manages (ManagedOOMMemoryPressure= or
 * ManagedOOMSwap= on a slice or service) and needs systemd as PID 1. The lab's pods live in
 * cgroups containerd makes (cgroupfs driver), not in systemd units, and it has no
 * "available below N" trigger: its memory rule is PSI avg10 over a duration of at least 1 s.
 * Running it here means booting systemd in a PID namespace and moving the pods under a
 * ManagedOOM slice (the systemd cgroup driver); the bench does not do that yet, so the row
 * says "not run" with this reason rather than disappearing.
 */
import type { Contender } from './contender';

export const systemdOomd: Contender = {
  name: 'systemd-oomd',
  stops: 'bare kill',
  missing: () =>
    'not wired yet: needs systemd as PID 1 and the pods in units with ManagedOOMMemoryPressure=kill (containerd here uses the cgroupfs driver); it has no free-memory line, only PSI avg10 for >= 1 s, which stays near 0 on a no-swap ramp',
  config: () => 'ManagedOOMMemoryPressure=kill, ManagedOOMMemoryPressureLimit=, DefaultMemoryPressureDurationSec=1s (its minimum)',
  start: () => Promise.reject(new Error('not run')),
};
