import fs from 'node:fs';

/**
 * The machine's memory usage as evictd counts it for a node whose cgroup is the cgroup v2 root
 * (which has no memory.current): MemTotal - MemFree from /proc/meminfo, the usage of
 * readCgroupMemory(root) in src/node/memory.ts (test/kernel/tripwire.test.ts holds the two
 * together). Kept here, apart from src/node, so src/kernel depends on nothing above it.
 */
export function machineUsageBytes(text = fs.readFileSync('/proc/meminfo', 'utf8')): number {
  const kb = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    if (!m) throw new Error(`/proc/meminfo: no ${key} line`);
    return Number(m[1]) * 1024;
  };
  return kb('MemTotal') - kb('MemFree');
}

/** True for the root of a cgroup2 hierarchy (no memory.current there; the machine is its usage). */
export function isCgroup2Root(cgroupDir: string): boolean {
  return fs.existsSync(`${cgroupDir}/cgroup.subtree_control`) && !fs.existsSync(`${cgroupDir}/cgroup.type`);
}
