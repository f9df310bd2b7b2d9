#!/bin/sh
# Compiles the tripwire's CO-RE object, which is committed and shipped: nothing on a node or in
# `npm install` compiles BPF. Run it after changing anything under native/bpf/ (the package
# suite fails while the object and its sources disagree):
#
#   sh native/bpf/build.sh            rebuild native/bpf/memcg_tripwire.bpf.o and its manifest
#   sh native/bpf/build.sh DIR        build into DIR only (the package suite's reproducibility check)
#
# Needs clang with the BPF target, llvm-strip and libbpf's BPF headers (Debian: clang llvm
# libbpf-dev). The kernel types come from kernel_types.h, not the build machine's BTF, so the
# same clang gives the same bytes anywhere; libbpf relocates the object to the running kernel
# at load time.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
mkdir -p "$out"
out=$(cd "$out" && pwd)
obj=$out/memcg_tripwire.bpf.o
# -mcpu=v3: 32-bit atomics (the pending flag's compare-and-swap). -g: BTF, which CO-RE needs.
# Little-endian BPF: the object loads on x86_64 and arm64 alike (no pt_regs are read).
# Compiled from its own directory with -fdebug-compilation-dir: no build path in the object.
(cd "$here" && clang -g -O2 -Wall -Werror -target bpfel -mcpu=v3 -D__TARGET_ARCH_x86 -fdebug-compilation-dir=. \
  -I . -c memcg_tripwire.bpf.c -o "$obj.tmp")
# DWARF is for humans: keep the .BTF sections, drop the rest.
llvm-strip -g "$obj.tmp"
mv "$obj.tmp" "$obj"

# The manifest says what the object was built from, for the package suite's check.
sum() { sha256sum "$1" | cut -d' ' -f1; }
libbpf=$(dpkg-query -W -f '${Version}' libbpf-dev 2>/dev/null || echo unknown)
{
  echo '{'
  printf '  "object": "%s",\n' "$(sum "$obj")"
  printf '  "clang": "%s",\n' "$(clang --version | head -1)"
  printf '  "libbpfHeaders": "%s",\n' "$libbpf"
  echo '  "sources": {'
  printf '    "build.sh": "%s",\n' "$(sum "$here/build.sh")"
  printf '    "kernel_types.h": "%s",\n' "$(sum "$here/kernel_types.h")"
  printf '    "memcg_tripwire.bpf.c": "%s",\n' "$(sum "$here/memcg_tripwire.bpf.c")"
  printf '    "memcg_tripwire.h": "%s"\n' "$(sum "$here/memcg_tripwire.h")"
  echo '  }'
  echo '}'
} >"$out/memcg_tripwire.bpf.json"
echo "built $obj ($(stat -c %s "$obj") bytes)"
