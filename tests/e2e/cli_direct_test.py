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
from controller_env import Process, WithEsEmulator, wait_for  # noqa: E402

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


    def test_run_lets_go_only_once_what_its_command_left_running_has_stopped(self):
        # The command starts a background worker and exits at once; the worker runs on (it
        # holds its own section open until stopped). The lock must not move while it runs.
        worker_record = os.path.join(self.dir.name, "worker.record")
        waiter_record = os.path.join(self.dir.name, "waiter.record")
        worker = ('trap \'echo "end $(date +%s.%N)" >> {r}; exit 0\' TERM; echo "start $(date +%s.%N)" >> {r}; '
                  'sleep 60 & wait').format(r=worker_record)
        # The command exits once the worker says it has started (its trap set): on a loaded
        # machine it could otherwise be stopped before it began.
        command = "sh -c '%s' & while [ ! -s %s ]; do sleep 0.05; done; exit 0" % (
            worker.replace("'", "'\\''"), worker_record)
        holder = self.background("leaver", "run", "leftovers", "--ttl", "6s", "--grace", "1s", "--",
                                 "sh", "-c", command)
        wait_for(lambda: os.path.exists(worker_record), SLOW, "the background worker to start")
        waiter = self.background("next", "run", "leftovers", "--wait", "60s", "--", "sh", "-c",
                                 'echo "start $(date +%s.%N)" >> ' + waiter_record)
        self.assertEqual(holder.proc.wait(timeout=SLOW), 0, holder.text())
        self.assertIn("processes it started still run", holder.text())
        self.assertEqual(waiter.proc.wait(timeout=SLOW), 0, waiter.text())
        holder.stop()
        waiter.stop()
        with open(worker_record) as f:
            worker_end = [float(line.split()[1]) for line in f if line.startswith("end")]
        with open(waiter_record) as f:
            waiter_start = float(f.read().split()[1])
        self.assertEqual(len(worker_end), 1, "the worker was asked to stop, and did")
        self.assertGreaterEqual(waiter_start, worker_end[0], "the next holder ran beside the worker")

if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: %s <bin dir> [unittest args]" % sys.argv[0])
    BIN = sys.argv[1]
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
