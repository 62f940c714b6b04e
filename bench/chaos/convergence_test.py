"""Rule (c) on hand-made end states: a claim without a phase, a lost claim, a lock with no
or two holders, a queue with a hole, and a holder that does not work under its grant are
each caught; a converged state passes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convergence import Claim, unconverged  # noqa: E402

NS = "ns"


def lease(name, pod, phase, token=None, position=None, generation=1, observed=1):
    status = {"phase": phase, "observedGeneration": observed}
    if phase == "Held":
        status.update(fencingToken=str(token), holder={"podName": pod})
    if position is not None:
        status["queuePosition"] = position
    return {"metadata": {"name": name, "generation": generation}, "status": status}


class ConvergenceTest(unittest.TestCase):
    def setUp(self):
        self.claims = [Claim("job-a", "job", "a", "ns/a"), Claim("job-b", "job", "b", "ns/b"),
                       Claim("job-c", "job", "c", "ns/c")]
        self.leases = {"job-a": lease("job-a", "a", "Held", 10), "job-b": lease("job-b", "b", "Pending", position=1),
                       "job-c": lease("job-c", "c", "Pending", position=0)}
        self.documents = {"ns/job": ("ns/a", "10"), "direct/d": ("h1", "7")}
        self.running = {"ns/a", "ns/b", "ns/c", "direct/h1"}
        self.open = {"ns/a": 10, "direct/h1": 7}

    def problems(self):
        return unconverged(NS, self.leases, self.claims, self.documents, self.running, self.open, ["direct/d"])

    def test_a_converged_state_passes(self):
        self.assertEqual(self.problems(), [])

    def test_a_claim_without_a_phase_or_with_a_stale_status(self):
        self.leases["job-b"] = lease("job-b", "b", None)
        self.leases["job-c"] = lease("job-c", "c", "Pending", position=0, generation=2)
        self.assertEqual(self.problems()[:2], ["Lease job-b shows no phase (None)",
                                               "Lease job-c: status is for generation 1, not 2"])

    def test_a_lost_claim(self):
        del self.leases["job-b"]
        self.assertIn("job: claim job-b is lost (no Lease)", self.problems())
        self.running.discard("ns/b")  # its tool is between two runs: not lost yet
        self.assertEqual(self.problems(), [])

    def test_exactly_one_holder_agreeing_with_the_document(self):
        self.leases["job-b"] = lease("job-b", "b", "Held", 11)
        self.assertEqual(self.problems(), ["job: 2 Held"])
        self.leases["job-b"] = lease("job-b", "b", "Pending", position=1)
        self.documents["ns/job"] = ("ns/a", "9")
        self.assertEqual(self.problems(), ["job: document ns/a/9, Lease a/10"])

    def test_waiting_claims_have_their_places(self):
        self.leases["job-c"] = lease("job-c", "c", "Pending")
        self.assertEqual(self.problems(), ["job: waiting claims at queue positions [-1, 1]"])

    def test_the_holder_works_under_its_grant(self):
        self.open["ns/a"] = 9
        self.assertEqual(self.problems(), ["job: its holder ns/a is not in its critical section under token 10 "
                                           "(it is in 9)"])
        del self.open["direct/h1"]
        self.assertIn("direct/d: its holder direct/h1 is not in its critical section under token 7 (it is in None)",
                      self.problems())
        self.assertEqual(unconverged(NS, self.leases, self.claims, self.documents, self.running, None,
                                     ["direct/d"]), [], "the workloads left out")
        del self.documents["direct/d"]
        self.assertIn("direct/d: not held", self.problems())


if __name__ == "__main__":
    unittest.main()
