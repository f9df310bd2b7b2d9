#!/bin/sh
# Builds the tripwire's BPF object and libbpf skeleton into $1 (node-gyp's intermediate dir):
#   vmlinux.h from this machine's BTF (CO-RE: the object relocates itself to the running
#   kernel's layout at load time), clang -target bpf, then `bpftool gen skeleton`.
# Nothing it writes is committed. Called by binding.gyp only when detect.sh said yes.
set -eu
out=$1
here=$(dirname "$0")
mkdir -p "$out"
btf=${EVICTD_BTF:-/sys/kernel/btf/vmlinux}
bpftool btf dump file "$btf" format c > "$out/vmlinux.h.tmp"
mv "$out/vmlinux.h.tmp" "$out/vmlinux.h"
arch=$(uname -m)
case $arch in
  x86_64) target=x86 ;;
  aarch64) target=arm64 ;;
  *) target=$arch ;;
esac
# -mcpu=v3: 32-bit atomics (the pending flag's compare-and-swap). -g: BTF, which CO-RE and the
# skeleton need.
clang -g -O2 -Wall -target bpf -mcpu=v3 "-D__TARGET_ARCH_$target" -I "$out" -I "$here" \
  -c "$here/memcg_tripwire.bpf.c" -o "$out/memcg_tripwire.bpf.o"
# DWARF is only for humans: keep the .BTF sections, drop the rest (a 2 MB skeleton otherwise).
if command -v llvm-strip > /dev/null 2>&1; then llvm-strip -g "$out/memcg_tripwire.bpf.o"; fi
bpftool gen skeleton "$out/memcg_tripwire.bpf.o" name memcg_tripwire > "$out/memcg_tripwire.skel.h.tmp"
mv "$out/memcg_tripwire.skel.h.tmp" "$out/memcg_tripwire.skel.h"
