#!/usr/bin/env python3
"""What clang-tidy must look at again, like ccache does for the compiler.

A file's key is a hash of everything its result depends on: the clang-tidy version, the
.clang-tidy configuration, the file's compile command, and the contents of the file and of
every header it includes (the list the build recorded: `ninja -t deps`). A key found in the
cache directory was checked clean before, so the file is left out.

  tidy_cache.py BUILD_DIR pending DIR...   prints the sources under the DIRs to check
  tidy_cache.py BUILD_DIR record FILE...   records those FILEs as clean, under the keys
                                           `pending` saw (a file edited meanwhile is not
                                           recorded as it is now)

The cache lives in ${XDG_CACHE_HOME:-~/.cache}/eslease/clang-tidy; deleting it checks all.
"""

import hashlib
import json
import os
import subprocess
import sys


ROOT = os.getcwd()  # the checkout; scripts/lint.sh runs from it


def portable(path_or_command):
    """Without the checkout's own path, so that another clone of it finds the same keys."""
    return path_or_command.replace(ROOT + os.sep, "<root>/")


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "eslease", "clang-tidy")


def header_lists(build_dir):
    """object file -> the files it was compiled from, as the build recorded them."""
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True, capture_output=True, text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            current = line.split(":", 1)[0]
            deps[current] = []
        elif line.strip() and current is not None:
            deps[current].append(os.path.abspath(os.path.join(build_dir, line.strip())))
    return deps


def keys(build_dir, files):
    """source file -> its key, for the files the build knows (others get none)."""
    commands = {os.path.normpath(entry["file"]): entry for entry in
                json.load(open(os.path.join(build_dir, "compile_commands.json")))}
    deps = header_lists(build_dir)
    common = hashlib.sha256()
    common.update(subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True).stdout.encode())
    with open(".clang-tidy", "rb") as config:
        common.update(config.read())
    content_hashes = {}

    def content(path):
        if path not in content_hashes:
            try:
                with open(path, "rb") as f:
                    content_hashes[path] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                content_hashes[path] = "missing"
        return content_hashes[path]

    result = {}
    for file in files:
        entry = commands.get(os.path.normpath(os.path.abspath(file)))
        if entry is None:
            continue
        output = entry["command"].split(" -o ", 1)[1].split(" ", 1)[0] if " -o " in entry["command"] else None
        included = deps.get(output)
        if not included:
            continue  # never built: no header list to trust
        key = common.copy()
        key.update(portable(entry["command"]).encode())
        # In the order of the portable names: another checkout's path sorts differently.
        for path in sorted(set(included) | {os.path.abspath(file)}, key=portable):
            key.update(portable(path).encode() + b"\0" + content(path).encode())
        result[file] = key.hexdigest()
    return result


def main():
    build_dir, action, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    seen_keys = os.path.join(build_dir, "clang-tidy-pending.json")
    if action == "pending":
        sources = [os.path.abspath(os.path.join(root, name)) for top in args for root, _, names in os.walk(top)
                   for name in names if name.endswith(".cpp")]
        known = keys(build_dir, sources)
        with open(seen_keys, "w") as out:
            json.dump(known, out)
        for source in sorted(sources):
            if source not in known or not os.path.exists(os.path.join(cache_dir(), known[source])):
                print(source)
    elif action == "record":
        os.makedirs(cache_dir(), exist_ok=True)
        if os.path.exists(seen_keys):
            with open(seen_keys) as saved:
                known = json.load(saved)
        else:
            known = keys(build_dir, [os.path.abspath(file) for file in args])
        for file in args:
            if os.path.abspath(file) in known:
                open(os.path.join(cache_dir(), known[os.path.abspath(file)]), "w").close()
    else:
        sys.exit("usage: tidy_cache.py BUILD_DIR pending DIR... | record FILE...")


if __name__ == "__main__":
    main()
