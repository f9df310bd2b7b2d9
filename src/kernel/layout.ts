import fs from 'node:fs';

/** Where this host's cgroups are: hybrid (memory on v1, cgroup2 beside it) or pure cgroup v2. */
export interface CgroupLayout {
  /** The v1 memory controller mount (with cgroup.event_control), or null. */
  memcgV1: string | null;
  /** The cgroup2 mount, or null. */
  cgroup2: string | null;
  /** True when the memory controller is on cgroup2 (memory.current, memory.events exist). */
  memoryOnV2: boolean;
}

export function detectCgroupLayout(root = '/sys/fs/cgroup'): CgroupLayout {
  const memcgV1 = fs.existsSync(`${root}/memory/cgroup.event_control`) ? `${root}/memory` : null;
  let cgroup2: string | null = null;
  for (const p of [`${root}/unified`, root]) {
    if (fs.existsSync(`${p}/cgroup.subtree_control`)) {
      cgroup2 = p;
      break;
    }
  }
  let memoryOnV2 = false;
  if (cgroup2 !== null) {
    try {
      memoryOnV2 = fs.readFileSync(`${cgroup2}/cgroup.controllers`, 'utf8').split(/\s+/).includes('memory');
    } catch {
      memoryOnV2 = false;
    }
  }
  return { memcgV1, cgroup2, memoryOnV2 };
}
