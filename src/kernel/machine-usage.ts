import fs from 'node:fs';

// The machine's memory as evictd counts it for a node whose cgroup is the cgroup v2 root (which
// has no memory.current), from /proc/meminfo: the numbers of readCgroupMemory(root) in
// src/node/memory.ts (test/kernel/tripwire.test.ts holds them together). Kept here, apart from
// src/node, so src/kernel depends on nothing above it.

function meminfoBytes(text: string, key: string): number {
  const m = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+) kB`, 'm').exec(text);
  if (!m) throw new Error(`/proc/meminfo: no ${key} line`);
  return Number(m[1]) * 1024;
}

/** Usage: MemTotal - MemFree. */
export function machineUsageBytes(text = fs.readFileSync('/proc/meminfo', 'utf8')): number {
  return meminfoBytes(text, 'MemTotal') - meminfoBytes(text, 'MemFree');
}

/**
 * The working set behind the kubelet's node memory.available on cgroup v2: MemTotal - MemFree -
 * Inactive(file), the counters the tripwire reads in the kernel (TRIPWIRE_NODE_WORKING_SET in
 * native/bpf/memcg_tripwire.bpf.c).
 */
export function machineWorkingSetBytes(text = fs.readFileSync('/proc/meminfo', 'utf8')): number {
  const total = meminfoBytes(text, 'MemTotal');
  const available = meminfoBytes(text, 'MemFree') + meminfoBytes(text, 'Inactive(file)');
  return available < total ? total - available : 0;
}

/** True for the root of a cgroup2 hierarchy (no memory.current there; the machine is its usage). */
export function isCgroup2Root(cgroupDir: string): boolean {
  return fs.existsSync(`${cgroupDir}/cgroup.subtree_control`) && !fs.existsSync(`${cgroupDir}/cgroup.type`);
}
