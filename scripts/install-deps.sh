#!/usr/bin/env bash
# Installs everything eslease needs to build, test and run its demo, from Debian's
# packages only. Used by the README commands, .ci/run and the Dockerfile; safe to re-run.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git ccache
  # libraries
  libcpprest-dev libssl-dev libboost-dev libboost-system-dev
  libyaml-cpp-dev prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  # tests
  libgtest-dev libgmock-dev kubectl python3 python3-kubernetes python3-elasticsearch
  openssl curl prometheus
  # sanitizer and fuzzing runtimes, code checks
  clang lld libclang-rt-14-dev clang-tidy clang-format
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
