/**
 * Temporary directories for tests, removed when the test process exits: a unit run leaves
 * nothing behind in the machine's temp directory (a few hundred runs had left thousands).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];

process.on('exit', () => {
  for (const dir of made) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // A directory a test made unreadable on purpose: left for the machine's own cleaning.
    }
  }
});

/** A new directory under the machine's temp directory, named `evictd-<name>-XXXXXX`. */
export function tempDir(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `evictd-${name}-`));
  made.push(dir);
  return dir;
}
