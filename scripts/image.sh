#!/usr/bin/env bash
# evictd's container image (deploy/daemonset.yaml runs it), built from this checkout with no
# container builder and no image registry: Debian's packages, Node from the npm registry and
# evictd's own files, packed into one OCI image-layout tarball.
#
#   scripts/image.sh           build unless cached; print the tarball's path (stdout), its sizes (stderr)
#   scripts/image.sh --name    print the image's name (localhost/evictd/evictd:VERSION) and exit
#
# Then: `ctr -n k8s.io images import PATH` on a node, or to a registry (Debian's skopeo; it
# compresses the layer as it pushes):
#   skopeo copy oci-archive:PATH docker://REGISTRY/evictd:VERSION
#
# Build first (npm ci, or npm run build and node-gyp): the image takes the checkout's dist/ and
# addon as they are. What is in it, and nothing else:
#   /                     Debian bookworm's libc6, libstdc++6, libgcc-s1 (Node and the addon link
#                         them) and libbpf1 with libelf1 and zlib1g (the addon opens libbpf.so.1
#                         for the memcg tripwire), unpacked with dpkg-deb from the .debs apt
#                         downloads; their copyright files, no other docs. No shell, no package
#                         manager, no compiler.
#   /usr/local/bin/node   Node 24 LTS's binary alone (scripts/node-lts.sh: no npm, no headers)
#   /opt/evictd           package.json, bin/, the CLI's bundle (dist/src/cli/main.bundle.js: the
#                         product's code and its dependencies in one file, no lab), proto/ and
#                         the prebuilt addon (prebuilds/linux-x64/: scripts/prebuilds.mjs). No
#                         node_modules and no compiled tree: the bundle needs neither, and
#                         `require('evictd')` is for the npm package, not the image.
# bin/evictd.js runs dist/src/cli/main.bundle.js where there is no src/, as here. Node runs with
# the flags of src/lab/shipped.ts (test/package/image.test.ts holds the entrypoint to them).
#
# Root: the DaemonSet runs it as uid 0 because the files it must write and open are root's
# (the cgroup files, /run/containerd's socket, mode 0660 root:root); every capability but those
# it uses is dropped (deploy/daemonset.yaml says which and why). A non-root user would need
# those host files chowned on every node. Read-only root filesystem: nothing here is written at
# run time (the state dir and /tmp are the DaemonSet's volumes).
#
# Reproducible: the tarball is keyed by its inputs (the .debs' digests, Node's version, each
# file's digest, these scripts) and written with fixed owners and mtimes (scripts/oci.sh), so
# the same inputs give the same bytes. Kept in $EVICTD_IMAGE_CACHE (default
# ~/.cache/evictd-image) with the .debs; the newest four images are kept.
set -euo pipefail
umask 022
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/oci.sh
source scripts/oci.sh

say() { echo "image: $*" >&2; }
bad() { say "$*"; exit 2; }
cache=${EVICTD_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evictd-image}
version=$(node -p 'require("./package.json").version')
name=localhost/evictd/evictd:$version

case ${1:-} in
  "") ;;
  --name) echo "$name"; exit 0 ;;
  *) bad "unknown argument '$1' (usage: scripts/image.sh [--name])" ;;
esac

[[ -f dist/src/cli/main.bundle.js ]] || bad "no dist/src/cli/main.bundle.js: build first (npm run build)"
[[ ! dist/src/cli/main.js -nt dist/src/cli/main.bundle.js ]] || bad "dist/src/cli/main.bundle.js is older than the compiled tree: run node scripts/bundle.mjs"
addon=prebuilds/linux-x64/node.napi.glibc.node
[[ -f $addon ]] || bad "no $addon: build the addon (node-gyp rebuild), then npm run build (or node scripts/prebuilds.mjs)"
[[ ! build/Release/evictd_kernel.node -nt $addon ]] || bad "$addon is older than build/Release/evictd_kernel.node: run node scripts/prebuilds.mjs"

# The run-time libraries and what they depend on (gcc-12-base holds only docs; it is listed
# because libstdc++6 and libgcc-s1 depend on it), as the machine's apt sources have them.
roots=(libc6 libstdc++6 libgcc-s1 libbpf1)
closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${roots[@]}" 2>/dev/null | grep -v '^[ <]' | sort -u
}
# "name version sha256 filename" of each package's candidate version; apt-get update first when
# the machine has no package lists yet.
apt-cache show libbpf1 >/dev/null 2>&1 || { say "apt-get update (no package lists)"; apt-get update -qq >/dev/null; }
debs=$(closure | xargs apt-cache show --no-all-versions |
  awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^SHA256:/ { s = $2 } /^Filename:/ { f = $2 } /^$/ && p { print p, v, s, f; p = "" }')
[[ $debs == *libbpf1* ]] || { say "apt knows no libbpf1 (Debian bookworm's apt sources needed)"; exit 1; }

node_dir=$(scripts/node-lts.sh --print)

# /opt/evictd's files from the checkout, relative to it.
opt_files() {
  {
    echo package.json dist/src/cli/main.bundle.js "$addon" | tr ' ' '\n'
    find bin proto -type f
  } | LC_ALL=C sort
}

key=$({
  cat scripts/image.sh scripts/oci.sh
  echo "$debs" "node $(basename "$node_dir")"
  opt_files | xargs sha256sum
} | sha256sum | cut -c1-16)
out=$cache/evictd-$key.tar

report() {
  read -r layer gz <"$out.size"
  say "$name: $out"
  say "layer $((layer / 1024 / 1024)) MiB ($layer bytes) uncompressed, $((gz / 1024 / 1024)) MiB ($gz bytes) gzip-compressed"
  echo "$out"
}
if [[ -f $out && -f $out.size ]]; then report; exit 0; fi

mkdir -p "$cache/debs"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The .debs, downloaded once each (an update to a package is a new file and a new key).
while read -r pkg ver sum file; do
  deb=$cache/debs/$(basename "$file")
  if [[ ! -f $deb ]] || ! sha256sum -c --status <<<"$sum  $deb"; then
    # (apt-get names the file with its version's epoch, the pool without: one file per directory.)
    rm -rf "$work/dl" && mkdir "$work/dl"
    (cd "$work/dl" && apt-get download -qq "$pkg=$ver" 2>/dev/null)
    sha256sum -c --status <<<"$sum  $(echo "$work"/dl/*.deb)" || { say "$pkg $ver: the download's digest is not apt's"; exit 1; }
    mv "$work"/dl/*.deb "$deb"
  fi
  dpkg-deb -x "$deb" "$work/root"
done <<<"$debs"
r=$work/root
# Documentation, lintian's notes, gdb's and gcc's Python helpers, glibc's iconv modules (Node
# converts text with its own ICU): not used at run time. The copyright files stay.
find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
rm -rf "$r/usr/share/lintian" "$r/usr/share/gdb" "$r/usr/share/gcc" "$r/usr/lib/x86_64-linux-gnu/gconv"
# root's name for the uid (os.userInfo); the runtime's mount points, as a Debian root has them
# (/tmp is the DaemonSet's emptyDir).
mkdir -p "$r/etc" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/run"
chmod 1777 "$r/tmp"
echo 'root:x:0:0:root:/root:/usr/sbin/nologin' >"$r/etc/passwd"
echo 'root:x:0:' >"$r/etc/group"

install -D -m 0755 "$node_dir/bin/node" "$r/usr/local/bin/node"
install -D -m 0644 "$node_dir/LICENSE" "$r/usr/share/doc/node/copyright"

mkdir -p "$r/opt/evictd"
opt_files | xargs cp --parents -t "$r/opt/evictd"

oci_tarball "$name" "$r" '["/usr/local/bin/node","--max-semi-space-size=1","/opt/evictd/bin/evictd.js"]' "$work/image.tar" '["PATH=/usr/local/bin:/usr/bin:/bin"]'
# The size a registry stores and a node pulls: the layer gzip-compressed.
layer=$(tar -tvf "$work/image.tar" | sort -k3 -n | tail -1 | awk '{ print $3, $6 }')
gz=$(tar -xOf "$work/image.tar" "${layer#* }" | gzip -6 -n | wc -c)
mv "$work/image.tar" "$out"
echo "${layer% *} $gz" >"$out.size"
# Old images go: each is keyed by a build, and a build a commit is 150 MiB.
ls -t "$cache"/evictd-*.tar | tail -n +5 | while read -r old; do rm -f "$old" "$old.size"; done
report
