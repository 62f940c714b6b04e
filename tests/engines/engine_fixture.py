"""CTest's real-engine fixture: one OpenSearch node shared by the tests of a run that each
start as a process of their own (the C++ integration tests: one process per test case).

    engine_fixture.py start URL_FILE    starts tests/engines/opensearch/run.sh in the background,
                                        waits until it listens and writes its URL to URL_FILE
    engine_fixture.py stop URL_FILE     stops that node (SIGTERM, then waits for it to exit)

The version is ESLEASE_TEST_OPENSEARCH_VERSION (2 or 3, default 2). The node's log is
URL_FILE.log; its process id URL_FILE.pid.
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backend import ENGINE_START_TIMEOUT, RUN_SH, announced_url, engine_version  # noqa: E402


def alive(pid):
    """Whether `pid` is still a running process (a zombie left to a parent that does not reap
    counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def start(url_file):
    for stale in (url_file, url_file + ".pid"):
        if os.path.exists(stale):
            os.remove(stale)
    log_path = url_file + ".log"
    with open(log_path, "wb") as log:
        engine = subprocess.Popen([RUN_SH, "--version", engine_version(), "--listen", "127.0.0.1:0"],
                                  stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    with open(url_file + ".pid", "w") as pid_file:
        pid_file.write("%d\n" % engine.pid)
    deadline = time.monotonic() + ENGINE_START_TIMEOUT
    while True:
        with open(log_path, "rb") as log:
            text = log.read().decode("utf-8", "replace")
        url = announced_url(text)
        if url:
            with open(url_file, "w") as out:
                out.write(url + "\n")
            print("real-engine fixture: %s (log %s)" % (url, log_path))
            print(text.splitlines()[0] if text else "")
            return 0
        if engine.poll() is not None or time.monotonic() > deadline:
            if engine.poll() is None:
                engine.terminate()
            sys.stderr.write("real-engine fixture: OpenSearch did not start (%s); its log ends:\n%s\n" % (
                "exit %s" % engine.returncode if engine.returncode is not None else "timed out", text[-4000:]))
            return 1
        time.sleep(0.2)


def stop(url_file):
    pid_path = url_file + ".pid"
    if not os.path.exists(pid_path):
        print("real-engine fixture: nothing to stop")
        return 0
    with open(pid_path) as pid_file:
        pid = int(pid_file.read().strip())
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            sys.stderr.write("real-engine fixture: OpenSearch did not stop within 60 s; killed\n")
            return 1
        time.sleep(0.1)
    for path in (url_file, pid_path):
        if os.path.exists(path):
            os.remove(path)
    print("real-engine fixture: stopped")
    return 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("start", "stop"):
        sys.stderr.write(__doc__)
        return 2
    return start(argv[2]) if argv[1] == "start" else stop(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
