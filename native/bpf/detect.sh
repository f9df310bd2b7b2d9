#!/bin/sh
# Prints 1 when the memcg tripwire can be built here (clang with the BPF target, bpftool,
# libbpf headers and library, and a BTF to generate vmlinux.h from), else 0. binding.gyp calls
# it once, at configure time; the reason for a 0 goes to stderr, once, so a build without the
# tripwire says why. EVICTD_TRIPWIRE=0 turns it off, EVICTD_TRIPWIRE=1 makes a missing piece an
# error instead of a quiet fallback.
missing=""
command -v clang > /dev/null 2>&1 && clang -print-targets 2> /dev/null | grep -q '\bbpf\b' || missing="$missing clang(bpf target)"
command -v bpftool > /dev/null 2>&1 && bpftool version > /dev/null 2>&1 || missing="$missing bpftool"
pkg-config --exists libbpf 2> /dev/null || [ -f /usr/include/bpf/libbpf.h ] || missing="$missing libbpf-dev"
[ -r "${EVICTD_BTF:-/sys/kernel/btf/vmlinux}" ] || missing="$missing BTF(${EVICTD_BTF:-/sys/kernel/btf/vmlinux})"
case "${EVICTD_TRIPWIRE:-}" in
  0)
    echo "evictd: memcg tripwire (eBPF) disabled by EVICTD_TRIPWIRE=0: cgroup v2 lines will use the adaptive poller" >&2
    echo 0
    exit 0
    ;;
esac
if [ -n "$missing" ]; then
  if [ "${EVICTD_TRIPWIRE:-}" = 1 ]; then
    echo "evictd: EVICTD_TRIPWIRE=1 but missing:$missing" >&2
    exit 1
  fi
  echo "evictd: building WITHOUT the memcg tripwire (eBPF), missing:$missing (Debian: apt-get install clang bpftool libbpf-dev); cgroup v2 lines will use the adaptive poller" >&2
  echo 0
  exit 0
fi
echo 1
