"""SemaphoreChecks on hand-made watch event sequences: grants in order, the most Held at
once with and without deleted holders, and holders that did not keep their token."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from semaphore_checks import SemaphoreChecks  # noqa: E402


def feed(checks, events):
    for seen, (name, phase, token) in enumerate(events):
        checks(name, phase, token, float(seen))


def held(count):
    return [("sem-%d" % i, "Held", "t%d" % i) for i in range(count)]


class SemaphoreChecksTest(unittest.TestCase):
    def test_grants_are_recorded_once_in_the_order_first_seen_held(self):
        checks = SemaphoreChecks()
        feed(checks, [("sem-1", "Pending", None), ("sem-0", "Held", "t0"), ("sem-1", "Held", "t1"),
                      ("sem-0", "Held", "t0"), ("other", "Held", "t9")])
        self.assertEqual(checks.granted, [("sem-0", 1.0), ("sem-1", 2.0)])

    def test_a_deleted_holder_still_shown_held_counts_only_among_the_shown(self):
        checks = SemaphoreChecks()
        feed(checks, held(10))
        checks.deleted.add("sem-0")
        feed(checks, [("sem-10", "Held", "t10"), ("sem-0", "Released", "t0")])
        self.assertEqual(checks.most_held_live, 10)
        self.assertEqual(checks.most_held_shown, 11)

    def test_an_eleventh_live_holder_is_counted(self):
        checks = SemaphoreChecks()
        feed(checks, held(11))
        self.assertEqual(checks.most_held_live, 11)

    def test_holders_that_keep_their_token_are_not_counted(self):
        checks = SemaphoreChecks()
        feed(checks, held(3))
        mark = checks.departures_of(["sem-1", "sem-2"])
        checks.deleted.add("sem-0")
        feed(checks, [("sem-0", "Released", "t0"), ("sem-1", "Held", "t1")])
        self.assertEqual(checks.lost_since(mark), 0)

    def test_a_holder_that_left_held_or_showed_another_token_is_counted_once(self):
        checks = SemaphoreChecks()
        feed(checks, held(3))
        mark = checks.departures_of(["sem-1", "sem-2"])
        feed(checks, [("sem-1", "Pending", None), ("sem-1", "Held", "t1"), ("sem-2", "Held", "t7")])
        self.assertEqual(checks.lost_since(mark), 2)

    def test_a_deleted_lease_of_a_live_holder_is_counted(self):
        checks = SemaphoreChecks()
        feed(checks, held(2))
        mark = checks.departures_of(["sem-1"])
        feed(checks, [("sem-1", "Deleted", "t1")])
        self.assertEqual(checks.lost_since(mark), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
