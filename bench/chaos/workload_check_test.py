"""The chaos checker's rules on the work under the locks, on hand-made journals: overlapping
critical sections and stale fenced writes are caught, and what the design allows is not."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workload_check import HolderProfile, check_fencing, check_sections, failing_first, read_journals  # noqa: E402

KUBE = HolderProfile("kubernetes", ttl=4, margin=0.8, grace=0.5)
DIRECT = HolderProfile("direct", ttl=4, margin=0.8, grace=0.5)


def journal(holder, token, start, stop=None, alive=(), writes=(), lock="ns/job", pid=None):
    """The lines a critical section leaves: start, heartbeats, writes (t, outcome, seq_no), stop."""
    base = {"holder": holder, "lock": lock, "lease": "job-" + holder, "token": token, "pid": pid or token}
    lines = [dict(base, event="start", t=start)]
    lines += [dict(base, event="alive", t=t) for t in alive]
    for t, outcome, seq_no in writes:
        lines.append(dict(base, event="write", t=t, outcome=outcome, seq_no=seq_no, n=0))
    if stop is not None:
        lines.append(dict(base, event="stop", t=stop, reason="terminated"))
    return [json.dumps(line) for line in lines]


def sections_of(*journals):
    return read_journals([line for j in journals for line in j])


class CriticalSectionTest(unittest.TestCase):
    def check(self, *journals, profiles=None, pauses=None, validity=None):
        sections, _ = sections_of(*journals)
        profiles = profiles or {"a": KUBE, "b": KUBE}
        return check_sections(sections, profiles, pauses or {}, lambda s: (validity or {}).get(s.holder))

    def test_sections_one_after_the_other_pass(self):
        report = self.check(journal("a", 10, 0, stop=5), journal("b", 20, 6, stop=9))
        self.assertEqual(report.checked, 2)
        self.assertEqual(report.violations, [])

    def test_an_overlap_is_a_violation(self):
        report = self.check(journal("a", 10, 0, stop=7), journal("b", 20, 6, stop=9))
        self.assertEqual(len(report.violations), 1)
        self.assertEqual(report.violations[0]["overlap_seconds"], 1)
        self.assertNotIn("cause", report.violations[0])

    def test_a_killed_section_ends_a_heartbeat_after_its_last_record(self):
        # a was killed after its heartbeat at 5.95: it may have lived until 6.05.
        report = self.check(journal("a", 10, 0, alive=[5.95]), journal("b", 20, 6, stop=9))
        self.assertEqual(len(report.violations), 1)
        self.assertEqual(self.check(journal("a", 10, 0, alive=[5.85]), journal("b", 20, 6, stop=9)).violations, [])

    def test_a_killed_section_ends_when_its_kill_left_nothing_alive_if_that_came_first(self):
        # a's heartbeat at 5.95 would let it live until 6.05, but its kill was done at 5.97.
        sections, _ = sections_of(journal("a", 10, 0, alive=[5.95]), journal("b", 20, 6, stop=9))
        report = check_sections(sections, {"a": KUBE, "b": KUBE}, {}, lambda s: None, kills={"a": [2.0, 5.97]})
        self.assertEqual(report.violations, [])
        # A kill after the successor started proves nothing earlier.
        sections, _ = sections_of(journal("a", 10, 0, alive=[5.95]), journal("b", 20, 6, stop=9))
        report = check_sections(sections, {"a": KUBE, "b": KUBE}, {}, lambda s: None, kills={"a": [6.02]})
        self.assertEqual(len(report.violations), 1)
        self.assertEqual(report.violations[0]["overlap_seconds"], 0.02)

    def test_a_holder_paused_past_its_validity_is_excused(self):
        # a's published validity ended at 6; its tool had to stop it from 4.7 on.
        paused = {"a": [(4.0, 8.0)]}
        report = self.check(journal("a", 10, 0, stop=8.1), journal("b", 20, 6.2, stop=9),
                            pauses=paused, validity={"a": 6.0})
        self.assertEqual(report.violations, [])
        self.assertEqual(report.excused, 1)

    def test_a_pause_that_ended_before_the_tool_had_to_act_excuses_nothing(self):
        paused = {"a": [(1.0, 3.0)]}
        report = self.check(journal("a", 10, 0, stop=8.1), journal("b", 20, 6.2, stop=9),
                            pauses=paused, validity={"a": 6.0})
        self.assertEqual(len(report.violations), 1)

    def test_a_pause_after_the_validity_ended_excuses_nothing(self):
        paused = {"a": [(6.1, 9.0)]}
        report = self.check(journal("a", 10, 0, stop=9.1), journal("b", 20, 6.2, stop=9.5),
                            pauses=paused, validity={"a": 6.0})
        self.assertEqual(len(report.violations), 1)

    def test_a_direct_holder_paused_longer_than_its_lease_before_the_successor_is_excused(self):
        profiles = {"a": DIRECT, "b": DIRECT}
        report = self.check(journal("a", 10, 0, stop=8.1), journal("b", 20, 6.2, stop=9),
                            profiles=profiles, pauses={"a": [(1.5, 8.0)]})
        self.assertEqual(report.violations, [])
        late = self.check(journal("a", 10, 0, stop=8.1), journal("b", 20, 6.2, stop=9),
                          profiles=profiles, pauses={"a": [(0.5, 1.5)]})
        self.assertEqual(len(late.violations), 1)

    def test_an_overlap_of_a_holder_skewed_beyond_its_margin_is_a_violation_marked_so(self):
        profiles = {"a": HolderProfile("kubernetes", 4, 0.8, 0.5, skew=-3.0), "b": KUBE}
        report = self.check(journal("a", 10, 0, stop=7), journal("b", 20, 6, stop=9), profiles=profiles)
        self.assertEqual(len(report.violations), 1)
        self.assertEqual(report.violations[0]["cause"], "skew_beyond_margin")
        self.assertEqual(report.skew_beyond_margin, 1)
        within = {"a": HolderProfile("kubernetes", 4, 0.8, 0.5, skew=-0.5), "b": KUBE}
        report = self.check(journal("a", 10, 0, stop=7), journal("b", 20, 6, stop=9), profiles=within)
        self.assertNotIn("cause", report.violations[0])

    def test_only_sections_of_one_lock_are_compared(self):
        report = self.check(journal("a", 10, 0, stop=7), journal("b", 20, 6, stop=9, lock="ns/other"))
        self.assertEqual(report.violations, [])

    def test_a_line_cut_by_the_end_of_the_run_is_skipped(self):
        lines = journal("a", 10, 0, stop=5) + ['{"holder": "a", "ev']
        sections, _ = read_journals(lines)
        self.assertEqual(len(sections), 1)


class FencedWriteTest(unittest.TestCase):
    def test_tokens_that_never_go_down_in_seq_no_order_pass(self):
        _, writes = sections_of(journal("a", 10, 0, writes=[(1, "accepted", 0), (2, "accepted", 2)]),
                                journal("b", 20, 3, writes=[(3, "accepted", 3), (4, "refused", None)]),
                                journal("a", 10, 0, pid=99, writes=[(5, "refused", None), (6, "unknown", None)]))
        report = check_fencing(writes, {"ns/job": 20})
        self.assertEqual(report.violations, [])
        self.assertEqual(report.summary(), {"accepted": 3, "refused_stale": 2, "failed": 0, "unknown_outcome": 1,
                                            "stale_accepted": 0})

    def test_a_stale_write_accepted_is_caught(self):
        # b's token 20 was accepted at seq_no 3; a's token 10 after it at seq_no 5.
        _, writes = sections_of(journal("b", 20, 3, writes=[(3, "accepted", 3)]),
                                journal("a", 10, 0, writes=[(4, "accepted", 5)]))
        report = check_fencing(writes, {"ns/job": 20})
        self.assertEqual(report.stale_accepted, 1)
        self.assertIn("stale write accepted: a token 10 (seq_no 5) after b token 20 (seq_no 3)",
                      report.violations[0]["violation"])

    def test_the_order_is_the_shards_not_the_journals(self):
        # a's answer came late (its record is later), but the shard applied it first.
        _, writes = sections_of(journal("a", 10, 0, writes=[(9, "accepted", 1)]),
                                journal("b", 20, 3, writes=[(3, "accepted", 2)]))
        self.assertEqual(check_fencing(writes, {"ns/job": 20}).violations, [])

    def test_a_document_left_below_an_accepted_token_is_caught(self):
        _, writes = sections_of(journal("b", 20, 3, writes=[(3, "accepted", 3)]))
        self.assertEqual(len(check_fencing(writes, {"ns/job": 10}).violations), 1)
        self.assertEqual(len(check_fencing(writes, {}).violations), 1)


class ReportOrderTest(unittest.TestCase):
    SKEWED = {"lock": "ns/a", "verdict": "violation", "cause": "skew_beyond_margin"}
    OVERLAP = {"lock": "ns/b", "verdict": "violation"}
    STALE = {"lock": "ns/c", "violation": "stale write accepted"}

    def test_when_skew_overlaps_are_expected_the_others_come_first(self):
        found = [self.SKEWED, dict(self.SKEWED, lock="ns/d"), self.OVERLAP, self.STALE]
        self.assertEqual(failing_first(found, True), [self.OVERLAP, self.STALE, self.SKEWED,
                                                      dict(self.SKEWED, lock="ns/d")])

    def test_otherwise_every_violation_fails_the_run_and_keeps_its_place(self):
        found = [self.SKEWED, self.OVERLAP, self.STALE]
        self.assertEqual(failing_first(found, False), found)


if __name__ == "__main__":
    unittest.main()
