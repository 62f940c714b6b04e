"""End-to-end: fencing tokens never go backwards when the lock index is deleted and re-created,
or restored from an older snapshot, with the controller and both emulators as separate
processes. A watcher reads every Lease status while that happens; each token it ever sees
after the index went back must be larger than every token shown before, and grants are
refused, with a condition saying why, until that can be proven."""

import json
import os
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_env import Environment, ShowsLogsOnFailure, condition, lease, namespace, wait_for  # noqa: E402

BIN = None
SOURCE = None
TIMEOUT = 30
LEASE_SECONDS = 3  # grants on the old index are waited out for this long


class StatusWatcher:
    """Polls the Leases of a namespace straight from the API server (kubectl is too slow to
    see short-lived states) and keeps every (token, phase, BackendAvailable reason) seen."""

    def __init__(self, kube_url, ns):
        self.url = "%s/apis/eslease.io/v1alpha1/namespaces/%s/leases" % (kube_url, ns)
        self.seen = []  # (time, lease, status)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)
        return False

    def _run(self):
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    items = json.loads(response.read()).get("items", [])
                now = time.monotonic()
                for item in items:
                    self.seen.append((now, item["metadata"]["name"], item.get("status", {})))
            except (OSError, urllib.error.URLError, ValueError):
                pass
            self._stop.wait(0.02)

    def tokens(self):
        return [int(s["fencingToken"]) for _, _, s in self.seen if s.get("fencingToken")]

    def backend_reasons(self):
        return {(condition({"status": s}, "BackendAvailable") or {}).get("reason") for _, _, s in self.seen}


class TokenContinuity(ShowsLogsOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = Environment(BIN, SOURCE).start()

    @classmethod
    def tearDownClass(cls):
        cls.env.stop()

    def setUp(self):
        name = self.id().split(".")[-1].lower().replace("_", "-")
        self.ns = ("t-" + name[:40]).rstrip("-")
        self.index = "locks-" + self.ns
        self.env.apply(namespace(self.ns))
        self.controllers = []

    def tearDown(self):
        for c in self.controllers:
            c.stop()

    # --- helpers -------------------------------------------------------------------------
    def start_controller(self, name):
        # Its own index and namespace: the tests of this class share the emulators.
        c = self.env.start_controller("--namespace", self.ns, "--index", self.index, name="controller-" + name)
        self.controllers.append(c)
        return c

    def status(self, name):
        return (self.env.get("esl", name, self.ns) or {}).get("status", {})

    def held_token(self, name):
        s = self.status(name)
        return int(s["fencingToken"]) if s.get("phase") == "Held" and s.get("fencingToken") else None

    def hold(self, *names, lock_of=None):
        """Pods and Leases (lock `lock_of(name)`, default the name) held by them; their tokens."""
        self.env.create_ready_pods(self.ns, list(names))
        self.env.apply(*[lease(n, self.ns, (lock_of or (lambda x: x))(n), n, leaseDurationSeconds=LEASE_SECONDS)
                         for n in names])
        return {n: wait_for(lambda n=n: self.held_token(n), TIMEOUT, "Lease %s to be Held" % n) for n in names}

    def held_above(self, name, floor):
        return wait_for(lambda: (self.held_token(name) or 0) > floor and self.held_token(name), TIMEOUT,
                        "Lease %s Held with a token above %d (now %s)" % (name, floor, self.status(name)))

    def metric(self, controller, family):
        for line in self.env.metrics(controller).splitlines():
            if line.startswith(family + " "):
                return float(line.split()[1])
        return None

    def index_meta(self):
        described = self.env.es("GET", "/" + self.index)
        return next(iter(described.values()))["mappings"].get("_meta", {}).get("eslease", {})

    def es_admin(self, path):
        return self.env.http("POST", self.env.es_url + path)

    def assert_never_backwards(self, watcher, before, went_back_at):
        after = [int(s["fencingToken"]) for t, _, s in watcher.seen if t >= went_back_at and s.get("fencingToken")]
        earlier_max = max(before)
        lower = sorted({t for t in after if t not in before and t <= earlier_max})
        self.assertEqual(lower, [], "tokens shown after the index went back, not above %d" % earlier_max)

    # --- tests ---------------------------------------------------------------------------
    def test_a_deleted_and_recreated_index_keeps_tokens_growing(self):
        controller = self.start_controller("recreate")
        # Two primary failovers: tokens carry term 3, far above a new index's first ones.
        for _ in range(2):
            self.es_admin("/_emulator/bump_primary_term?index=" + self.index)
        tokens = self.hold("a", "b", "c")
        self.assertTrue(all(t >> 32 == 3 for t in tokens.values()), tokens)

        with StatusWatcher(self.env.kube_url, self.ns) as watcher:
            went_back_at = time.monotonic()
            # An operator deletes the lock index and creates it again, empty.
            self.env.es("DELETE", "/" + self.index)
            try:
                self.env.es("PUT", "/" + self.index)
            except urllib.error.HTTPError as e:  # a write of the controller created it first
                self.assertEqual(e.code, 400)
            after = {n: self.held_above(n, max(tokens.values())) for n in tokens}
            self.assert_never_backwards(watcher, list(tokens.values()), went_back_at)
            self.assertIn("TokensUnproven", watcher.backend_reasons())

        self.assertTrue(all(t >> 48 == 1 for t in after.values()), after)
        self.assertEqual(self.index_meta().get("tokenEpoch"), 1)
        self.assertEqual(self.metric(controller, "eslease_fencing_token_epoch"), 1)
        self.assertGreater(self.metric(controller, "eslease_fencing_refusals_total"), 0)
        backend = condition({"status": self.status("a")}, "BackendAvailable")
        self.assertEqual(backend["status"], "True", backend)

    def test_an_index_restored_from_an_older_snapshot_keeps_tokens_growing(self):
        self.start_controller("restore")
        early = self.hold("a")
        self.es_admin("/_emulator/snapshot?index=%s&snapshot=%s" % (self.index, self.ns))
        # After the snapshot: another lock is granted, and "a"'s lock is handed over.
        later = self.hold("b")
        self.env.create_ready_pods(self.ns, ["c"])
        self.env.apply(lease("c", self.ns, "a", "c", leaseDurationSeconds=LEASE_SECONDS))
        self.env.kubectl("delete", "pod", "a", "-n", self.ns, "--grace-period=0", "--force")
        later["c"] = wait_for(lambda: self.held_token("c"), TIMEOUT, "c to take lock a over")
        before = list(early.values()) + list(later.values())
        self.assertGreater(later["c"], early["a"])

        with StatusWatcher(self.env.kube_url, self.ns) as watcher:
            went_back_at = time.monotonic()
            # Restored over the running index (as over a closed one): same UUID, older documents.
            restored = self.es_admin("/_emulator/restore?snapshot=" + self.ns)
            self.assertEqual(restored["index"], self.index)
            for n in ("b", "c"):
                self.held_above(n, max(before))
            self.assert_never_backwards(watcher, before, went_back_at)
            self.assertIn("TokensUnproven", watcher.backend_reasons())

    def test_a_controller_started_on_a_restored_index_raises_the_epoch_before_granting(self):
        first = self.start_controller("before")
        tokens = self.hold("a")
        self.es_admin("/_emulator/snapshot?index=%s&snapshot=%s" % (self.index, self.ns))
        tokens.update(self.hold("b"))
        self.assertEqual(first.stop(), 0)

        # While no controller runs, the index is lost and restored from the snapshot: a new
        # UUID, "a"'s grant as it was, "b"'s gone.
        self.env.es("DELETE", "/" + self.index)
        self.es_admin("/_emulator/restore?snapshot=" + self.ns)
        with StatusWatcher(self.env.kube_url, self.ns) as watcher:
            went_back_at = time.monotonic()
            second = self.start_controller("after")
            second.announced(r"raised the lock index's fencing token epoch.*another UUID", timeout=TIMEOUT)
            self.held_above("b", max(tokens.values()))
            self.assert_never_backwards(watcher, list(tokens.values()), went_back_at)
        # "a" still holds the grant the snapshot recorded (same token: adopted, not granted anew).
        self.assertEqual(self.held_token("a"), tokens["a"])
        self.assertEqual(self.index_meta().get("tokenEpoch"), 1)


def main():
    global BIN, SOURCE
    if len(sys.argv) < 3:
        raise SystemExit("usage: token_continuity_test.py <bin dir> <source dir> [unittest args]")
    BIN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)


if __name__ == "__main__":
    main()
