#!/usr/bin/env bash
# The README's test command: installs dependencies, builds (-j2) and runs the whole suite.
# ESLEASE_SANITIZE=address|thread builds into build-<sanitizer>/ with that sanitizer.
# With CI=true, the unit tests also run under AddressSanitizer and UBSan (build-address/).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize="${ESLEASE_SANITIZE:-}"
build_dir="build${sanitize:+-$sanitize}"
# Helm for the chart checks is cached in the build tree being tested.
ESLEASE_BUILD_DIR="$build_dir" ./scripts/install-deps.sh

# configure BUILD_DIR SANITIZER: sanitizer builds use Debug (faster to compile, assertions on).
# Warnings are errors here (CMake's COMPILE_WARNING_AS_ERROR adds -Werror); a plain
# `cmake -S . -B build` leaves them warnings for compilers we do not test with.
configure() {
  local build_type=RelWithDebInfo
  [ -z "$2" ] || build_type=Debug
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DESLEASE_SANITIZE="$2" \
    -DCMAKE_COMPILE_WARNING_AS_ERROR=ON >/dev/null
}

# Suppressions cover only reports from inside libraries not built with the sanitizer; the
# file says why. UBSan would report and carry on; a report must fail the test that caused it.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/tsan.supp"

configure "$build_dir" "$sanitize"
cmake --build "$build_dir" -j2
# Formatting, clang-tidy and the size limits (scripts/lint.sh); once, on the plain build.
[ -n "$sanitize" ] || ./scripts/lint.sh "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 300

if [ "${CI:-}" = true ] && [ -z "$sanitize" ]; then
  # The libraries and the unit tests only (target unit-tests): the whole suite under the
  # sanitizers is ESLEASE_SANITIZE=address ./scripts/test.sh.
  configure build-address address
  cmake --build build-address --target unit-tests -j2
  ctest --test-dir build-address -L unit --output-on-failure -j2 --timeout 300
fi
