import fs from 'node:fs';

/** True for the root of a cgroup2 hierarchy (no memory.current there: its usage is in memory.stat). */
export function isCgroup2Root(cgroupDir: string): boolean {
  return fs.existsSync(`${cgroupDir}/cgroup.subtree_control`) && !fs.existsSync(`${cgroupDir}/cgroup.type`);
}
