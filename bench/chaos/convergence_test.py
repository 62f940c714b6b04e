"""Rule (c) on hand-made end states: a claim without a phase, a lost claim, a lock with no
or two holders, a queue with a hole, a holder that does not work under its grant, a holder
of part of its claim and a claimant waiting behind nobody are each caught; a converged state
passes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convergence import Claim, DirectClaimant, unconverged  # noqa: E402
from workload_check import Shape  # noqa: E402

NS = "ns"


def lease(name, pod, phase, token=None, position=None, generation=1, observed=1, slot=None):
    status = {"phase": phase, "observedGeneration": observed}
    if phase == "Held":
        status.update(fencingToken=str(token), holder={"podName": pod})
        if slot is not None:
            status["slot"] = slot
    if position is not None:
        status["queuePosition"] = position
    return {"metadata": {"name": name, "generation": generation}, "status": status}


class ConvergenceTest(unittest.TestCase):
    def setUp(self):
        self.claims = [Claim("job-a", "job", "a", "ns/a"), Claim("job-b", "job", "b", "ns/b"),
                       Claim("job-c", "job", "c", "ns/c")]
        self.leases = {"job-a": lease("job-a", "a", "Held", 10), "job-b": lease("job-b", "b", "Pending", position=1),
                       "job-c": lease("job-c", "c", "Pending", position=0)}
        self.documents = {"ns/job": ("ns/a", "10")}
        self.running = {"ns/a", "ns/b", "ns/c", "direct/h1"}
        self.open = {"ns/a": 10, "direct/h1": 7}
        self.direct = [DirectClaimant("direct/h1", Shape(["direct/d"]))]
        self.direct_documents = {"direct/d": ("direct/h1", "7")}

    def problems(self, open_sections=False):
        return unconverged(NS, self.leases, self.claims, self.documents, self.running,
                           self.open if open_sections is False else open_sections, self.direct, self.direct_documents)

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
        self.assertEqual(self.problems(), ["job: document ns/job ns/a/9, Lease a/10"])

    def test_a_semaphore_and_a_read_write_lock_keep_to_their_shape(self):
        self.claims = [Claim("sem-%s" % p, "sem", p, "ns/" + p, 2, True) for p in "abc"]
        self.leases = {"sem-a": lease("sem-a", "a", "Held", 10, slot=0),
                       "sem-b": lease("sem-b", "b", "Held", 11, slot=1),
                       "sem-c": lease("sem-c", "c", "Pending", position=0)}
        self.documents = {"ns/sem": ("ns/a", "10"), "ns/sem#1": ("ns/b", "11")}
        self.open.update({"ns/b": 11})
        self.assertEqual(self.problems(), [])
        self.leases["sem-c"] = lease("sem-c", "c", "Held", 12, slot=1)
        self.assertEqual(self.problems(), ["sem: 3 Held on capacity 2"])
        self.leases["sem-b"] = lease("sem-b", "b", "Pending", position=0)
        self.leases["sem-c"] = lease("sem-c", "c", "Pending", position=1)
        self.assertEqual(self.problems(), ["sem: 1 Held on capacity 2 while 2 Shared claims wait"])
        self.claims[2] = Claim("sem-c", "sem", "c", "ns/c", 2, False)  # a writer waits: the readers wait too
        self.assertEqual(self.problems(), [])
        self.leases["sem-c"] = lease("sem-c", "c", "Held", 12)
        self.assertEqual(self.problems(), ["sem: an Exclusive claim Held beside 1 others"])
        self.leases["sem-a"] = lease("sem-a", "a", "Pending", position=1)
        self.documents = {"ns/sem": ("ns/c", "12")}
        self.open.update({"ns/c": 12})
        self.assertEqual(self.problems(), ["sem: document ns/sem#1 None/None, Lease c/12"])
        self.documents["ns/sem#1"] = ("ns/c", "12")
        self.assertEqual(self.problems(), [])

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
        self.open["ns/a"] = 10
        self.assertEqual(self.problems(open_sections=None), [], "the workloads left out")
        del self.direct_documents["direct/d"]
        self.assertIn("direct/h1 waits while direct/d has room for it", self.problems(open_sections=None))


class DirectShapeConvergenceTest(unittest.TestCase):
    """A plain lock d, a set {d, e}, a semaphore m of capacity 2, a writer of m."""

    def setUp(self):
        self.claimants = [DirectClaimant("direct/h1", Shape(["direct/d"])),
                          DirectClaimant("direct/s", Shape(["direct/d", "direct/e"])),
                          DirectClaimant("direct/r1", Shape(["direct/m"], 2, True)),
                          DirectClaimant("direct/r2", Shape(["direct/m"], 2, True)),
                          DirectClaimant("direct/r3", Shape(["direct/m"], 2, True)),
                          DirectClaimant("direct/w", Shape(["direct/m"], 2))]
        self.documents = {"direct/d": ("direct/h1", "7"), "direct/m": ("direct/r2", "8"),
                          "direct/m#1": ("direct/r1", "9")}
        self.running = {c.holder for c in self.claimants}
        self.open = {"direct/h1": 7, "direct/r1": 9, "direct/r2": 8}

    def problems(self):
        return unconverged(NS, {}, [], {}, self.running, self.open, self.claimants, self.documents)

    def test_holders_and_claimants_waiting_behind_them_pass(self):
        self.assertEqual(self.problems(), [])

    def test_a_set_holder_on_part_of_its_set_is_caught(self):
        # h1 let go of d; the set holds e alone.
        del self.documents["direct/d"]
        self.documents["direct/e"] = ("direct/s", "10")
        self.running.discard("direct/h1")
        self.open["direct/s"] = 10
        self.assertEqual(self.problems(), ["direct/s holds part of its claim: direct/d: 0 of 1, direct/e: 1 of 1"])

    def test_a_writer_holding_part_of_its_slots_is_caught(self):
        self.documents = {"direct/d": ("direct/h1", "7"), "direct/m": ("direct/w", "11")}
        self.open = {"direct/h1": 7, "direct/w": 11}
        self.running -= {"direct/r1", "direct/r2", "direct/r3"}  # else they would have room
        self.assertEqual(self.problems(), ["direct/w holds part of its claim: direct/m: 1 of 2"])

    def test_a_claimant_waiting_while_its_locks_have_room_is_caught(self):
        del self.documents["direct/m#1"]
        del self.open["direct/r1"]
        self.assertEqual(self.problems(), ["direct/r1 waits while direct/m has room for it",
                                           "direct/r3 waits while direct/m has room for it"])

    def test_a_document_of_a_holder_that_does_not_run_is_caught(self):
        self.running.discard("direct/r1")
        self.assertEqual(self.problems(), ["direct/m#1: held by direct/r1, which does not run"])

if __name__ == "__main__":
    unittest.main()
