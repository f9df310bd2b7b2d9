# shellcheck shell=bash
# Sourced by scripts/harness.sh (the lab's images) and scripts/image.sh (evictd's image): one
# way to write an image, so that both are reproducible the same way.
#
# oci_tarball NAME ROOTFS ENTRYPOINT OUT [ENV]
#   Writes to OUT an OCI image layout tarball (what `ctr images import` and
#   `skopeo copy oci-archive:OUT ...` read) with one uncompressed layer made from directory
#   ROOTFS. ENTRYPOINT and ENV are JSON arrays (ENV default ["PATH=/bin"]). containerd names the
#   imported image NAME (the index's io.containerd.image.name annotation).
#   Fixed mtimes and owners (files as root, time 0) and sorted entries make the digests depend
#   on the content alone: the same ROOTFS gives the same bytes, on any machine, at any time.
#   Its scratch directory is made beside OUT.
oci_tarball() {
  local name=$1 rootfs=$2 entry=$3 out=$4 env=${5:-'["PATH=/bin"]'} work
  work=$(mktemp -d "$(dirname "$out")/oci.XXXXXX")
  mkdir -p "$work/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$work/layer.tar" .
  local layer lsize config csize manifest msize
  layer=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  lsize=$(stat -c %s "$work/layer.tar")
  mv "$work/layer.tar" "$work/blobs/sha256/$layer"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$env" "$layer" >"$work/config.json"
  config=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  csize=$(stat -c %s "$work/config.json")
  mv "$work/config.json" "$work/blobs/sha256/$config"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$config" "$csize" "$layer" "$lsize" >"$work/manifest.json"
  manifest=$(sha256sum "$work/manifest.json" | cut -d' ' -f1)
  msize=$(stat -c %s "$work/manifest.json")
  mv "$work/manifest.json" "$work/blobs/sha256/$manifest"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$msize" "$name" "${name##*:}" >"$work/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out" oci-layout index.json blobs
  rm -rf "$work"
}
