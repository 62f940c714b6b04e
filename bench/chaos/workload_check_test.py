"""The chaos checker's rules on the work under the locks, on hand-made journals: overlapping
critical sections, holders beyond a lock's shape (capacity, access, sets) and stale fenced
writes are caught, and what the design allows is not."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workload_check import (HolderProfile, Shape, check_fencing, check_sections, failing_first,  # noqa: E402
                            grants_by_shape, read_journals, set_grants_by_holder)

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


def direct(shape):
    return HolderProfile("direct", ttl=4, margin=0.8, grace=0.5, shape=shape)


def kube(shape):
    return HolderProfile("kubernetes", ttl=4, margin=0.8, grace=0.5, shape=shape)


SEM = Shape(["direct/sem"], capacity=3, shared=True)
READER = Shape(["direct/rw"], capacity=2, shared=True)
WRITER = Shape(["direct/rw"], capacity=2)
PAIR = Shape(["direct/x", "direct/y"])
ONE_Y = Shape(["direct/y"])


class LockShapeTest(unittest.TestCase):
    def check(self, profiles, *journals, pauses=None):
        sections, _ = sections_of(*journals)
        return check_sections(sections, profiles, pauses or {}, lambda s: None)

    def semaphore(self, *names):
        return {name: direct(SEM) for name in names}

    def test_a_semaphore_used_to_its_capacity_passes(self):
        # Three at once; a fourth starts once one has stopped; a restarted command of one grant counts once.
        report = self.check(self.semaphore("a", "b", "c", "d"),
                            journal("a", 10, 0, stop=5, lock="direct/sem"),
                            journal("b", 11, 1, stop=8, lock="direct/sem"),
                            journal("c", 12, 2, stop=3, lock="direct/sem", pid=1),
                            journal("c", 12, 3.5, stop=9, lock="direct/sem", pid=2),
                            journal("d", 13, 5.5, stop=9, lock="direct/sem"))
        self.assertEqual(report.violations, [])
        self.assertEqual(report.most_at_once, {"direct/sem": 3})

    def test_one_holder_too_many_on_a_semaphore_is_caught(self):
        report = self.check(self.semaphore("a", "b", "c", "d"),
                            journal("a", 10, 0, stop=5, lock="direct/sem"),
                            journal("b", 11, 1, stop=8, lock="direct/sem"),
                            journal("c", 12, 2, stop=9, lock="direct/sem"),
                            journal("d", 13, 4, stop=9, lock="direct/sem"))
        self.assertEqual(len(report.violations), 1)
        self.assertEqual(report.violations[0]["capacity"], 3)
        self.assertEqual(len(report.violations[0]["at_once"]), 4)
        self.assertEqual(report.violations[0]["overlap_seconds"], 1)
        self.assertEqual(report.most_at_once, {"direct/sem": 4})

    def test_a_holder_too_many_is_excused_when_an_earlier_one_was_paused_past_its_validity(self):
        journals = [journal("a", 10, 0, stop=5, lock="direct/sem"), journal("b", 11, 1, stop=8, lock="direct/sem"),
                    journal("c", 12, 2, stop=9, lock="direct/sem"), journal("d", 13, 4, stop=9, lock="direct/sem")]
        report = self.check(self.semaphore("a", "b", "c", "d"), *journals, pauses={"a": [(0.5, 4.8)]})
        self.assertEqual(report.violations, [])
        self.assertEqual(report.excused, 1)

    def test_readers_side_by_side_pass_and_a_writer_after_them_too(self):
        report = self.check({"r1": direct(READER), "r2": direct(READER), "w": direct(WRITER)},
                            journal("r1", 10, 0, stop=5, lock="direct/rw"),
                            journal("r2", 11, 1, stop=6, lock="direct/rw"),
                            journal("w", 12, 6.5, stop=9, lock="direct/rw"))
        self.assertEqual(report.violations, [])

    def test_a_shared_holder_beside_an_exclusive_one_is_caught(self):
        report = self.check({"r1": direct(READER), "w": direct(WRITER)},
                            journal("w", 10, 0, stop=5, lock="direct/rw"),
                            journal("r1", 11, 4, stop=6, lock="direct/rw"))
        self.assertEqual(len(report.violations), 1)
        self.assertIn("w token 10", report.violations[0]["earlier"])

    def test_a_holder_running_on_part_of_its_set_is_caught(self):
        report = self.check({"s": direct(PAIR)}, journal("s", 10, 0, stop=5, lock="direct/x"))
        self.assertEqual(len(report.violations), 1)
        self.assertIn("ran on part of its set: s token 10 claimed direct/x,direct/y",
                      report.violations[0]["violation"])
        self.assertEqual(self.check({"s": direct(PAIR)}, journal("s", 10, 0, stop=5, lock="direct/y,direct/x")
                                    ).violations, [])

    def test_a_set_counts_on_every_lock_of_it(self):
        report = self.check({"s": direct(PAIR), "y": direct(ONE_Y)},
                            journal("s", 10, 0, stop=5, lock="direct/x,direct/y"),
                            journal("y", 11, 4, stop=6, lock="direct/y"))
        self.assertEqual(len(report.violations), 1)
        self.assertEqual(report.violations[0]["lock"], "direct/y")

    def test_claimants_stating_other_capacities_are_caught(self):
        report = self.check({"a": direct(SEM), "b": direct(Shape(["direct/sem"], capacity=2, shared=True))},
                            journal("a", 10, 0, stop=5, lock="direct/sem"),
                            journal("b", 11, 6, stop=7, lock="direct/sem"))
        self.assertEqual([v["violation"] for v in report.violations], ["its claimants state capacities [2, 3]"])

    def test_grants_are_counted_by_shape(self):
        profiles = {"a": direct(SEM), "r": direct(READER), "w": direct(WRITER), "s": direct(PAIR), "k": KUBE,
                    "ks": kube(Shape(["ns/ksem"], 3, True)), "kr": kube(Shape(["ns/krw"], 3, True)),
                    "kw": kube(Shape(["ns/krw"], 3, False)), "kn": kube(Shape(["ns/kone"], 3, False))}
        sections, _ = sections_of(journal("a", 10, 0, stop=1, lock="direct/sem"),
                                  journal("a", 14, 2, stop=3, lock="direct/sem"),
                                  journal("r", 11, 0, stop=1, lock="direct/rw"),
                                  journal("w", 12, 2, stop=3, lock="direct/rw"),
                                  journal("s", 13, 0, stop=1, lock="direct/x,direct/y"),
                                  journal("k", 15, 0, stop=1),
                                  journal("ks", 16, 0, stop=1, lock="ns/ksem"),
                                  journal("kr", 17, 0, stop=1, lock="ns/krw"),
                                  journal("kr", 19, 2, stop=3, lock="ns/krw"))
        # A kind with claimants and no grant shows 0; kinds nobody claims are left out.
        self.assertEqual(grants_by_shape(sections, profiles), {
            "semaphore": 2, "read_write_shared": 1, "read_write_exclusive": 1, "set": 1,
            "kube_semaphore": 1, "kube_read_write_shared": 2, "kube_read_write_exclusive": 0})
        self.assertEqual(grants_by_shape(sections, {"k": KUBE}), {})

    def test_kubernetes_mode_holders_keep_to_their_shape(self):
        reader, writer = kube(Shape(["ns/krw"], 2, True)), kube(Shape(["ns/krw"], 2, False))
        report = self.check({"r1": reader, "r2": reader, "r3": reader, "w": writer},
                            journal("r1", 10, 0, stop=5, lock="ns/krw"), journal("r2", 11, 1, stop=5, lock="ns/krw"),
                            journal("r3", 12, 6, stop=8, lock="ns/krw"), journal("w", 13, 7, stop=9, lock="ns/krw"))
        self.assertEqual(len(report.violations), 1)
        self.assertIn("w token 13", report.violations[0]["later"])
        report = self.check({"r1": reader, "r2": reader, "r3": reader},
                            journal("r1", 10, 0, stop=5, lock="ns/krw"), journal("r2", 11, 1, stop=5, lock="ns/krw"),
                            journal("r3", 12, 2, stop=3, lock="ns/krw"))
        self.assertEqual([v["capacity"] for v in report.violations], [2])

    def test_kubernetes_mode_sets_count_on_each_of_their_locks(self):
        # As ESLEASE_LOCK names a pod's set: its locks as ns/lock ids, in the order claimed.
        profiles = {"s": kube(Shape(["ns/lock-0", "ns/kx"])), "t": kube(Shape(["ns/kx", "ns/lock-0"])),
                    "p": KUBE, "k": kube(Shape(["ns/kpool", "ns/ksem"], 3, True)),
                    "m": kube(Shape(["ns/ksem"], 3, True)), "n": kube(Shape(["ns/ksem"], 3, True))}
        passes = [journal("s", 10, 0, stop=2, lock="ns/lock-0,ns/kx"), journal("t", 11, 3, stop=4, lock="ns/kx,ns/lock-0"),
                  journal("p", 12, 5, stop=6, lock="ns/lock-0"), journal("k", 13, 0, stop=6, lock="ns/kpool,ns/ksem"),
                  journal("m", 14, 1, stop=6, lock="ns/ksem"), journal("n", 15, 2, stop=6, lock="ns/ksem")]
        report = self.check(profiles, *passes)
        self.assertEqual(report.violations, [])
        self.assertEqual(report.most_at_once, {"ns/ksem": 3, "ns/kpool": 1})
        report = self.check(profiles, *passes, journal("p", 16, 1, stop=2.5, lock="ns/lock-0"),
                            journal("t", 17, 5.5, stop=6, lock="ns/kx"),
                            journal("m", 18, 3, stop=4, lock="ns/ksem", pid=2))
        self.assertEqual(sorted(v["lock"] for v in report.violations), ["ns/ksem", "ns/kx", "ns/lock-0"])
        self.assertIn("ran on part of its set: t token 17 claimed ns/kx,ns/lock-0",
                      [v.get("violation") for v in report.violations if v["lock"] == "ns/kx"][0])
        self.assertEqual(len([v for v in report.violations if "earlier" in v or "at_once" in v]), 2,
                         "p beside s on lock-0, four grants on ksem")

    def test_set_grants_are_counted_by_holder(self):
        profiles = {"s": kube(Shape(["ns/a", "ns/b"])), "t": direct(PAIR), "u": kube(Shape(["ns/b", "ns/c"])),
                    "p": KUBE}
        sections, _ = sections_of(journal("s", 10, 0, stop=1, lock="ns/a,ns/b"),
                                  journal("s", 10, 1, stop=2, lock="ns/a,ns/b", pid=2),
                                  journal("s", 12, 3, stop=4, lock="ns/a,ns/b"),
                                  journal("t", 13, 0, stop=1, lock="direct/x,direct/y"), journal("p", 14, 0, stop=1))
        self.assertEqual(set_grants_by_holder(sections, profiles), {"s": 2, "t": 1, "u": 0})
        self.assertEqual(grants_by_shape(sections, profiles), {"kube_set": 2, "set": 1})


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
