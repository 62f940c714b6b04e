"""End-to-end: semaphores, read-write locks and lock sets in Kubernetes mode, as users run them:
`eslease run LOCK --capacity N [--exclusive] -- CMD` and `eslease run LOCK1 LOCK2 ... -- CMD`
processes acting for simulated pods, with
eslease-controller and both emulators as separate processes. Every command records when it
starts and ends; the checks are on those critical sections."""

import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_kube_test  # noqa: E402
from cli_kube_test import CliKubernetesMode  # noqa: E402
from intervals import most_at_once, overlaps  # noqa: E402
from controller_env import wait_for  # noqa: E402

TIMEOUT = 60


class KubeShapes(CliKubernetesMode):
    # The scenarios of CliKubernetesMode run in their own test; only these run here.
    def run_all(self, lock, shapes, seconds, ttl="5s"):
        """One `eslease run` per shape (its extra flags), each for its own pod, queued in order:
        each claim is made before the next tool starts (claims created in one second are served
        by name, which follows that order too); returns labels."""
        labels = ["%s-%d" % (lock, i) for i in range(len(shapes))]
        self.env.create_ready_pods(self.ns, labels)
        tools = []
        for label, flags in zip(labels, shapes):
            tools.append(self.tool("run-" + label, "run", lock, "--ttl", ttl, *flags, "--",
                                   *self.recorder(label), str(seconds), pod=label))
            lease = "%s-%s" % (lock, label)
            wait_for(lambda: self.phase(lease) is not None or self.started(label), TIMEOUT,
                     "the claim %s to be made" % lease)
        for t in tools:
            self.assertEqual(t.wait(timeout=180), 0, t.stderr())
        return labels

    def test_a_semaphore_runs_at_most_its_capacity_at_once_and_all_finish(self):
        labels = self.run_all("sem", [["--capacity", "3", "--shared"]] * 10, 1.0)
        intervals = [self.interval(label) for label in labels]
        self.assertLessEqual(most_at_once(intervals), 3, intervals)
        self.assertGreaterEqual(most_at_once(intervals), 2, "shared holders hold side by side")
        wait_for(lambda: not self.leases(), TIMEOUT, "every Lease to be deleted after its command")

    def test_readers_overlap_and_a_writer_runs_alone_without_starving(self):
        # Two readers, then a writer, then three more readers: the writer runs alone, and
        # before the readers that came after it.
        shapes = [["--capacity", "2", "--shared"]] * 2 + [["--capacity", "2", "--exclusive"]] + [["--capacity", "2"]] * 3
        labels = self.run_all("rw", shapes, 1.0)
        intervals = {label: self.interval(label) for label in labels}
        writer = intervals[labels[2]]
        for label in labels[:2] + labels[3:]:
            self.assertFalse(overlaps(writer, intervals[label]), "the writer ran beside %s" % label)
        for label in labels[3:]:
            self.assertGreaterEqual(intervals[label][0], writer[1], "a later reader went before the writer")
        self.assertLessEqual(most_at_once(list(intervals.values())), 2)

    def test_a_deleted_holder_pod_frees_its_slot_for_the_next_claim_at_once(self):
        self.env.create_ready_pods(self.ns, ["h1", "h2", "next"])
        holders = [self.tool("run-" + pod, "run", "pool", "--capacity", "2", "--shared", "--ttl", "30s", "--",
                             *self.recorder(pod), "600", pod=pod) for pod in ("h1", "h2")]
        wait_for(lambda: self.started("h1") and self.started("h2"), TIMEOUT, "both holders to run")
        waiter = self.tool("run-next", "run", "pool", "--capacity", "2", "--shared", "--ttl", "30s", "--",
                           *self.recorder("next"), "0.2", pod="next")
        self.wait_phase("pool-next", "Pending")
        deleted_at = time.time()
        self.env.kubectl("delete", "pod", "h1", "-n", self.ns, "--wait=false")
        holders[0].proc.kill()  # the kubelet stops the pod's containers
        self.assertEqual(waiter.wait(timeout=TIMEOUT), 0, waiter.stderr())
        started, _ = self.interval("next")
        # Before the dead holder's 30 s lease could have run out: the slot moved on its death,
        # not on expiry (how fast is takeover-bench's semaphore scenario).
        self.assertLess(started - deleted_at, 30.0)
        lease = self.leases().get("pool-h2", {})
        self.assertEqual(lease.get("status", {}).get("phase"), "Held", "the other holder keeps its slot")
        holders[1].stop()

    def test_sets_of_3_of_8_locks_never_share_a_lock_and_survive_a_holder_pod_deleted_mid_set(self):
        rng = random.Random(2026)
        locks = ["tbl-%d" % i for i in range(8)]
        # The victim holds its set in a long command; its pod is deleted there, as a node drain
        # or an eviction does, and the kubelet stops the command.
        self.env.create_ready_pods(self.ns, ["victim"])
        victim = self.tool("run-victim", "run", "tbl-0", "tbl-1", "tbl-2", "--ttl", "30s", "--",
                           *self.recorder("victim"), "600", pod="victim")
        wait_for(lambda: self.started("victim"), TIMEOUT, "the victim to hold its set")
        # The first two sets share no lock with each other and each one with the victim: both
        # wait for its death, then run side by side for as long as they hold (2 s, however slow
        # the machine). The 18 random ones are claimed after them, all at once.
        sets = [["tbl-0", "tbl-3", "tbl-6"], ["tbl-1", "tbl-4", "tbl-5"]]
        sets += [rng.sample(locks, 3) for _ in range(18)]
        labels = ["set-%d" % i for i in range(len(sets))]
        self.env.create_ready_pods(self.ns, labels)
        tools = []
        for label, chosen in zip(labels, sets):
            first_two = len(tools) < 2
            tools.append(self.tool("run-" + label, "run", *chosen, "--ttl", "5s", "--", *self.recorder(label),
                                   "2" if first_two else "0.3", pod=label))
            if first_two:
                made = len(tools) + 1
                wait_for(lambda: len(self.leases()) == made, TIMEOUT, "the claim of %s to be made" % label)
        wait_for(lambda: len(self.leases()) == len(sets) + 1, TIMEOUT, "every claim to be made")
        killed_at = time.time()
        self.env.kubectl("delete", "pod", "victim", "-n", self.ns, "--wait=false")
        victim.proc.kill()
        for t in tools:
            self.assertEqual(t.wait(timeout=240), 0, t.stderr())
        held = {lock: [] for lock in locks}
        for label, chosen in zip(labels, sets):
            for lock in chosen:
                held[lock].append(self.interval(label))
            with open(os.path.join(self.dir, label + ".env")) as f:
                token, lock_env, _ = f.read().split()
            self.assertEqual(lock_env, ",".join("%s/%s" % (self.ns, lock) for lock in chosen), "ESLEASE_LOCK")
        victim_start = self.interval_start("victim")
        for lock in ("tbl-0", "tbl-1", "tbl-2"):
            held[lock].append((victim_start, killed_at))
        for lock, intervals in held.items():
            self.assertLessEqual(most_at_once(intervals), 1, "lock %s had two holders: %s" % (lock, sorted(intervals)))
        self.assertTrue(overlaps(self.interval(labels[0]), self.interval(labels[1])),
                        "sets that share no lock run side by side")
        wait_for(lambda: set(self.leases()) <= {"victim"} or not self.leases(), TIMEOUT,
                 "every Lease to be deleted after its command")

    def interval_start(self, label):
        with open(os.path.join(self.dir, label + ".start")) as f:
            return float(f.read())


# Only the shape scenarios: the inherited ones run in e2e_cli_kube_test.
def load_tests(loader, tests, pattern):
    return loader.loadTestsFromNames(
        ["%s.KubeShapes.%s" % (__name__, name) for name in loader.getTestCaseNames(KubeShapes)
         if name not in loader.getTestCaseNames(CliKubernetesMode)])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: %s <bin dir> <source dir> [unittest args]" % sys.argv[0])
    cli_kube_test.BIN, cli_kube_test.SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
