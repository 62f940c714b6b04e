"""The failover figures on hand-made histories: a successor's first Held after the failure (not
before it, not a Pending version), its command's first start after the failure, trials that
never handed over, the node rows' figure from the last heartbeat, and how long before its
validity a cut-off holder stopped."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from figures import Trial, first_held_after, first_start_after, row_figures, stopped_before  # noqa: E402
from workload_check import Section  # noqa: E402


def lease_event(rv, name, phase, seen, event_type="MODIFIED"):
    return (rv, "lease", event_type, {"metadata": {"name": name}, "status": {"phase": phase}}, seen)


def section(holder, token, start, stop=None):
    s = Section(holder, "failover/lock", "lease", token, 1, start)
    if stop is not None:
        s.stopped, s.stop_time = "terminated", stop
    return s


def trial(index, failed_at, last_heartbeat=None):
    t = Trial(index, "lock-%d" % index, "h-%d" % index, "s-%d" % index, "lock-%d-h-%d" % (index, index),
              "lock-%d-s-%d" % (index, index), "node-1", "node-2")
    t.failed_at = failed_at
    t.last_heartbeat = last_heartbeat
    return t


class FiguresTest(unittest.TestCase):
    def test_the_first_held_at_or_after_the_failure_counts(self):
        events = [lease_event(5, "s", "Held", 20.0), lease_event(2, "s", "Pending", 9.0),
                  lease_event(1, "s", "Held", 5.0), lease_event(3, "other", "Held", 11.0),
                  lease_event(4, "s", "Held", 12.0)]
        # Replayed in resourceVersion order: the Held at 5.0 came before the failure.
        self.assertEqual(first_held_after(events, "s", 10.0), 12.0)
        self.assertIsNone(first_held_after(events, "s", 21.0))
        self.assertIsNone(first_held_after([lease_event(1, "s", "Held", 12.0, "DELETED")], "s", 10.0))

    def test_the_successor_command_start_after_the_failure(self):
        starts = [("ns/s", 4.0), ("ns/s", 13.5), ("ns/s", 12.5), ("ns/h", 11.0)]
        self.assertEqual(first_start_after(starts, "ns/s", 10.0), 12.5)
        self.assertIsNone(first_start_after(starts, "ns/x", 0.0))

    def test_a_row_counts_the_trials_that_never_handed_over(self):
        trials = [trial(0, 10.0, last_heartbeat=4.0), trial(1, 20.0, last_heartbeat=18.0), trial(2, 30.0)]
        events = [lease_event(1, trials[0].successor_lease, "Held", 10.5),
                  lease_event(2, trials[1].successor_lease, "Held", 22.0)]
        starts = [("ns/s-0", 10.75), ("ns/s-1", 22.5)]
        figures = row_figures(trials, events, starts, lambda p: "ns/" + p)
        self.assertEqual(figures["trials"], 3)
        self.assertEqual(figures["not_handed_over"], 1)
        self.assertEqual(figures["to_held"]["count"], 2)
        self.assertEqual(figures["to_held"]["min_ms"], 500.0)
        self.assertEqual(figures["to_held"]["max_ms"], 2000.0)
        self.assertEqual(figures["to_command"]["min_ms"], 750.0)
        self.assertEqual(figures["to_command"]["max_ms"], 2500.0)
        self.assertEqual(figures["to_held_from_last_heartbeat"]["min_ms"], 4000.0)
        self.assertEqual(figures["to_held_from_last_heartbeat"]["max_ms"], 6500.0)

    def test_a_trial_never_failed_has_no_figures(self):
        figures = row_figures([trial(0, None)], [lease_event(1, "lock-0-s-0", "Held", 1.0)], [], lambda p: p)
        self.assertEqual(figures["not_handed_over"], 1)
        self.assertNotIn("to_held_from_last_heartbeat", figures)

    def test_how_long_before_its_validity_a_holder_stopped(self):
        sections = [section("ns/h", 3, 1.0, stop=58.0), section("ns/h", 4, 60.0)]
        self.assertEqual(stopped_before(sections, "ns/h", 3, 60.0), 2.0)
        self.assertEqual(stopped_before(sections, "ns/h", 3, 57.5), -0.5)
        self.assertIsNone(stopped_before(sections, "ns/h", 4, 100.0))  # never stopped
        self.assertIsNone(stopped_before(sections, "ns/h", 3, None))


if __name__ == "__main__":
    unittest.main()
