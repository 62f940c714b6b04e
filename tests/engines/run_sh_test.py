"""tests/engines/opensearch/run.sh as a user (and a held-out check) starts it: it says where it
listens, answers as OpenSearch, keeps a --data directory across restarts and removes its own
temporary one, stops cleanly on SIGTERM and refuses bad arguments with a clear message."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backend import ENGINE_START_TIMEOUT, RUN_SH, announced_url, engine_version  # noqa: E402


class Engine:
    def __init__(self, *args):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([RUN_SH, "--version", engine_version()] + list(args), stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + ENGINE_START_TIMEOUT
        while True:
            self.url = announced_url(self.text())
            if self.url:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("run.sh did not announce its address:\n" + self.text()[-3000:])
            time.sleep(0.2)

    def text(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("run.sh did not stop within 60 s of SIGTERM")
        return self.proc.returncode


class RunSh(unittest.TestCase):
    def test_it_listens_on_loopback_answers_as_opensearch_and_keeps_its_data_dir(self):
        with tempfile.TemporaryDirectory(prefix="eslease-engine-data-") as data:
            engine = Engine("--data", data)
            try:
                self.assertRegex(engine.url, r"^http://127\.0\.0\.1:\d+$")
                self.assertNotEqual(engine.url.rsplit(":", 1)[1], "0")
                status, info = engine.call("GET", "/")
                self.assertEqual(status, 200)
                self.assertEqual(info["version"]["distribution"], "opensearch")
                self.assertTrue(info["version"]["number"].startswith(engine_version() + "."), info["version"])
                self.assertIn("opensearch %s" % info["version"]["number"], engine.text(),
                              "the log names the version")
                status, created = engine.call("PUT", "/kept/_create/a%2Fb", {"n": 1})
                self.assertEqual(status, 201, created)
                status, again = engine.call("PUT", "/kept/_create/a%2Fb", {"n": 2})
                self.assertEqual(status, 409, again)
                self.assertEqual(again["error"]["type"], "version_conflict_engine_exception")
            finally:
                self.assertEqual(engine.stop(), 0, engine.text()[-3000:])
            self.assertTrue(os.listdir(data), "--data DIR is kept after the stop")

            engine = Engine("--data", data)
            try:
                status, doc = engine.call("GET", "/kept/_doc/a%2Fb")
                self.assertEqual(status, 200, doc)
                self.assertEqual(doc["_source"], {"n": 1})
                self.assertEqual(doc["_seq_no"], created["_seq_no"])
            finally:
                self.assertEqual(engine.stop(), 0)

    def test_without_data_it_removes_its_temporary_directory(self):
        engine = Engine()
        try:
            match = re.search(r"data in (\S+)", engine.text())
            self.assertIsNotNone(match, engine.text()[-2000:])
            home = os.path.dirname(match.group(1))
            self.assertTrue(os.path.isdir(home))
        finally:
            self.assertEqual(engine.stop(), 0)
        self.assertFalse(os.path.exists(home), "its temporary directory is removed on stop")

    def test_bad_arguments_are_refused_with_a_message(self):
        for args, words in ((["--version", "4"], "--version wants 2 or 3"),
                            (["--listen", "nowhere"], "--listen wants HOST:PORT"),
                            (["--frobnicate"], "unknown argument --frobnicate")):
            result = subprocess.run([RUN_SH] + args, capture_output=True, text=True, timeout=300,
                                    stdin=subprocess.DEVNULL)
            self.assertEqual(result.returncode, 2, (args, result.stderr))
            self.assertIn(words, result.stderr)


if __name__ == "__main__":
    unittest.main()
