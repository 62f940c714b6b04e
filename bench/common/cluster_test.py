"""The benchmarks' bookkeeping on hand-made data: the replay of several watch streams in the
server's order, what a sample may see, and the write counts."""

import collections
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import percentile, replay, validity_of, write_counts, writes_between  # noqa: E402
from validity import parse_time  # noqa: E402


def event(rv, seen, name="x", kind="MODIFIED", **fields):
    obj = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}}
    obj.update(fields)
    return (seen, kind, obj)


class WriteCountsTest(unittest.TestCase):
    def test_a_write_to_a_grouped_resource_counts_once(self):
        stats = {"patch leases": 3, "patch leases.eslease.io": 3, "update leases.coordination.k8s.io": 2,
                 "update leases": 2, "create events": 4, "get pods": 9, "list leases": 1}
        self.assertEqual(write_counts(stats), {"patch leases.eslease.io": 3, "update leases.coordination.k8s.io": 2,
                                               "create events": 4})
        self.assertEqual(sum(write_counts(stats).values()), 9)


class ReplayTest(unittest.TestCase):
    def test_streams_are_applied_in_resource_version_order(self):
        leases = [event(1, 5.0), event(4, 5.1)]
        sessions = [event(2, 1.0), event(3, 9.0)]
        applied = []
        replay((leases, sessions), lambda i, seen, kind, obj: applied.append((i, obj["metadata"]["resourceVersion"])))
        self.assertEqual(applied, [(0, "1"), (1, "2"), (1, "3"), (0, "4")])

    def test_a_sample_sees_no_change_before_an_earlier_one_has_arrived(self):
        # rv 2 arrived at 1.0, but rv 1 (another stream) only at 2.0: a sample at 1.5 must
        # not see rv 2 without rv 1.
        fast, slow = [event(2, 1.0)], [event(1, 2.0)]
        applied, seen_by = [], {}
        replay((fast, slow), lambda i, seen, kind, obj: applied.append(obj["metadata"]["resourceVersion"]),
               [0.5, 1.5, 2.5], lambda t: seen_by.__setitem__(t, list(applied)))
        self.assertEqual(seen_by, {0.5: [], 1.5: [], 2.5: ["1", "2"]})

    def test_validity_of_replays_leases_and_sessions_together(self):
        held = {"phase": "Held", "fencingToken": "7"}
        leases = [event(2, 0.1, "a", "ADDED", spec={"leaseDurationSeconds": 10}, status=held)]
        sessions = [event(1, 0.2, "eslease-session", "ADDED", spec={"renewTime": "2026-01-01T00:00:00.000000Z"}),
                    event(3, 0.3, "eslease-session", spec={"renewTime": "2026-01-01T00:00:05.000000Z"})]
        model = validity_of(leases, sessions)
        self.assertEqual(model.published_until("ns", "a", 7), (parse_time("2026-01-01T00:00:15Z"), "session"))
        # Sampled at 0.25 s, before the renewal arrived: the first session version's validity.
        shown = []
        validity_of(leases, sessions, [0.25], lambda t, m: shown.append(m.shown("ns", "a")))
        self.assertEqual(shown, [(7, parse_time("2026-01-01T00:00:10Z"), "session")])


class FiguresTest(unittest.TestCase):
    def test_writes_between_leaves_out_the_benchmarks_own(self):
        before = collections.Counter({"patch leases": 10, "delete pods": 1})
        after = collections.Counter({"patch leases": 40, "delete pods": 6, "create events": 2})
        self.assertEqual(writes_between(before, after, 10, own={"delete pods": 5}),
                         {"total": 32, "by_kind": {"create events": 2, "patch leases": 30},
                          "seconds": 10, "per_second": 3.2})

    def test_percentile_is_a_value_of_the_sample(self):
        values = list(range(1, 101))
        self.assertEqual(percentile(values, 50), 51)
        self.assertEqual(percentile(values, 99), 99)
        self.assertEqual(percentile(values, 100), 100)
        self.assertEqual(percentile([3], 99), 3)


if __name__ == "__main__":
    unittest.main()
