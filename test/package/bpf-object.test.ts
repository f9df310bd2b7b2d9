// The committed CO-RE object (native/bpf/memcg_tripwire.bpf.o) is what its sources build. Its
// manifest names the hash of every source it was built from and of the object itself: a source
// changed without a rebuild fails here on any machine. Where clang and libbpf's headers are
// present the object is rebuilt, and with the manifest's clang and headers it must come out
// byte for byte (kernel_types.h, not the build machine's BTF, makes that possible).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { skipped } from '../support/environment';

const bpfDir = path.resolve(__dirname, '..', '..', '..', 'native', 'bpf');
const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

interface Manifest {
  object: string;
  clang: string;
  libbpfHeaders: string;
  sources: Record<string, string>;
}
const manifest = JSON.parse(fs.readFileSync(path.join(bpfDir, 'memcg_tripwire.bpf.json'), 'utf8')) as Manifest;

test('the committed BPF object is the one its manifest names, built from the sources as they are now', () => {
  assert.equal(sha256(path.join(bpfDir, 'memcg_tripwire.bpf.o')), manifest.object, 'the object was replaced without its manifest');
  const inputs = fs.readdirSync(bpfDir).filter((f) => /\.(c|h|sh)$/.test(f));
  assert.deepEqual(Object.keys(manifest.sources).sort(), inputs.sort(), 'every source under native/bpf/ is in the manifest');
  for (const [file, sum] of Object.entries(manifest.sources)) {
    assert.equal(sha256(path.join(bpfDir, file)), sum, `native/bpf/${file} changed since the object was built: run sh native/bpf/build.sh`);
  }
});

function toolchain(): { missing: string | null; clang: string; headers: string } {
  const clang = spawnSync('clang', ['--version'], { encoding: 'utf8' });
  const targets = spawnSync('clang', ['-print-targets'], { encoding: 'utf8' });
  const strip = spawnSync('llvm-strip', ['--version'], { encoding: 'utf8' });
  const headers = spawnSync('dpkg-query', ['-W', '-f', '${Version}', 'libbpf-dev'], { encoding: 'utf8' });
  const missing = [
    clang.status === 0 && /\bbpf\b/.test(targets.stdout ?? '') ? null : 'clang with the BPF target',
    strip.status === 0 ? null : 'llvm-strip',
    fs.existsSync('/usr/include/bpf/bpf_helpers.h') ? null : "libbpf's headers (libbpf-dev)",
  ].filter((m) => m !== null);
  return {
    missing: missing.length ? `to rebuild the BPF object this needs ${missing.join(', ')} (Debian: apt-get install clang llvm libbpf-dev)` : null,
    clang: (clang.stdout ?? '').split('\n')[0],
    headers: headers.status === 0 ? headers.stdout : 'unknown',
  };
}

test("native/bpf/build.sh rebuilds the committed object byte for byte with the manifest's clang and headers", (t) => {
  const tools = toolchain();
  if (skipped(t, tools.missing)) return;
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-bpf-'));
  try {
    const r = spawnSync('sh', [path.join(bpfDir, 'build.sh'), out], { encoding: 'utf8' });
    assert.equal(r.status, 0, `build.sh failed:\n${r.stdout}${r.stderr}`);
    const same = tools.clang === manifest.clang && tools.headers === manifest.libbpfHeaders;
    if (!same) {
      // Another compiler emits other bytes for the same source: the build must still succeed.
      t.diagnostic(
        `built with "${tools.clang}", headers ${tools.headers}; the object was built with "${manifest.clang}", headers ${manifest.libbpfHeaders}: bytes not compared`,
      );
      return;
    }
    assert.equal(
      sha256(path.join(out, 'memcg_tripwire.bpf.o')),
      manifest.object,
      'the committed object is not what its sources build: run sh native/bpf/build.sh and commit the result',
    );
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});
