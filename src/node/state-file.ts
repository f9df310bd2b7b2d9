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

/**
 * A state file's text, never through a link (O_NOFOLLOW: a link in its place is refused, not
 * followed to whatever it names), at most `maxBytes` of it. Throws as fs does (ENOENT: absent).
 */
export function readStateFile(file: string, maxBytes = 16 * 1024 * 1024): string {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const buf = Buffer.alloc(Math.min(maxBytes, fs.fstatSync(fd).size));
    return buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
