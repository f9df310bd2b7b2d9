/**
 * The files in evictd's state dir, one rule for all: written through a new temp file
 * (O_CREAT|O_EXCL|O_NOFOLLOW: never into a file or a link that was already there) and renamed
 * over the old one (a reader, or the next start after a crash, sees the old text or the new,
 * never half of one); read never through a link (a link in a state file's place is refused:
 * every reader logs it and goes on without the file). The dir is made 0700, the files 0600.
 */
import fs from 'node:fs';
import path from 'node:path';

export function writeStateFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  // A temp of a crashed run whose pid this one reuses: unlink removes it (or a link) itself.
  try {
    fs.unlinkSync(tmp);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
  try {
    fs.writeFileSync(fd, text);
  } finally {
    fs.closeSync(fd);
  }
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
