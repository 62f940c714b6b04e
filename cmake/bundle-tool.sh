#!/bin/sh
# Makes the eslease tool's portable bundle, a directory that runs in any x86-64 Linux image
# whatever its libc, with or without a shell:
#   OUT/eslease       the static launcher (src/apps/eslease-launcher)
#   OUT/eslease-real  the tool, stripped
#   OUT/lib/          the dynamic loader and every shared library the tool loads (ldd)
# usage: bundle-tool.sh TOOL LAUNCHER OUT
set -eu
tool=$1 launcher=$2 out=$3
rm -rf "$out.new"
mkdir -p "$out.new/lib"
cp "$launcher" "$out.new/eslease"
cp "$tool" "$out.new/eslease-real"
strip "$out.new/eslease" "$out.new/eslease-real"
# Each ldd line names a library and where it resolved ("libssl.so.3 => /usr/lib/...") or,
# for the loader, only its path. A library that is not found fails the bundle.
if ldd "$tool" | grep -q 'not found'; then
  echo "bundle-tool: $tool needs a library that is not installed:" >&2
  ldd "$tool" >&2
  exit 1
fi
ldd "$tool" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r path; do
  cp -L "$path" "$out.new/lib/$(basename "$path")"
done
# The launcher starts the loader by this name.
[ -f "$out.new/lib/ld-linux-x86-64.so.2" ] || {
  echo "bundle-tool: ldd named no ld-linux-x86-64.so.2 for $tool" >&2
  exit 1
}
chmod 755 "$out.new/eslease" "$out.new/eslease-real" "$out.new/lib/ld-linux-x86-64.so.2"
rm -rf "$out"
mv "$out.new" "$out"
