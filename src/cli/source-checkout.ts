/**
 * The demo and the benches run from a source checkout only: the published package leaves the
 * lab (src/lab, scripts/, the memhog workload) out (package.json "files"), so that an embedder
 * or a node installs the product alone. From the package, such a command says so in one line
 * (a UsageError: exit 2) rather than failing on a missing module with a stack trace.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors';
import type { Command } from './command';

/** dist/src/lab beside this file's dist/src/cli */
const LAB_DIR = path.join(__dirname, '..', 'lab');

/** `load`'s command, or a UsageError naming `command` when the lab is not installed. */
export function needsSourceCheckout(command: string, load: () => Command): Command {
  if (!fs.existsSync(LAB_DIR)) {
    throw new UsageError(`${command} needs a source checkout of evictd (git clone, then npm ci): the published package leaves the lab (demo, benches) out`);
  }
  return load();
}
