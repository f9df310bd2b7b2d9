/**
 * evictd's container image (scripts/image.sh) for the tests that run it. In the pure cgroup v2
 * lab the guest cannot download Node or Debian's packages: scripts/v2vm/suites builds the image
 * on the host before the VM boots and names its tarball in EVICTD_IMAGE_TARBALL (the guest sees
 * the host's cache through its read-only root). Elsewhere the script builds it, or finds it
 * cached by its inputs (a few seconds).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const repo = path.resolve(__dirname, '..', '..', '..');

export function evictdImage(): { tarball: string; name: string } {
  const name = execFileSync(path.join(repo, 'scripts', 'image.sh'), ['--name'], { encoding: 'utf8' }).trim();
  const given = process.env.EVICTD_IMAGE_TARBALL;
  if (given) {
    if (!fs.existsSync(given)) throw new Error(`EVICTD_IMAGE_TARBALL: no such file ${given}`);
    return { tarball: given, name };
  }
  const tarball = execFileSync(path.join(repo, 'scripts', 'image.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 20 }).trim();
  return { tarball, name };
}
