#!/usr/bin/env bash
# evictd's offline containerd harness: a private containerd (own root, state, socket and
# config) with locally built images, for the e2e tests, the benchmarks and the demo.
#
#   scripts/harness.sh up       install missing packages, build and import images, start containerd
#   scripts/harness.sh down     stop every task, containerd and its shims; remove mounts, pod
#                               cgroups and the harness directory (nothing is left behind)
#   scripts/harness.sh status   exit 0 and print the endpoint when containerd answers, else exit 3
#   scripts/harness.sh env      print the shell variables the tests and the demo read
#   scripts/harness.sh build    build the images into the cache only (no containerd)
#   scripts/harness.sh import [NAME...]   (re)import built images (pause busybox hog filler)
#
# Everything lives under $EVICTD_HARNESS_DIR (default /run/evictd-harness); the CRI endpoint is
# unix://$EVICTD_HARNESS_DIR/containerd.sock. Pods should use a cgroup_parent under
# $EVICTD_HARNESS_CGROUP (default /kubepods), which `down` empties and removes. The built image
# tarballs are kept in $EVICTD_HARNESS_IMAGES (default ~/.cache/evictd-harness), keyed by their
# sources; delete it at will.
# Measured pitfalls this follows are listed in shared/DESIGN.md ("containerd facts").
set -euo pipefail

DIR=${EVICTD_HARNESS_DIR:-/run/evictd-harness}
CGROUP=${EVICTD_HARNESS_CGROUP:-/kubepods}
SOCK="$DIR/containerd.sock"
ENDPOINT="unix://$SOCK"
PIDFILE="$DIR/containerd.pid"
LOG="$DIR/containerd.log"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/images"
IMAGE_CACHE=${EVICTD_HARNESS_IMAGES:-${XDG_CACHE_HOME:-$HOME/.cache}/evictd-harness}
NS=k8s.io
IMAGES=(pause busybox hog)

log() { echo "harness: $*" >&2; }
die() { log "$*"; exit 1; }
ctr_() { ctr --address "$SOCK" --namespace "$NS" "$@"; }
# oci_tarball: shared with scripts/image.sh
# shellcheck source=scripts/oci.sh
source "$(dirname "${BASH_SOURCE[0]}")/oci.sh"

# A killed process whose parent never reaps it stays in /proc as a zombie: that is dead too.
alive() { [ -d "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

containerd_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && alive "$pid" && grep -q containerd "/proc/$pid/comm" 2>/dev/null || return 1
  echo "$pid"
}

answers() { [ -S "$SOCK" ] && timeout 5 ctr --address "$SOCK" version >/dev/null 2>&1; }

install_packages() {
  local need=() pkg
  for pkg in containerd runc busybox-static gcc libc6-dev procps; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  # Another package manager (unattended-upgrades, a user's apt) may hold the dpkg lock: wait for
  # it a bounded time (apt's DPkg::Lock::Timeout), then fail with one line that says so.
  local wait=${EVICTD_APT_LOCK_TIMEOUT:-120}
  if ! apt-get -o DPkg::Lock::Timeout="$wait" update -qq >/dev/null 2>&1 ||
    ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$wait" install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
    echo "harness: could not install ${need[*]} with apt-get (no network to Debian's mirror, or the dpkg lock held for more than ${wait} s); install them and retry" >&2
    exit 1
  fi
}

# Built images live in a cache shared by every harness directory and kept by `down`: they are
# keyed by what goes into them, so a changed source gets a new file and a stale one is never
# imported. Building them costs about a minute under the pure cgroup v2 lab's emulated CPU, per
# harness brought up; scripts/v2vm/suites builds them on the host before the VM boots.
image_key() {
  case $1 in
    pause) sha256sum "$SRC/pause.c" | cut -c1-16 ;;
    hog) sha256sum "$SRC/hog.c" | cut -c1-16 ;;
    busybox) sha256sum /bin/busybox | cut -c1-16 ;;
    filler) echo 16m ;;
    *) die "no image $1 (one of pause busybox hog filler)" ;;
  esac
}

image_tar() { echo "$IMAGE_CACHE/$1-$(image_key "$1").tar"; }

# Builds one image's tarball unless the cache has it; written aside, then renamed into place, so
# a concurrent harness never imports half a file.
build_image() {
  local n=$1 out r a
  out=$(image_tar "$n")
  [ -f "$out" ] && return 0
  mkdir -p "$IMAGE_CACHE"
  r=$(mktemp -d "$IMAGE_CACHE/rootfs-$n.XXXXXX")
  case $n in
    pause) gcc -static -O2 -o "$r/pause" "$SRC/pause.c" ;;
    hog) gcc -static -O2 -o "$r/hog" "$SRC/hog.c" ;;
    busybox)
      mkdir -p "$r/bin" "$r/tmp" "$r/etc"
      cp /bin/busybox "$r/bin/busybox"
      for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
      echo 'root:x:0:0:root:/:/bin/sh' >"$r/etc/passwd"
      echo 'root:x:0:' >"$r/etc/group"
      ;;
    # An image no pod uses, with 16 MiB of incompressible data, for image-reclaim tests.
    filler) head -c $((16 * 1024 * 1024)) /dev/urandom >"$r/filler.bin" ;;
  esac
  local entry
  case $n in pause) entry='["/pause"]' ;; hog) entry='["/hog"]' ;; busybox) entry='["/bin/sh"]' ;; filler) entry='["/filler.bin"]' ;; esac
  oci_tarball "localhost/evictd/$n:1" "$r" "$entry" "$out.$$"
  mv -f "$out.$$" "$out"
  rm -rf "$r"
}

build_images() {
  local n
  for n in pause hog busybox filler; do build_image "$n"; done
}

import_images() {
  local names=("$@") n
  [ ${#names[@]} -gt 0 ] || names=("${IMAGES[@]}")
  for n in "${names[@]}"; do
    build_image "$n"
    ctr_ images import "$(image_tar "$n")" >/dev/null
  done
}

write_config() {
  mkdir -p "$DIR/root" "$DIR/state" "$DIR/opt" "$DIR/pods" "$DIR/cni/bin" "$DIR/cni/net.d"
  cat >"$DIR/config.toml" <<EOF
version = 2
root = "$DIR/root"
state = "$DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/evictd/pause:1"
  # No CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj below ours.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  # ImageFsInfo and container stats are refreshed this often (seconds).
  stats_collect_period = 1
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state would otherwise go to /run/containerd/runc, outside the harness.
        Root = "$DIR/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$DIR/cni/bin"
    conf_dir = "$DIR/cni/net.d"
EOF
}

start_containerd() {
  rm -f "$SOCK" "$SOCK.ttrpc"
  # setsid: containerd must outlive the shell or test process that started it.
  setsid containerd --config "$DIR/config.toml" >>"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  local i
  for i in $(seq 1 200); do
    answers && return 0
    alive "$(cat "$PIDFILE")" || break
    sleep 0.05
  done
  tail -20 "$LOG" >&2 || true
  die "containerd did not answer on $SOCK (log: $LOG)"
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "up: must run as root"
  install_packages
  mkdir -p "$DIR"
  if [ -f "$DIR/cgroup-created" ] || ! cgroup_exists "$CGROUP"; then
    echo "$CGROUP" >"$DIR/cgroup-created"
  fi
  # containerd 1.6 puts shim sockets in /run/containerd/s whatever its state dir is.
  if [ -f "$DIR/shimdir-created" ] || [ ! -d /run/containerd ]; then
    touch "$DIR/shimdir-created"
  fi
  build_images
  local pid
  if pid=$(containerd_pid) && ! answers; then
    log "containerd $pid does not answer; replacing it"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.02; done
  fi
  if ! containerd_pid >/dev/null; then
    write_config
    start_containerd
  fi
  local have missing=() n
  have=$(ctr_ images ls -q)
  for n in "${IMAGES[@]}"; do
    grep -qx "localhost/evictd/$n:1" <<<"$have" || missing+=("$n")
  done
  [ ${#missing[@]} -eq 0 ] || import_images "${missing[@]}"
  log "containerd $(containerd --version | awk '{print $3}') up at $ENDPOINT (pid $(cat "$PIDFILE"))"
  cmd_env
}

# Children of a process, recursively (containers are children of their shim).
descendants() {
  local pid=$1 c
  for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# Shims started for this harness carry its socket in their command line ("-address $SOCK").
harness_shims() {
  local p
  for p in $(pgrep -f -- "containerd-shim.* -address $SOCK( |\$)" 2>/dev/null); do
    alive "$p" && echo "$p"
  done
  return 0
}

# cgroup2 alone mounts at /sys/fs/cgroup; hybrid hosts have v1 controllers under it and
# cgroup2 at /sys/fs/cgroup/unified.
cgroup_hierarchies() {
  local h
  for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -f "$h/cgroup.procs" ] && echo "$h"
  done
  return 0
}

cgroup_exists() {
  local h
  for h in $(cgroup_hierarchies); do [ -d "$h$1" ] && return 0; done
  return 1
}

# Deepest first; rmdir only succeeds on empty cgroups, so nothing alive is touched. The root
# itself goes only when `up` created it.
remove_cgroups() {
  local root=$1 mindepth=1 h d
  [ -f "$DIR/cgroup-created" ] && mindepth=0
  for h in $(cgroup_hierarchies); do
    d="$h$root"
    [ -d "$d" ] || continue
    find "$d" -mindepth "$mindepth" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

cmd_down() {
  [ "$(id -u)" = 0 ] || die "down: must run as root"
  local pid id shims p
  if pid=$(containerd_pid) && answers; then
    # Tasks first: stopping containerd alone leaves shims and containers running.
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_ tasks ls -q 2>/dev/null); do timeout 10 ctr_ tasks delete --force "$id" >/dev/null 2>&1 || true; done
  fi
  if pid=$(containerd_pid); then
    # SIGKILL: a graceful stop costs a second and its database is deleted below anyway.
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.02; done
  fi
  # Whatever survived: containers under their shims, then the shims, by PID.
  shims=$(harness_shims)
  for p in $shims; do
    for id in $(descendants "$p"); do kill -KILL "$id" 2>/dev/null || true; done
    kill -KILL "$p" 2>/dev/null || true
  done
  for _ in $(seq 1 40); do [ -z "$(harness_shims)" ] && break; sleep 0.05; done
  # Mounts (rootfs overlays, sandbox shm), deepest first.
  if [ -d "$DIR" ]; then
    awk -v d="$DIR/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  fi
  # Pod cgroups: nobody removes them after the pod is gone.
  remove_cgroups "$CGROUP"
  if [ -f "$DIR/shimdir-created" ]; then
    rmdir /run/containerd/s /run/containerd 2>/dev/null || true
  fi
  rm -rf "$DIR"
  log "down: nothing left under $DIR"
}

cmd_status() {
  if containerd_pid >/dev/null && answers; then
    echo "running pid=$(cat "$PIDFILE") endpoint=$ENDPOINT"
    ctr_ images ls -q | sed 's/^/image /'
    return 0
  fi
  echo "not running (endpoint $ENDPOINT)"
  return 3
}

cmd_env() {
  echo "EVICTD_CRI_ENDPOINT=$ENDPOINT"
  echo "EVICTD_HARNESS_DIR=$DIR"
  echo "EVICTD_HARNESS_CGROUP=$CGROUP"
  echo "EVICTD_IMAGE_PAUSE=localhost/evictd/pause:1"
  echo "EVICTD_IMAGE_BUSYBOX=localhost/evictd/busybox:1"
  echo "EVICTD_IMAGE_HOG=localhost/evictd/hog:1"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  import) shift; import_images "$@" ;;
  build) install_packages; build_images ;;
  *) echo "usage: $0 up|down|status|env|build|import [pause|busybox|hog|filler]..." >&2; exit 2 ;;
esac
