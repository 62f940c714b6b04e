#!/usr/bin/env bash
# Starts a real single-node OpenSearch on 127.0.0.1 for eslease's tests and benchmarks:
#
#   tests/engines/opensearch/run.sh [--version 2|3] [--listen HOST:PORT] [--data DIR]
#
# --version 2 (default) is OpenSearch 2.19 on the default JDK (17 or newer); --version 3 is
# OpenSearch 3.x, which needs Java 21 or newer (ESLEASE_JAVA21_HOME, else the newest JDK found
# under /usr/lib/jvm). It listens on 127.0.0.1 port 0 (any free port) unless --listen says
# otherwise, prints `opensearch listening on http://HOST:PORT` on standard output once it
# answers, logs to standard error (the first lines name the version), keeps its data in a
# temporary directory (or --data DIR, which it keeps) and stops cleanly on SIGTERM or SIGINT.
# The heap is ESLEASE_OPENSEARCH_HEAP (default 512m).
#
# scripts/install-deps.sh builds the program and its jars once (see pom.xml); when they are
# missing this script builds them, from the local Maven repository when it can.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

version=2
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      [ $# -ge 2 ] || { echo "run.sh: --version wants 2 or 3" >&2; exit 2; }
      version="$2"
      shift 2
      ;;
    --version=*) version="${1#--version=}"; shift ;;
    --listen | --data)
      [ $# -ge 2 ] || { echo "run.sh: $1 wants a value" >&2; exit 2; }
      args+=("$1" "$2")
      shift 2
      ;;
    -h | --help)
      sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# shellcheck source=common.sh
. "$here/common.sh"
java_home="$(engine_java_home "$version")"
engine_dir="$here/target/opensearch$version"
# (build.sh itself runs this script once, to record the class-data archive.)
if [ -z "${ESLEASE_ENGINE_ARCHIVE_OUT:-}" ] &&
  [ "$(cat "$engine_dir/.built" 2>/dev/null)" != "$(engine_sources_digest "$here")" ]; then
  echo "run.sh: building the OpenSearch $version engine into $engine_dir" >&2
  "$here/build.sh" "$version" >&2
fi

# The JVM options the distribution's jvm.options sets that matter here; the rest (its
# bootstrap checks, the security manager of 2.x) belong to its launcher, not to the server.
jvm_options=(
  -Xms"${ESLEASE_OPENSEARCH_HEAP:-512m}" -Xmx"${ESLEASE_OPENSEARCH_HEAP:-512m}" -Xss1m
  -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -XX:-OmitStackTraceInFastThrow
  -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djna.nosys=true
  -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true -Dio.netty.recycler.maxCapacityPerThread=0
  -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true
  -Djava.io.tmpdir="${TMPDIR:-/tmp}"
)
# The classes of a first start, archived by build.sh: loading them from there roughly halves
# every later start.
if [ -n "${ESLEASE_ENGINE_ARCHIVE_OUT:-}" ]; then
  jvm_options+=(-XX:ArchiveClassesAtExit="$ESLEASE_ENGINE_ARCHIVE_OUT")
elif [ -f "$engine_dir/classes.jsa" ]; then
  jvm_options+=(-XX:SharedArchiveFile="$engine_dir/classes.jsa" -Xshare:auto)
fi

exec "$java_home/bin/java" "${jvm_options[@]}" -cp "$(cat "$engine_dir/classpath")" \
  io.eslease.engines.OpenSearchEngine "${args[@]}"
