#!/usr/bin/env bash
# The static checks CI runs beside the tests (scripts/test.sh calls this after the build):
#   - clang-format: every C++ file is formatted as .clang-format says;
#   - clang-tidy: the checks in .clang-tidy on src/ and tests/emulators/, among them the
#     60-line limit on functions; every warning is an error;
#   - no source file under src/ is longer than 500 lines.
# Usage: scripts/lint.sh [BUILD_DIR]   (default build; it needs compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
failed=0

mapfile -t sources < <(git ls-files '*.cpp' '*.h')
if ! clang-format --dry-run --Werror "${sources[@]}"; then
  echo "lint: files above are not formatted; run: git ls-files '*.cpp' '*.h' | xargs clang-format -i" >&2
  failed=1
fi

while read -r lines file; do
  if [ "$file" != total ] && [ "$lines" -gt 500 ]; then
    echo "lint: $file has $lines lines (at most 500 under src/ and tests/emulators/): split it by meaning" >&2
    failed=1
  fi
done < <(git ls-files 'src/*.cpp' 'src/*.h' 'tests/emulators/*.cpp' 'tests/emulators/*.h' | xargs wc -l)

if [ ! -f "$build_dir/compile_commands.json" ]; then
  echo "lint: $build_dir/compile_commands.json is missing: configure the build first" >&2
  exit 1
fi
# Only files whose inputs changed since they were last checked clean (scripts/tidy_cache.py,
# keyed like ccache on the file, its headers, its flags and the configuration).
mapfile -t pending < <(python3 scripts/tidy_cache.py "$build_dir" pending src tests/emulators)
echo "lint: clang-tidy on ${#pending[@]} files (the others are unchanged since checked clean)" >&2
# run-clang-tidy exits non-zero when any file has a warning (WarningsAsErrors: '*').
if [ "${#pending[@]}" -gt 0 ]; then
  if run-clang-tidy -p "$build_dir" -j2 -quiet "${pending[@]}" > "$build_dir/clang-tidy.log" 2>&1; then
    python3 scripts/tidy_cache.py "$build_dir" record "${pending[@]}"
  else
    grep -E "(warning|error):" "$build_dir/clang-tidy.log" | sort -u >&2 || true
    echo "lint: clang-tidy found the problems above (whole output: $build_dir/clang-tidy.log)" >&2
    failed=1
  fi
fi
exit "$failed"
