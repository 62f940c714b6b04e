# Shared by run.sh and build.sh: which JDK serves an OpenSearch major version, and whether the
# engine built for it is up to date with its sources.

# Prints the JAVA_HOME for OpenSearch $1 (2 or 3), or says why there is none and fails.
engine_java_home() {
  local version="$1" need home
  case "$version" in
    2) need=17 ;;
    3) need=21 ;;
    *) echo "opensearch engine: --version wants 2 or 3, got $version" >&2; return 2 ;;
  esac
  local candidates=()
  if [ "$version" = 3 ]; then
    [ -n "${ESLEASE_JAVA21_HOME:-}" ] && candidates+=("$ESLEASE_JAVA21_HOME")
  else
    [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
    command -v java >/dev/null 2>&1 && candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
  fi
  # Newest first, so version 3 takes the newest JDK there is.
  local dir
  for dir in $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do candidates+=("${dir%/}"); done
  for home in "${candidates[@]}"; do
    [ -x "$home/bin/java" ] && [ -x "$home/bin/javac" ] || continue
    local feature
    feature="$("$home/bin/java" -XshowSettings:properties -version 2>&1 |
      sed -n 's/^ *java.specification.version = //p')"
    if [ -n "$feature" ] && [ "${feature%%.*}" -ge "$need" ]; then
      echo "$home"
      return 0
    fi
  done
  echo "opensearch engine: OpenSearch $version needs a JDK $need or newer; none found (set" \
    "$([ "$version" = 3 ] && echo ESLEASE_JAVA21_HOME || echo JAVA_HOME))" >&2
  return 1
}

# A digest of what the engine is built from; build.sh writes it into .built when done.
engine_sources_digest() {
  local here="$1"
  (cd "$here" && cat pom.xml common.sh build.sh $(find src -type f | sort)) | sha256sum | cut -d' ' -f1
}
