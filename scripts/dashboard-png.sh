#!/usr/bin/env bash
# Draws every panel of the Grafana dashboard (dashboards/eslease.json) into one PNG, from a
# real Prometheus that scraped two eslease-controller replicas during the end-to-end scenario
# of the deployment checks (contention, takeovers, an outside holder, dropped watches).
#   scripts/dashboard-png.sh [OUT.png]      default: build/dashboard.png
# Needs a build in build/ (build/bin) and the packages of scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/dashboard.png}"
mkdir -p "$(dirname "$out")" build/deploy-png
exec /usr/bin/python3 tests/deploy/prometheus_test.py "$PWD/build/bin" "$PWD" "$PWD/build/deploy-png" --png "$out"
