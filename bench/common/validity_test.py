"""The published-validity rule on hand-made histories: each clause of the rule is shown to
decide what a holder is shown, for a controller that publishes through Lease status and for
one that publishes through the namespace's session."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validity import SESSION_RULE, STATUS_RULE, PublishedValidity, parse_time, revoked_grants  # noqa: E402


def at(seconds):
    return "2026-01-01T00:%02d:%09.6fZ" % divmod(seconds, 60)


def lease(name, token=None, phase="Held", ns="ns", expires=None, duration=30):
    status = {"phase": phase}
    if token is not None:
        status["fencingToken"] = str(token)
    if expires is not None:
        status["expireTime"] = expires
    spec = {"lockName": "job"}
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec, "status": status}


def session(renewed, revoked=None, ns="ns"):
    meta = {"name": "eslease-session", "namespace": ns}
    if revoked is not None:
        meta["annotations"] = {"eslease.io/revoked": revoked}
    return {"metadata": meta, "spec": {"holderIdentity": "controller-0", "renewTime": renewed}}


class ParsingTest(unittest.TestCase):
    def test_times_with_any_precision(self):
        self.assertEqual(parse_time("2026-01-01T00:00:01Z") - parse_time("2026-01-01T00:00:00Z"), 1)
        self.assertAlmostEqual(parse_time("2026-01-01T00:00:00.123456789Z") - parse_time("2026-01-01T00:00:00Z"),
                               0.123456, places=6)
        self.assertAlmostEqual(parse_time("2026-01-01T00:00:00.5Z") - parse_time("2026-01-01T00:00:00Z"), 0.5)
        self.assertIsNone(parse_time(None))

    def test_revoked_listing(self):
        self.assertEqual(revoked_grants(session(at(0), " a=10, b=20 ,c=x,=5,d")), {("a", 10), ("b", 20)})
        self.assertEqual(revoked_grants(session(at(0))), set())


class StatusRuleTest(unittest.TestCase):
    def test_expire_time_of_the_version_shown_held(self):
        v = PublishedValidity()
        v.apply_lease("ADDED", lease("a", 10, expires=at(30)))
        self.assertEqual(v.shown("ns", "a"), (10, parse_time(at(30)), STATUS_RULE))
        v.apply_lease("MODIFIED", lease("a", 10, expires=at(40)))
        self.assertEqual(v.published_until("ns", "a", 10), (parse_time(at(40)), STATUS_RULE))

    def test_a_revoked_grant_keeps_the_last_expiry_it_was_shown(self):
        v = PublishedValidity()
        v.apply_lease("ADDED", lease("a", 10, expires=at(30)))
        v.apply_lease("MODIFIED", lease("a", 10, phase="Pending", expires=at(50)))
        self.assertIsNone(v.shown("ns", "a"))
        self.assertEqual(v.published_until("ns", "a", 10)[0], parse_time(at(30)))

    def test_status_expiry_wins_over_a_session(self):
        v = PublishedValidity()
        v.apply_session("ADDED", session(at(100)))
        v.apply_lease("ADDED", lease("a", 10, expires=at(30)))
        self.assertEqual(v.shown("ns", "a")[1:], (parse_time(at(30)), STATUS_RULE))


class SessionRuleTest(unittest.TestCase):
    def setUp(self):
        self.v = PublishedValidity()
        self.v.apply_session("ADDED", session(at(0)))
        self.v.apply_lease("ADDED", lease("a", 10))

    def until(self, name="a", token=10):
        return self.v.published_until("ns", name, token)[0]

    def test_renew_time_plus_the_lease_duration(self):
        self.assertEqual(self.v.shown("ns", "a"), (10, parse_time(at(30)), SESSION_RULE))
        self.v.apply_session("MODIFIED", session(at(10)))
        self.assertEqual(self.v.shown("ns", "a")[1], parse_time(at(40)))
        self.assertEqual(self.until(), parse_time(at(40)))

    def test_each_lease_has_its_own_duration(self):
        self.v.apply_lease("ADDED", lease("short", 11, duration=15))
        self.assertEqual(self.v.shown("ns", "short")[1], parse_time(at(15)))

    def test_a_listed_grant_keeps_the_latest_version_that_did_not_list_it(self):
        self.v.apply_session("MODIFIED", session(at(10)))
        self.v.apply_session("MODIFIED", session(at(20), revoked="a=10"))
        self.v.apply_session("MODIFIED", session(at(30), revoked="a=10"))
        self.assertTrue(self.v.listed("ns", "a", 10))
        self.assertEqual(self.v.shown("ns", "a")[1], parse_time(at(40)))
        self.assertEqual(self.until(), parse_time(at(40)))

    def test_listing_another_grant_changes_nothing(self):
        self.v.apply_lease("ADDED", lease("b", 12))
        self.v.apply_session("MODIFIED", session(at(10), revoked="a=9,b=12"))
        self.assertFalse(self.v.listed("ns", "a", 10))
        self.assertEqual(self.until("a", 10), parse_time(at(40)))
        self.assertEqual(self.until("b", 12), parse_time(at(30)))

    def test_a_session_renews_only_its_own_namespace(self):
        self.v.apply_session("ADDED", session(at(10), ns="other"))
        self.assertEqual(self.until(), parse_time(at(30)))

    def test_valid_only_while_the_lease_shows_held_with_the_token(self):
        self.v.apply_lease("MODIFIED", lease("a", 10, phase="Pending"))
        self.v.apply_session("MODIFIED", session(at(10)))
        self.assertIsNone(self.v.shown("ns", "a"))
        self.assertEqual(self.until(), parse_time(at(30)))
        self.v.apply_lease("MODIFIED", lease("a", 20))  # a new grant to the same claim
        self.assertEqual(self.v.shown("ns", "a")[:2], (20, parse_time(at(40))))
        self.assertEqual(self.until(), parse_time(at(30)))

    def test_a_deleted_lease_or_session(self):
        self.v.apply_session("DELETED", session(at(10)))
        self.assertEqual(self.v.shown("ns", "a")[1], parse_time(at(30)))
        self.v.apply_lease("DELETED", lease("a", 10))
        self.assertIsNone(self.v.shown("ns", "a"))
        self.assertEqual(list(self.v.held()), [])
        self.assertEqual(self.until(), parse_time(at(30)))

    def test_nothing_published_before_the_first_session(self):
        v = PublishedValidity()
        v.apply_lease("ADDED", lease("a", 10))
        self.assertEqual(v.shown("ns", "a"), (10, None, SESSION_RULE))
        self.assertEqual(v.published_until("ns", "a", 10), (None, None))
        v.apply_session("ADDED", session(at(5)))
        self.assertEqual(v.published_until("ns", "a", 10), (parse_time(at(35)), SESSION_RULE))

    def test_held_lists_every_grant_shown(self):
        self.v.apply_lease("ADDED", lease("b", 12, phase="Pending"))
        self.v.apply_lease("ADDED", lease("c", 13, ns="other"))
        self.assertEqual(sorted(g[:3] for g in self.v.held()), [("ns", "a", 10), ("other", "c", 13)])


class SessionPromisesTest(unittest.TestCase):
    """A listing freezes the grant's validity and stays until its hand-over time plus a
    minute; sessions that break either promise are caught."""

    def setUp(self):
        self.v = PublishedValidity()
        self.v.apply_session("ADDED", session(at(0)))
        self.v.apply_lease("ADDED", lease("a", 10))  # valid until 30
        # Listed by a write that also renews: a keeps the validity of the version before (30),
        # its hand-over time.
        self.v.apply_session("MODIFIED", session(at(10), revoked="a=10"))

    def test_a_listing_kept_while_renewals_go_on_is_fine(self):
        self.v.apply_session("MODIFIED", session(at(20), revoked="a=10"))
        self.v.apply_lease("MODIFIED", lease("a", 10, phase="Pending"))
        self.v.apply_session("MODIFIED", session(at(100), revoked="a=10"))
        self.v.apply_session("MODIFIED", session(at(91)))  # 61 s past the hand-over time
        self.assertEqual(self.v.anomalies, [])
        self.assertEqual(self.v.published_until("ns", "a", 10)[0], parse_time(at(30)))

    def test_a_renewal_that_extends_a_listed_grant_is_caught(self):
        self.v.apply_session("MODIFIED", session(at(20)))  # drops the listing: a is shown valid until 50
        whats = [a["what"] for a in self.v.anomalies]
        self.assertIn("validity extended after the grant was listed", whats)
        self.assertTrue(any(w.startswith("listing dropped") for w in whats))

    def test_a_listing_dropped_early_is_caught_even_once_the_lease_moved_on(self):
        self.v.apply_lease("MODIFIED", lease("a", 10, phase="Pending"))
        self.v.apply_session("MODIFIED", session(at(89)))  # 59 s past the hand-over time
        self.assertEqual(len(self.v.anomalies), 1)
        self.assertEqual(self.v.anomalies[0]["grant"], ("ns", "a", 10))
        self.assertEqual(self.v.anomalies[0]["handover"], parse_time(at(30)))

    def test_when_a_drop_was_written_counts_not_its_stale_renew_time(self):
        # Nothing held, no renewals: a later version drops the listing with an old renewTime.
        self.v.apply_lease("MODIFIED", lease("a", 10, phase="Pending"))
        self.v.apply_session("MODIFIED", session(at(10)), seen=parse_time(at(91)))
        self.assertEqual(self.v.anomalies, [])
        early = PublishedValidity()
        early.apply_session("ADDED", session(at(0)))
        early.apply_lease("ADDED", lease("a", 10))
        early.apply_session("MODIFIED", session(at(10), revoked="a=10"))
        early.apply_lease("MODIFIED", lease("a", 10, phase="Pending"))
        early.apply_session("MODIFIED", session(at(95)), seen=parse_time(at(89)))
        self.assertEqual(len(early.anomalies), 1, "seen before the hand-over time plus 60 s")

    def test_a_grant_listed_before_it_was_ever_shown_held(self):
        # The listing comes before the status write that would have shown it Held: its
        # hand-over time still uses its Lease's duration.
        v = PublishedValidity()
        v.apply_session("ADDED", session(at(0)))
        v.apply_lease("ADDED", lease("b", phase="Pending", duration=5))
        v.apply_session("MODIFIED", session(at(2), revoked="b=11"))
        v.apply_session("MODIFIED", session(at(66)))  # 61 s past 0 + 5
        self.assertEqual(v.anomalies, [])

    def test_a_session_deleted_and_created_again_starts_afresh(self):
        self.v.apply_lease("DELETED", lease("a", 10))
        self.v.apply_session("DELETED", session(at(10), revoked="a=10"))
        self.v.apply_session("ADDED", session(at(15)))
        self.assertEqual(self.v.anomalies, [])

    def test_a_lease_shown_held_again_is_no_session_anomaly(self):
        # A stale status write shows a listed grant Held again: the chaos checker judges that
        # (with the holder pod's liveness); the sessions kept their promises.
        v = PublishedValidity()
        v.apply_session("ADDED", session(at(0)))
        v.apply_lease("ADDED", lease("a", 10))  # valid until 30
        v.apply_lease("MODIFIED", lease("a", 20))
        v.apply_session("MODIFIED", session(at(10)))
        v.apply_session("MODIFIED", session(at(20), revoked="a=10"))
        v.apply_lease("MODIFIED", lease("a", 10))  # shown again: the rule reads 40 now
        self.assertEqual(v.published_until("ns", "a", 10)[0], parse_time(at(40)))
        self.assertEqual(v.anomalies, [])

    def test_a_new_session_that_revives_a_listed_grant_is_caught(self):
        self.v.apply_session("DELETED", session(at(10), revoked="a=10"))
        self.v.apply_session("ADDED", session(at(15)))  # a still shows Held with token 10
        self.assertEqual([a["what"] for a in self.v.anomalies], ["validity extended after the grant was listed"])


if __name__ == "__main__":
    unittest.main()
