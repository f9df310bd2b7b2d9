/** This boot's id: records kept on the node (brakes, evictions) name the boot they belong to. */
import fs from 'node:fs';

export function currentBootId(): string {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}
