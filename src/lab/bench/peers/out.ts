/**
 * The bench's output, written whole. In the lab, stdout and stderr reach the host through one
 * pipe (scripts/v2vm: `2>&1` onto a serial port), and a trial's JSON line (the hog's readings) is
 * larger than the pipe's 64 KiB: through process.stdout, libuv wrote what fit and queued the
 * rest, and a progress line on stderr landed inside the JSON (a smoke run's trial line did not
 * parse). Each line is therefore written with write(2) until all of it is out, waiting while the
 * pipe is full, so nothing of this process can come between its parts.
 */
import fs from 'node:fs';

const pause = new Int32Array(new SharedArrayBuffer(4));

export function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 5);
    }
  }
}

export const stdoutLine = (line: string): void => writeAll(1, line + '\n');
export const stderrLine = (line: string): void => writeAll(2, line + '\n');
