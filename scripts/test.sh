#!/usr/bin/env bash
# The README's test command: installs dependencies, builds (-j2) and runs the whole suite.
# ESLEASE_SANITIZE=address|thread builds into build-<sanitizer>/ with that sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize="${ESLEASE_SANITIZE:-}"
build_dir="build${sanitize:+-$sanitize}"
# Helm for the chart checks is cached in the build tree being tested.
ESLEASE_BUILD_DIR="$build_dir" ./scripts/install-deps.sh

# Sanitizer builds use Debug: faster to compile, and assertions stay on.
build_type=RelWithDebInfo
[ -z "$sanitize" ] || build_type=Debug
# Warnings are errors here (CMake's COMPILE_WARNING_AS_ERROR adds -Werror); a plain
# `cmake -S . -B build` leaves them warnings for compilers we do not test with.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DESLEASE_SANITIZE="$sanitize" \
  -DCMAKE_COMPILE_WARNING_AS_ERROR=ON >/dev/null
cmake --build "$build_dir" -j2
# Formatting, clang-tidy and the size limits (scripts/lint.sh); once, on the plain build.
[ -n "$sanitize" ] || ./scripts/lint.sh "$build_dir"
# Suppressions cover only reports from inside third-party libraries; each file says why.
case "$sanitize" in
  address)
    export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
    # UBSan would report and carry on; a report must fail the test that caused it.
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    ;;
  thread) export TSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/tsan.supp" ;;
esac
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 300
