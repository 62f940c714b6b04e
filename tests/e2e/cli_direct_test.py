"""End-to-end: the eslease tool in direct mode (--es URL) against es-emulator as a separate
process, as a script outside Kubernetes runs it: exit codes a script can branch on, one
default wait for both modes, one rule for lock names, and messages in words."""

import os
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_env import Process, WithEsEmulator  # noqa: E402

BIN = None
TIMEOUT = 20
SLOW = 120  # what processes started in the background may take on a loaded machine


def closed_port():
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CliDirectMode(WithEsEmulator, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_es_emulator(BIN, "eslease-direct-")

    def eslease(self, *args, url=None):
        return subprocess.run([os.path.join(BIN, "eslease"), "--es", url or self.url] + list(args),
                              capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)

    def background(self, name, *args):
        return Process(name, [os.path.join(BIN, "eslease"), "--es", self.url] + list(args), self.dir.name)

    def test_a_wait_that_runs_out_exits_three_and_names_the_holder(self):
        held = self.eslease("acquire", "nightly-report", "--holder", "worker-a", "--ttl", "30s")
        self.assertEqual(held.returncode, 0, held.stderr)
        started = time.monotonic()
        busy = self.eslease("acquire", "nightly-report", "--holder", "worker-b", "--wait", "1s")
        self.assertEqual(busy.returncode, 3, busy.stderr)
        self.assertGreaterEqual(time.monotonic() - started, 1.0)
        err = busy.stderr.decode()
        self.assertIn("lock default/nightly-report is held by worker-a (token ", err)
        self.assertNotIn("Conflict", err)
        self.assertEqual(self.eslease("release", "nightly-report", "--holder", "worker-a").returncode, 0)

    def test_without_wait_acquire_waits_until_the_holder_releases(self):
        held = self.eslease("acquire", "weekly", "--holder", "worker-a", "--ttl", "30s")
        self.assertEqual(held.returncode, 0, held.stderr)
        waiter = self.background("weekly-waiter", "acquire", "weekly", "--holder", "worker-b")
        waiter.announced(r"waiting for lock default/weekly, held by worker-a", TIMEOUT)
        self.assertIsNone(waiter.proc.poll(), "it gave up instead of waiting: " + waiter.text())
        self.assertEqual(self.eslease("release", "weekly", "--holder", "worker-a").returncode, 0)
        self.assertEqual(waiter.proc.wait(timeout=TIMEOUT), 0, waiter.text())
        waiter.stop()
        self.assertEqual(self.eslease("release", "weekly", "--holder", "worker-b").returncode, 0)

    def test_an_unreachable_elasticsearch_exits_one_and_says_so(self):
        url = "http://127.0.0.1:%d" % closed_port()
        down = self.eslease("acquire", "job", "--wait", "1s", "--es-timeout", "2s", url=url)
        self.assertEqual(down.returncode, 1, down.stderr)
        err = down.stderr.decode()
        self.assertIn("cannot reach Elasticsearch", err)
        self.assertIn(url, err)
        self.assertNotIn("Unavailable", err)

    def test_lock_names_follow_the_lease_rule_and_are_quoted_faithfully(self):
        for name in ("a/b", "..", "Upper", "../../_cluster", "slot#1", "\U0001F512"):
            refused = self.eslease("acquire", name)
            self.assertEqual(refused.returncode, 2, "%r: %s" % (name, refused.stderr))
            self.assertIn("lower-case letters", refused.stderr.decode())
        unicode_name = self.eslease("acquire", "l\u00fcck")
        self.assertIn("invalid lock name 'l\u00fcck'", unicode_name.stderr.decode("utf-8"))
        control = self.eslease("acquire", "a\x1bb")
        self.assertIn("'a\\x1bb'", control.stderr.decode("utf-8"))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: %s <bin dir> [unittest args]" % sys.argv[0])
    BIN = sys.argv[1]
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
