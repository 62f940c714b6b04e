"""The lock-set scenario's queueing rule and SetChecks on hand-made sets and watch event
sequences: grants in rank order with locks kept for a blocked claim, Leases shown Held on a
shared lock with and without a deleted holder among them, tokens, and holders leaving Held."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from set_checks import SetChecks, grants_by_rank, not_holding_their_sets  # noqa: E402


def locks(*names):
    return frozenset(names)


def feed(checks, events):
    for seen, (name, phase, token) in enumerate(events):
        checks(name, phase, token, float(seen))


def checks_with(**sets):
    checks = SetChecks()
    checks.sets.update({name: locks(*names) for name, names in sets.items()})
    return checks


class GrantsByRankTest(unittest.TestCase):
    def test_claims_whose_locks_are_free_are_granted_in_rank_order(self):
        waiting = [("c1", locks("a", "b")), ("c2", locks("c", "d")), ("c3", locks("b", "e"))]
        self.assertEqual(grants_by_rank([locks("x")], waiting), ["c1", "c2"])

    def test_a_blocked_claim_keeps_its_free_locks_from_the_claims_below_it(self):
        waiting = [("head", locks("a", "b", "c")), ("below", locks("b", "d"))]
        self.assertEqual(grants_by_rank([locks("a", "x")], waiting), [])

    def test_a_claim_below_a_blocked_one_takes_locks_the_blocked_one_does_not_need(self):
        waiting = [("head", locks("a", "b")), ("below", locks("c", "d"))]
        self.assertEqual(grants_by_rank([locks("a")], waiting), ["below"])

    def test_nothing_held_grants_the_head(self):
        self.assertEqual(grants_by_rank([], [("head", locks("a", "b"))]), ["head"])


class NotHoldingTheirSetsTest(unittest.TestCase):
    def test_a_set_whose_documents_all_name_its_lease_holds(self):
        owners = {"a": "s1", "b": "s1", "c": "s2"}
        self.assertEqual(not_holding_their_sets({"s1": locks("a", "b"), "s2": locks("c")}, owners), [])

    def test_a_document_naming_another_lease_or_missing_is_found(self):
        owners = {"a": "s1", "b": "s2"}
        holders = {"s1": locks("a", "b"), "s2": locks("b"), "s3": locks("a", "z")}
        self.assertEqual(not_holding_their_sets(holders, owners), ["s1", "s3"])


class SetChecksTest(unittest.TestCase):
    def test_grants_are_recorded_once_in_the_order_first_seen_held(self):
        checks = checks_with(s1=("a", "b"), s2=("c", "d"))
        feed(checks, [("s2", "Pending", None), ("s1", "Held", "t1"), ("s2", "Held", "t2"), ("s1", "Held", "t1"),
                      ("other", "Held", "t9")])
        self.assertEqual(checks.granted, [("s1", 1.0), ("s2", 2.0)])
        self.assertEqual(set(checks.violations().values()), {0})

    def test_two_live_holders_shown_held_on_a_shared_lock_count_once_as_a_pair(self):
        checks = checks_with(s1=("a", "b"), s2=("b", "c"), s3=("d", "e"))
        feed(checks, [("s1", "Held", "t1"), ("s3", "Held", "t3"), ("s2", "Held", "t2"), ("s2", "Held", "t2")])
        self.assertEqual(checks.overlapping_live, {("s1", "s2")})
        self.assertEqual(checks.violations()["overlapping_live_holders"], 1)

    def test_a_deleted_holder_still_shown_held_beside_its_successor_is_counted_apart(self):
        checks = checks_with(s1=("a", "b"), s2=("b", "c"))
        feed(checks, [("s1", "Held", "t1")])
        checks.deleted.add("s1")
        feed(checks, [("s2", "Held", "t2"), ("s1", "Pending", None)])
        self.assertEqual(checks.overlapping_shown, {("s1", "s2")})
        self.assertEqual(set(checks.violations().values()), {0})

    def test_a_successor_shown_held_after_the_dead_holder_left_overlaps_nothing(self):
        checks = checks_with(s1=("a", "b"), s2=("b", "c"))
        feed(checks, [("s1", "Held", "t1")])
        checks.deleted.add("s1")
        feed(checks, [("s1", "Pending", None), ("s2", "Held", "t2")])
        self.assertEqual((checks.overlapping_live, checks.overlapping_shown), (set(), set()))

    def test_held_without_a_token_or_with_another_token_is_counted(self):
        checks = checks_with(s1=("a", "b"), s2=("c", "d"))
        feed(checks, [("s1", "Held", None), ("s2", "Held", "t2"), ("s2", "Held", "t7")])
        self.assertEqual(checks.violations()["held_without_token"], 1)
        self.assertEqual(checks.violations()["token_changes"], 1)

    def test_a_deleted_holder_granted_again_is_counted(self):
        checks = checks_with(s1=("a", "b"))
        feed(checks, [("s1", "Held", "t1")])
        checks.deleted.add("s1")
        feed(checks, [("s1", "Pending", None), ("s1", "Held", "t5")])
        self.assertEqual(checks.violations()["token_changes"], 1)

    def test_only_a_live_holder_leaving_held_is_counted(self):
        checks = checks_with(s1=("a", "b"), s2=("c", "d"), s3=("e", "f"))
        feed(checks, [("s1", "Held", "t1"), ("s2", "Held", "t2"), ("s3", "Pending", None)])
        checks.deleted.add("s1")
        feed(checks, [("s1", "Pending", None), ("s2", "Deleted", "t2"), ("s3", "Pending", None)])
        self.assertEqual(checks.violations()["live_holders_leaving_held"], 1)
        self.assertEqual(checks.live_holders(), set())


if __name__ == "__main__":
    unittest.main(verbosity=2)
