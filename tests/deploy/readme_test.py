"""The README's quick start, run as written: its shell blocks are taken from README.md and run
with bash in a temporary directory that holds what a checkout holds (build/bin, crds/,
examples/), with a deadline. The first block (install and build) is the build the test suite
has already made, so it is checked to be that and not run. Every process the quick start
starts is stopped, by the block itself (it must end them) or by the test. Also: every
relative link in README.md, docs/*.md and the chart's README leads to a file that exists, and
a link to a heading to a heading that exists.

usage: readme_test.py BIN_DIR SOURCE_DIR WORK_DIR"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

DEADLINE = 240  # seconds for the whole quick start on a loaded machine

BUILD_BLOCK = [
    "./scripts/install-deps.sh",
    "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo",
    "cmake --build build -j2 --target eslease-controller eslease es-emulator kube-emulator",
]


def section(text, heading):
    start = text.index("\n## %s\n" % heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def shell_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


def run_quick_start(bin_dir, source, work):
    with open(os.path.join(source, "README.md")) as f:
        blocks = shell_blocks(section(f.read(), "Quick start"))
    if len(blocks) < 2:
        return ["the quick start has %d shell blocks; expected the build and the run" % len(blocks)]
    build = [line for line in blocks[0].splitlines() if line.strip()]
    if build != BUILD_BLOCK:
        return ["the quick start's build block changed; this test stands in for it:\n%s" % "\n".join(build)]
    checkout = tempfile.mkdtemp(prefix="quick-start-", dir=work)
    os.makedirs(os.path.join(checkout, "build"))
    os.symlink(os.path.abspath(bin_dir), os.path.join(checkout, "build", "bin"))
    for name in ("crds", "examples"):
        os.symlink(os.path.join(source, name), os.path.join(checkout, name))
    script = "set -euo pipefail\n" + "\n".join(blocks[1:])
    env = dict(os.environ)
    env.pop("KUBECONFIG", None)
    env["PATH"] = "/usr/bin:/bin"  # kubectl from /usr/bin, as installed
    started = time.monotonic()
    process = subprocess.Popen(["/bin/bash", "-c", script], cwd=checkout, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return ["the quick start did not finish within %d s:\n%s" % (DEADLINE, output)]
    print(output)
    print("quick start: %.1f s" % (time.monotonic() - started))
    problems = []
    if process.returncode != 0:
        problems.append("the quick start failed with exit code %d:\n%s" % (process.returncode, output))
    for expected in (r"nightly-report-a\s+nightly-report\s+report-a\s+Held", r'"fromPod":"report-a"'):
        if not re.search(expected, output):
            problems.append("the quick start's output does not show %r" % expected)
    # The text after it promises the successor's token larger than the one printed before.
    first = re.search(r"^(\d+)$", output, re.M)
    second = re.search(r'^(\d+) \{.*"fromPod":"report-a"', output, re.M)
    if not first or not second or int(second.group(1)) <= int(first.group(1)):
        problems.append("the quick start does not print a successor's token larger than the holder's: %s, %s"
                        % (first and first.group(1), second and second.group(1)))
    # Whatever it started must be gone: the block ends its own processes.
    leftover = []
    for _ in range(100):  # they were sent SIGTERM; give them 10 s to exit
        leftover = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
        if not leftover:
            break
        time.sleep(0.1)
    if leftover:
        problems.append("the quick start left processes running: %s" % leftover)
        os.killpg(process.pid, signal.SIGKILL)
    return problems


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file."""
    out = set()
    with open(path) as f:
        in_code = False
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            elif not in_code and line.startswith("#"):
                title = line.lstrip("#").strip().lower()
                title = re.sub(r"[^\w\- ]", "", title)
                out.add(title.replace(" ", "-"))
    return out


def check_links(source):
    pages = [os.path.join(source, "README.md"), os.path.join(source, "charts", "eslease", "README.md")]
    docs = os.path.join(source, "docs")
    pages += [os.path.join(docs, name) for name in sorted(os.listdir(docs)) if name.endswith(".md")]
    problems = []
    for page in pages:
        with open(page) as f:
            text = re.sub(r"^```.*?^```", "", f.read(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = os.path.relpath(page, source)
            if not os.path.exists(resolved):
                problems.append("%s links to %s, which does not exist" % (where, target))
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append("%s links to %s: no such heading" % (where, target))
    return problems


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    bin_dir, source, work = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    os.makedirs(work, exist_ok=True)
    problems = check_links(source) + run_quick_start(bin_dir, source, work)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
