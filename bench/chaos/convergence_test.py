"""Rule (c) on hand-made end states: a claim without a phase, a lost claim, a lock with no
or two holders, a queue with a hole, a holder that does not work under its grant, a holder
of part of its claim and a claimant waiting behind nobody are each caught; a converged state
passes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convergence import Claim, DirectClaimant, default_lease_name, unconverged  # noqa: E402
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
        self.open["ns/b"] = 11
        self.assertEqual(self.problems(), ["job: 2 Held"])
        del self.open["ns/b"]
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
        self.open["ns/c"] = 12
        self.assertEqual(self.problems(), ["sem: 3 Held on capacity 2"])
        self.leases["sem-b"] = lease("sem-b", "b", "Pending", position=0)
        self.leases["sem-c"] = lease("sem-c", "c", "Pending", position=1)
        self.assertEqual(self.problems(), ["sem: claim sem-b waits while its locks have room for it",
                                           "sem: claim sem-c waits while its locks have room for it"])
        self.claims[2] = Claim("sem-c", "sem", "c", "ns/c", 2, False)  # a writer waits: the readers wait too
        self.assertEqual(self.problems(), [])
        self.leases["sem-c"] = lease("sem-c", "c", "Held", 12)
        self.assertEqual(self.problems(), ["sem: an Exclusive claim Held beside 1 others"])
        self.leases["sem-a"] = lease("sem-a", "a", "Pending", position=1)
        self.documents = {"ns/sem": ("ns/c", "12")}
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
    def test_a_claim_ended_while_its_holder_runs(self):
        self.leases["job-b"] = lease("job-b", "b", "Invalid")
        self.assertEqual(self.problems(), ["job: claim job-b is Invalid while its holder runs"])
        self.running.discard("ns/b")
        self.assertEqual(self.problems(), [])


class KubeSetConvergenceTest(unittest.TestCase):
    """Pod claims on a plain lock x (pod p), the sets a = [x, y] and b = [y, z], and a Shared
    set k = [pool, sem] of capacity 2 beside a semaphore sem's claimant m. b holds y and z, a
    waits for y and keeps x, so p waits behind a; m and k share sem."""

    def setUp(self):
        self.claims = [Claim("x-p", "x", "p", "ns/p"), Claim("a", ["x", "y"], "a", "ns/a"),
                       Claim("b", ["z", "y"], "b", "ns/b"), Claim("sem-m", "sem", "m", "ns/m", 2, True),
                       Claim("k", ["pool", "sem"], "k", "ns/k", 2, True)]
        self.leases = {"x-p": lease("x-p", "p", "Pending", position=1), "a": lease("a", "a", "Pending", position=0),
                       "b": lease("b", "b", "Held", 20), "sem-m": lease("sem-m", "m", "Held", 30, slot=0),
                       "k": lease("k", "k", "Held", 31, slot=0)}
        self.documents = {"ns/y": ("ns/b", "20"), "ns/z": ("ns/b", "20"), "ns/sem": ("ns/m", "30"),
                          "ns/pool": ("ns/k", "31"), "ns/sem#1": ("ns/k", "31")}
        self.running = {"ns/p", "ns/a", "ns/b", "ns/m", "ns/k"}
        self.open = {"ns/b": 20, "ns/m": 30, "ns/k": 31}

    def problems(self):
        return unconverged(NS, self.leases, self.claims, self.documents, self.running, self.open)

    def test_sets_holding_and_claims_waiting_behind_them_pass(self):
        self.assertEqual(self.problems(), [])

    def test_a_set_held_on_part_of_its_locks_is_caught(self):
        del self.documents["ns/z"]
        self.assertEqual(self.problems(), ["z: document ns/z None/None, Lease b/20"])
        self.documents["ns/z"] = ("ns/b", "20")
        del self.documents["ns/sem#1"]
        self.assertEqual(self.problems(), ["sem: no slot document shows Lease k/31"])

    def test_a_set_held_beside_another_holder_of_one_of_its_locks_is_caught(self):
        self.leases["a"] = lease("a", "a", "Held", 21)
        self.documents["ns/x"] = ("ns/a", "21")
        self.open["ns/a"] = 21
        self.leases["x-p"] = lease("x-p", "p", "Pending", position=0)
        self.assertEqual(self.problems(), ["y: 2 Held"])
        self.setUp()
        self.claims.append(Claim("sem-n", "sem", "n", "ns/n", 2, True))
        self.leases["sem-n"] = lease("sem-n", "n", "Held", 32, slot=1)
        self.open["ns/n"] = 32
        self.assertEqual(self.problems(), ["sem: 3 Held on capacity 2"])

    def test_claims_waiting_on_free_locks_behind_nobody_are_caught(self):
        self.leases["b"] = lease("b", "b", "Pending", position=1)
        self.documents = {k: v for k, v in self.documents.items() if not k.startswith("ns/y")}
        self.documents.pop("ns/z")
        del self.open["ns/b"]
        self.assertEqual(self.problems(), ["x: claim x-p waits while its locks have room for it",
                                           "x,y: claim a waits while its locks have room for it",
                                           "z,y: claim b waits while its locks have room for it"])

    def test_a_shared_set_waits_for_its_other_lock_and_keeps_a_semaphore_slot(self):
        # An Exclusive set holds pool: k waits and keeps sem's free slot, so n waits behind it.
        self.claims += [Claim("w", ["pool", "q"], "w", "ns/w", 2), Claim("sem-n", "sem", "n", "ns/n", 2, True)]
        self.leases.update(k=lease("k", "k", "Pending", position=0), w=lease("w", "w", "Held", 33),
                           **{"sem-n": lease("sem-n", "n", "Pending", position=1)})
        self.documents.update({"ns/pool": ("ns/w", "33"), "ns/pool#1": ("ns/w", "33"), "ns/q": ("ns/w", "33"),
                               "ns/q#1": ("ns/w", "33")})
        del self.documents["ns/sem#1"]
        self.open.update({"ns/w": 33})
        del self.open["ns/k"]
        self.assertEqual(self.problems(), [])
        self.leases["w"] = lease("w", "w", "Pending", position=1)
        self.assertEqual(self.problems(), ["pool,sem: claim k waits while its locks have room for it",
                                           "pool,q: claim w waits while its locks have room for it",
                                           "sem: claim sem-n waits while its locks have room for it"])

    def test_a_set_shows_where_it_stands_furthest_back(self):
        self.leases["a"] = lease("a", "a", "Pending", position=3)
        self.assertEqual(self.problems(), [])
        self.leases["x-p"] = lease("x-p", "p", "Pending", position=2)
        self.assertEqual(self.problems(), ["x: waiting claims at queue positions [2, 3]"])

    def test_lease_names_are_the_tools(self):
        # As src/cli/lease_view.cpp names them (tests/unit/cli/lease_view_test.cpp).
        self.assertEqual(default_lease_name(["report"], "worker-0"), "report-worker-0")
        self.assertEqual(default_lease_name(["orders", "inventory"], "worker-0"), "inventory-set-b43582c2-worker-0")
        self.assertEqual(default_lease_name(["lock-0", "kx", "ky"], "kset-0"), "kx-set-12fa84d8-kset-0")
        self.assertEqual(default_lease_name(["my_lock", "z"], "p"), "eslease-75c33a27da61632f")


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
