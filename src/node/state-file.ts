/**
 * A file in evictd's state dir, replaced atomically (a reader, or the next start after a crash,
 * sees the old text or the new, never half of one): the dir made 0700, the file 0600, root's.
 */
import fs from 'node:fs';
import path from 'node:path';

export function writeStateFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
}
