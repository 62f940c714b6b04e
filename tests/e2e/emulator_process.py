"""Starts kube-emulator on a loopback port for the end-to-end tests and always stops it."""

import os
import queue
import re
import subprocess
import tempfile
import threading
import time

from sanitizer_reports import install

# The emulator's sanitizer reports, and those of any process the test starts, are checked.
SANITIZER_REPORTS = install()
_LISTENING = re.compile(r"kube-emulator listening on (\S+)")


class KubeEmulator:
    """A running `kube-emulator --listen 127.0.0.1:0 --kubeconfig-out FILE [extra_args]`.

    Use as a context manager, or call start()/stop(); stop() is safe to call twice.
    extra_args are appended to the command line, e.g. ["--simulate-kubelet"].
    """

    def __init__(self, binary, start_timeout=30.0, extra_args=()):
        self.binary = binary
        self.start_timeout = start_timeout
        self.extra_args = list(extra_args)
        self.workdir = None
        self.kubeconfig = None
        self.url = None
        self.log_path = None
        self._process = None
        self._log = None

    def start(self):
        self.workdir = tempfile.TemporaryDirectory(prefix="eslease-e2e-")
        self.kubeconfig = os.path.join(self.workdir.name, "kubeconfig")
        self.log_path = os.path.join(self.workdir.name, "emulator.stderr")
        self._log = open(self.log_path, "wb")
        self._process = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:0", "--kubeconfig-out", self.kubeconfig] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL)
        lines = queue.Queue()

        def pump():
            for raw in self._process.stdout:
                lines.put(raw.decode("utf-8", "replace"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                raise RuntimeError("kube-emulator did not report its address within %.0fs" % self.start_timeout)
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                code = self._process.wait()
                stderr = self.stderr()
                self.stop()
                raise RuntimeError("kube-emulator exited with %s before listening: %s" % (code, stderr))
            match = _LISTENING.search(line)
            if match:
                self.url = match.group(1)
                break
        if not os.path.exists(self.kubeconfig):
            self.stop()
            raise RuntimeError("kube-emulator announced %s but wrote no kubeconfig" % self.url)
        return self

    def stderr(self):
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as log:
            return log.read().decode("utf-8", "replace")[-4000:]

    def stop(self):
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(timeout=10)
            if self._process.stdout:
                self._process.stdout.close()
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None
        SANITIZER_REPORTS.check()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def parse_arguments(argv):
    """Returns (emulator binary, source dir, remaining argv for unittest)."""
    if len(argv) < 3:
        raise SystemExit("usage: %s <kube-emulator binary> <source dir> [unittest args]" % argv[0])
    return argv[1], argv[2], [argv[0]] + argv[3:]
