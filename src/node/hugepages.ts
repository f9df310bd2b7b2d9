/**
 * The node's huge page capacity in bytes: what the kubelet's node capacity lists as
 * `hugepages-<size>` (cAdvisor's machine info: every page size under /sys/kernel/mm/hugepages,
 * nr_hugepages pages of that size), summed. Read on every call: a few sysfs files. A size whose
 * count cannot be read counts 0, and a kernel without huge pages has none.
 */
import fs from 'node:fs';
import path from 'node:path';

export const HUGEPAGES_SYSFS = '/sys/kernel/mm/hugepages';

export function readHugePagesBytes(dir = HUGEPAGES_SYSFS): number {
  let sizes: string[];
  try {
    sizes = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of sizes) {
    // hugepages-2048kB, hugepages-1048576kB
    const m = /^hugepages-(\d+)kB$/.exec(entry);
    if (!m) continue;
    let pages: number;
    try {
      pages = Number(fs.readFileSync(path.join(dir, entry, 'nr_hugepages'), 'utf8').trim());
    } catch {
      continue;
    }
    if (Number.isSafeInteger(pages) && pages > 0) total += pages * Number(m[1]) * 1024;
  }
  return total;
}
