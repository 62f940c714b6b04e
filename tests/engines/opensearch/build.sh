#!/usr/bin/env bash
# Builds the OpenSearch engine for each major version given (default: 2) into
# target/opensearch<N>: the program, every jar it needs (resolved by Maven into the local
# repository at the versions pom.xml pins) and a class-data archive of a first start, which
# roughly halves every later start. Offline when the local repository has everything;
# otherwise Maven fetches what is missing from Maven Central. Safe to re-run: an engine that is
# up to date with its sources is left alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

[ $# -gt 0 ] || set -- 2
for version in "$@"; do
  java_home="$(engine_java_home "$version")"
  engine_dir="$here/target/opensearch$version"
  digest="$(engine_sources_digest "$here")"
  if [ "$(cat "$engine_dir/.built" 2>/dev/null)" = "$digest" ]; then
    continue
  fi
  rm -rf "$engine_dir"
  mvn_args=(-q -B -f "$here/pom.xml" -P "opensearch$version" package)
  if ! JAVA_HOME="$java_home" mvn -o "${mvn_args[@]}" >/dev/null 2>&1; then
    echo "build.sh: resolving OpenSearch $version from Maven Central" >&2
    JAVA_HOME="$java_home" mvn "${mvn_args[@]}"
  fi
  # The class path run.sh starts with, jars only and in a fixed order (the class-data archive
  # is valid only for the class path it was written with).
  { echo "$engine_dir/opensearch-engine-1.jar"; find "$engine_dir/lib" -name '*.jar' | sort; } |
    paste -sd: >"$engine_dir/classpath"

  # One start and stop of the node records the classes it loads into the archive run.sh uses.
  log="$engine_dir/archive-run.log"
  rm -f "$engine_dir/classes.jsa"
  ESLEASE_ENGINE_ARCHIVE_OUT="$engine_dir/classes.jsa" "$here/run.sh" --version "$version" >"$log" 2>&1 &
  pid=$!
  deadline=$((SECONDS + 300))
  until grep -q 'opensearch listening on' "$log"; do
    if ! kill -0 "$pid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      kill "$pid" 2>/dev/null || true
      echo "build.sh: OpenSearch $version did not start; its log:" >&2
      tail -50 "$log" >&2
      exit 1
    fi
    sleep 1
  done
  kill -TERM "$pid"
  if ! wait "$pid" || [ ! -f "$engine_dir/classes.jsa" ]; then
    echo "build.sh: no class-data archive was written (starts stay slower); the run's log ends:" >&2
    tail -5 "$log" >&2
    rm -f "$engine_dir/classes.jsa"
  fi
  echo "$digest" >"$engine_dir/.built"
  echo "build.sh: OpenSearch $version engine ready in $engine_dir" >&2
done
