"""The chaos benchmark's safety check on hand-made histories: each rule is shown to catch the
violation it names and to accept the hand-overs the design allows."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safety import check  # noqa: E402

T0 = "2026-01-01T00:00:00.000Z"


def at(seconds):
    return "2026-01-01T00:00:%06.3fZ" % seconds


def pod(name, uid, phase="Running", deleting=False):
    meta = {"name": name, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = T0
    return {"metadata": meta, "status": {"phase": phase}}


def lease(name, uid, holder=None, holder_uid=None, token=None, phase="Pending", acquired=None, expires=None,
          lock="job", deleting=False):
    meta = {"name": name, "namespace": "ns", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = T0
    status = {"phase": phase}
    if token is not None:
        status.update({"fencingToken": str(token), "holder": {"podName": holder, "podUID": holder_uid},
                       "acquireTime": acquired, "expireTime": expires})
    return {"metadata": meta, "spec": {"lockName": lock}, "status": status}


class History:
    def __init__(self):
        self.events = []

    def add(self, kind, obj, event_type="MODIFIED"):
        self.events.append((len(self.events) + 1, kind, event_type, obj))
        return self

    def start(self):
        """Pods a and b run; a's claim holds token 10 until second 3; b's claim waits."""
        self.add("pod", pod("a", "ua"), "ADDED").add("pod", pod("b", "ub"), "ADDED")
        self.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), at(3)), "ADDED")
        self.add("lease", lease("lb", "lb-1"), "ADDED")
        return self

    def grant_b(self, token=20, acquired=at(1)):
        return self.add("lease", lease("lb", "lb-1", "b", "ub", token, "Held", acquired, at(9)))


class SafetyCheckTest(unittest.TestCase):
    def test_hand_over_after_confirmed_death_is_safe(self):
        for death in (lambda h: h.add("pod", pod("a", "ua"), "DELETED"),
                      lambda h: h.add("pod", pod("a", "ua2"), "ADDED"),
                      lambda h: h.add("pod", pod("a", "ua", phase="Failed"))):
            h = History().start()
            death(h)
            result = check(h.grant_b().events)
            self.assertEqual(result.violations, [])
            self.assertEqual(result.handovers["confirmed_dead"], 1)

    def test_terminating_pod_still_holds(self):
        h = History().start().add("pod", pod("a", "ua", deleting=True))
        result = check(h.grant_b().events)
        self.assertEqual(len(result.violations), 1)
        self.assertIn("two holders", result.violations[0]["violation"])

    def test_a_held_status_past_its_expiry_is_stale_not_a_holder(self):
        h = History().start()
        result = check(h.grant_b(acquired=at(3)).events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.handovers["after_expiry"], 1)

    def test_revoked_holder_hands_over_only_after_its_published_expiry(self):
        revoked = lease("la", "la-1", "a", "ua", 10, "Pending", at(0), at(3))
        early = check(History().start().add("lease", revoked).grant_b(acquired=at(2.999)).events)
        self.assertEqual(len(early.violations), 1)
        self.assertIn("before the published expiry", early.violations[0]["violation"])
        on_time = check(History().start().add("lease", revoked).grant_b(acquired=at(3)).events)
        self.assertEqual(on_time.violations, [])
        self.assertEqual(on_time.handovers["after_expiry"], 1)

    def test_the_latest_published_expiry_counts(self):
        h = History().start()
        h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), at(5)))  # a renewal
        h.add("lease", lease("la", "la-1", "a", "ua", 10, "Pending", at(0), at(5)))
        result = check(h.grant_b(acquired=at(4)).events)
        self.assertEqual(len(result.violations), 1)

    def test_a_deleted_claim_has_let_go(self):
        h = History().start().add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), at(3), deleting=True))
        result = check(h.grant_b().events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.handovers["released"], 1)

    def test_tokens_must_grow(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED")
        result = check(h.grant_b(token=5).events)
        self.assertEqual(len(result.violations), 1)
        self.assertIn("did not grow", result.violations[0]["violation"])

    def test_one_token_is_one_grant(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED")
        result = check(h.grant_b(token=10).events)
        self.assertIn("shown for two grants", result.violations[0]["violation"])

    def test_a_superseded_grant_must_not_be_shown_held_again(self):
        def history(shown_until):
            h = History().start()
            h.add("lease", lease("la", "la-1", "a", "ua", 10, "Pending", at(0), at(3)))
            h.grant_b(acquired=at(3))
            return h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), shown_until)).events

        result = check(history(at(6)))
        self.assertEqual(len(result.violations), 1)
        self.assertIn("shown Held again", result.violations[0]["violation"])
        # Shown with an expiry already past at the successor's grant: no holder acts on it.
        self.assertEqual(check(history(at(3))).violations, [])

    def test_events_are_replayed_in_resource_version_order(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED").grant_b()
        shuffled = list(reversed(h.events))
        self.assertEqual(check(shuffled).violations, [])

    def test_election_fail_over_within_one_lease(self):
        h = History()
        h.add("pod", pod("a", "ua"), "ADDED").add("pod", pod("b", "ub"), "ADDED")
        h.add("lease", lease("leader", "l-1", "a", "ua", 10, "Held", at(0), at(3)), "ADDED")
        h.add("lease", lease("leader", "l-1", "b", "ub", 20, "Held", at(1), at(4)))
        self.assertEqual(len(check(h.events).violations), 1)
        h.events.insert(3, (3.5, "pod", "DELETED", pod("a", "ua")))
        self.assertEqual(check(h.events).violations, [])


if __name__ == "__main__":
    unittest.main()
