"""The chaos benchmark's checks of what the controller publishes, on hand-made histories: each
rule is shown to catch the violation it names and to accept the hand-overs the design
allows. Validity is published by the namespace's session (bench/common/validity.py)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safety import check  # noqa: E402

T0 = "2026-01-01T00:00:00.000Z"
LEASE_SECONDS = 3


def at(seconds):
    return "2026-01-01T00:%02d:%06.3fZ" % divmod(seconds, 60)


def pod(name, uid, phase="Running", deleting=False):
    meta = {"name": name, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = T0
    return {"metadata": meta, "status": {"phase": phase}}


def lease(name, uid, holder=None, holder_uid=None, token=None, phase="Pending", acquired=None, lock="job",
          deleting=False, released=None, shape=None):
    """shape: (capacity, access, slot) of a lock of capacity above 1."""
    meta = {"name": name, "namespace": "ns", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = T0
    if released is not None:
        meta["annotations"] = {"eslease.io/released": str(released)}
    status = {"phase": phase}
    if token is not None:
        status.update({"fencingToken": str(token), "holder": {"podName": holder, "podUID": holder_uid},
                       "acquireTime": acquired})
    spec = {"lockName": lock, "leaseDurationSeconds": LEASE_SECONDS}
    if shape is not None:
        spec.update(capacity=shape[0], access=shape[1])
        if token is not None:
            status["slot"] = shape[2]
    return {"metadata": meta, "spec": spec, "status": status}


def session(renewed, revoked=None):
    meta = {"name": "eslease-session", "namespace": "ns"}
    if revoked:
        meta["annotations"] = {"eslease.io/revoked": revoked}
    return {"metadata": meta, "spec": {"holderIdentity": "controller-0", "renewTime": renewed}}


class History:
    def __init__(self):
        self.events = []

    def add(self, kind, obj, event_type="MODIFIED"):
        self.events.append((len(self.events) + 1, kind, event_type, obj))
        return self

    def renew(self, seconds, revoked=None):
        return self.add("session", session(at(seconds), revoked))

    def start(self):
        """Pods a and b run; a's claim holds token 10, renewed at second 0 (valid until 3);
        b's claim waits."""
        self.add("pod", pod("a", "ua"), "ADDED").add("pod", pod("b", "ub"), "ADDED")
        self.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0)), "ADDED")
        self.renew(0)
        self.add("lease", lease("lb", "lb-1"), "ADDED")
        return self

    def revoke_a(self, renewed=0):
        """The controller lists a's grant (in a session write at `renewed`), then marks it Pending."""
        self.renew(renewed, revoked="la=10")
        return self.add("lease", lease("la", "la-1", "a", "ua", 10, "Pending", at(0)))

    def grant_b(self, token=20, acquired=at(1)):
        return self.add("lease", lease("lb", "lb-1", "b", "ub", token, "Held", acquired))


class HandOverTest(unittest.TestCase):
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

    def test_a_held_status_past_its_session_validity_is_stale_not_a_holder(self):
        result = check(History().start().grant_b(acquired=at(3)).events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.handovers["after_validity"], 1)

    def test_revoked_holder_hands_over_only_after_its_published_validity(self):
        early = check(History().start().revoke_a().grant_b(acquired=at(2.999)).events)
        self.assertEqual(len(early.violations), 1)
        self.assertIn("before the published validity ended", early.violations[0]["violation"])
        on_time = check(History().start().revoke_a().grant_b(acquired=at(3)).events)
        self.assertEqual(on_time.violations, [])
        self.assertEqual(on_time.handovers["after_validity"], 1)
        self.assertEqual(on_time.min_validity_slack, 0)

    def test_the_latest_renewal_before_the_listing_counts(self):
        h = History().start().renew(2)  # valid until 5
        result = check(h.revoke_a(renewed=2.5).grant_b(acquired=at(4)).events)
        self.assertEqual(len(result.violations), 1)
        self.assertIn("valid until 2026-01-01T00:00:05.000Z", result.violations[0]["violation"])

    def test_a_renewal_written_with_the_listing_does_not_extend_the_grant(self):
        # The listing write itself carries renewTime 2: a keeps the validity of second 0.
        result = check(History().start().revoke_a(renewed=2).grant_b(acquired=at(3)).events)
        self.assertEqual(result.violations, [])

    def test_the_same_claim_granted_again_waits_out_its_published_validity(self):
        # a's grant is revoked and listed at second 0 (valid until 3), then granted to a again.
        for acquired, violations in ((at(2.5), 1), (at(3), 0)):
            h = History().start().revoke_a()
            h.add("lease", lease("la", "la-1", "a", "ua", 11, "Held", acquired))
            result = check(h.events)
            self.assertEqual(len(result.violations), violations, result.violations)
            self.assertEqual(result.handovers["same_holder_again"], 1)
        self.assertIn("before the published validity ended", check(
            History().start().revoke_a().add("lease", lease("la", "la-1", "a", "ua", 11, "Held", at(2.5))).events
        ).violations[0]["violation"])

    def test_a_release_by_its_holder_hands_over_at_once(self):
        h = History().start()
        h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), deleting=True, released=10))
        result = check(h.grant_b().events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.handovers["released"], 1)

    def test_a_lease_deleted_by_someone_else_is_a_revocation(self):
        def deleted_then_granted(acquired):
            h = History().start()
            h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), deleting=True))
            h.renew(0.5, revoked="la=10")
            h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), deleting=True), "DELETED")
            return check(h.grant_b(acquired=acquired).events)

        early = deleted_then_granted(at(1))
        self.assertEqual(len(early.violations), 1)
        self.assertIn("before the published validity ended", early.violations[0]["violation"])
        self.assertEqual(deleted_then_granted(at(3)).violations, [])

    def test_a_release_names_its_token(self):
        h = History().start()
        h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), deleting=True, released=9))
        result = check(h.grant_b().events)
        self.assertEqual(result.handovers["released"], 0)
        self.assertEqual(len(result.violations), 1)


class TokenTest(unittest.TestCase):
    def test_tokens_must_grow(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED")
        result = check(h.grant_b(token=5).events)
        self.assertEqual(len(result.violations), 1)
        self.assertIn("did not grow", result.violations[0]["violation"])

    def test_one_token_is_one_grant(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED")
        result = check(h.grant_b(token=10).events)
        self.assertIn("shown for two grants", result.violations[0]["violation"])

    def test_a_lease_created_again_under_its_name_may_show_its_predecessors_grant(self):
        h = History().start()
        h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0), deleting=True), "DELETED")
        h.add("lease", lease("la", "la-2", "a", "ua", 10, "Held", at(0)), "ADDED")
        self.assertEqual(check(h.events).violations, [])
        h.add("lease", lease("la", "la-2", "a", "ua-other", 10, "Held", at(0)))
        self.assertIn("shown for two grants", check(h.events).violations[0]["violation"])


class LateGrantTest(unittest.TestCase):
    """A replica that lagged writes the status of a grant older than the newest one."""

    def history(self, holder_uid):
        h = History().start().add("pod", pod("a", "ua"), "DELETED").grant_b(token=20, acquired=at(2))
        h.add("pod", pod("c", "uc"), "ADDED")
        return h.add("lease", lease("lb", "lb-1", "c", holder_uid, 15, "Held", at(1)))

    def test_an_older_grant_to_a_gone_pod_shown_late_is_no_new_grant(self):
        result = check(self.history("uc-old").events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.late_grants, 1)
        self.assertEqual(result.grants, 2)

    def test_an_older_grant_to_a_live_pod_shown_late_is_a_superseded_grant_shown_held(self):
        # c is shown valid until 3 (the session renewed at 0), past b's grant at 2.
        whats = [v["violation"] for v in check(self.history("uc").events).violations]
        self.assertTrue(whats and all("superseded grant shown Held again" in w for w in whats), whats)

    def test_a_lower_token_granted_later_did_not_grow(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED").grant_b(token=20, acquired=at(2))
        h.add("lease", lease("la", "la-1", "a", "ua2", 15, "Held", at(3)))
        self.assertIn("did not grow", check(h.events).violations[0]["violation"])


class SupersededGrantTest(unittest.TestCase):
    def test_a_listed_grant_shown_held_again_shows_no_new_validity(self):
        def history(renewed_after):
            h = History().start().revoke_a().grant_b(acquired=at(3))
            h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0)))
            return h.renew(renewed_after, revoked="la=10").events

        # Shown Held again while listed: its validity stays frozen at 3, past at the grant.
        self.assertEqual(check(history(2)).violations, [])

    def test_a_superseded_grant_revived_by_a_session_is_caught(self):
        h = History().start().revoke_a().grant_b(acquired=at(3))
        h.add("lease", lease("la", "la-1", "a", "ua", 10, "Held", at(0)))
        h.renew(4)  # drops the listing: a is shown valid until 7
        whats = [v["violation"] for v in check(h.events).violations]
        self.assertTrue(any("shown Held again" in w or "validity extended" in w for w in whats), whats)
        self.assertTrue(any("listing dropped" in w for w in whats), whats)


class SessionPromiseTest(unittest.TestCase):
    def test_a_session_renewal_that_extends_a_listed_grant_is_caught(self):
        h = History().start().renew(1, revoked="la=10")  # listed; a still shows Held
        h.renew(2)  # the next renewal drops the listing and extends a to 5
        whats = [v["violation"] for v in check(h.events).violations]
        self.assertIn("session: validity extended after the grant was listed (token 10)", whats)

    def test_a_listing_dropped_early_is_caught(self):
        h = History().start().revoke_a().renew(62.9)  # hand-over time 3: kept until 63
        self.assertEqual(len(check(h.events).violations), 1)
        self.assertEqual(check(History().start().revoke_a().renew(63).events).violations, [])


class LockShapeTest(unittest.TestCase):
    """A lock of capacity 2: Shared grants side by side, an Exclusive one alone."""

    def history(self, *grants):
        """grants: (pod, token, access, slot, acquired second), each pod's claim granted in turn."""
        h = History()
        for pod_name, token, access, slot, second in grants:
            h.add("pod", pod(pod_name, "u" + pod_name), "ADDED")
            h.add("lease", lease("l" + pod_name, "l%s-1" % pod_name, pod_name, "u" + pod_name, token, "Held",
                                 at(second), lock="pool", shape=(2, access, slot)), "ADDED")
            h.renew(second)
        return h

    def test_shared_grants_use_the_full_capacity(self):
        h = self.history(("a", 10, "Shared", 0, 0), ("b", 11, "Shared", 1, 0.5))
        h.add("pod", pod("a", "ua"), "DELETED")
        h.add("pod", pod("c", "uc"), "ADDED")
        h.add("lease", lease("lc", "lc-1", "c", "uc", 12, "Held", at(1), lock="pool", shape=(2, "Shared", 0)))
        result = check(h.events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.grants, 3)
        self.assertEqual(result.handovers["confirmed_dead"], 1)

    def test_one_holder_too_many_on_a_semaphore_is_caught(self):
        h = self.history(("a", 10, "Shared", 0, 0), ("b", 11, "Shared", 1, 0.5), ("c", 12, "Shared", 0, 1))
        whats = [v["violation"] for v in check(h.events).violations]
        self.assertEqual(len(whats), 1, whats)
        self.assertIn("more grants than capacity 2: two holders: token 12 to c", whats[0])
        self.assertIn("token 10 to a", whats[0])

    def test_a_slot_is_free_again_once_its_revoked_holder_s_validity_ended(self):
        h = self.history(("a", 10, "Shared", 0, 0), ("b", 11, "Shared", 1, 0))
        h.renew(0, revoked="la=10").add("lease", lease("la", "la-1", "a", "ua", 10, "Pending", at(0), lock="pool",
                                                       shape=(2, "Shared", 0)))
        for second, violations in ((2.5, 1), (3, 0)):
            events = list(h.events) + [(len(h.events) + 1, "pod", "ADDED", pod("c", "uc")),
                                       (len(h.events) + 2, "lease", "ADDED", lease(
                                           "lc", "lc-1", "c", "uc", 12, "Held", at(second), lock="pool",
                                           shape=(2, "Shared", 0)))]
            self.assertEqual(len(check(events).violations), violations)

    def test_a_shared_holder_beside_an_exclusive_one_is_caught(self):
        for grants in ((("a", 10, "Shared", 0, 0), ("w", 11, "Exclusive", 0, 1)),
                       (("w", 10, "Exclusive", 0, 0), ("a", 11, "Shared", 1, 1))):
            whats = [v["violation"] for v in check(self.history(*grants).events).violations]
            self.assertEqual(len(whats), 1, whats)
            self.assertIn("an Exclusive grant not alone", whats[0])

    def test_two_grants_on_one_slot_are_caught(self):
        whats = [v["violation"] for v in check(self.history(("a", 10, "Shared", 1, 0),
                                                            ("b", 11, "Shared", 1, 1)).events).violations]
        self.assertEqual(len(whats), 1, whats)
        self.assertIn("two grants on slot 1", whats[0])

    def test_grants_of_one_moment_shown_out_of_order_fit_side_by_side(self):
        h = self.history(("b", 11, "Shared", 1, 0.5), ("a", 10, "Shared", 0, 0))
        result = check(h.events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.late_grants, 1)
        third = self.history(("b", 11, "Shared", 1, 0.5), ("c", 12, "Shared", 0, 0.7), ("a", 10, "Shared", 0, 0))
        self.assertIn("superseded grant shown Held again", check(third.events).violations[0]["violation"])


def set_lease(name, uid, locks, holder=None, holder_uid=None, token=None, phase="Pending", acquired=None, shape=None):
    """A claim on the lock set `locks`; shape: (capacity, access, its slot on the first lock)."""
    obj = lease(name, uid, holder, holder_uid, token, phase, acquired, shape=shape)
    del obj["spec"]["lockName"]
    obj["spec"]["lockNames"] = locks
    return obj


class LockSetTest(unittest.TestCase):
    def start(self):
        """Pods a and b run; a's set claim on job and other holds token 10 (valid until 3)."""
        h = History().add("pod", pod("a", "ua"), "ADDED").add("pod", pod("b", "ub"), "ADDED")
        h.add("lease", set_lease("la", "la-1", ["job", "other"], "a", "ua", 10, "Held", at(0)), "ADDED")
        return h.renew(0)

    def test_a_grant_on_any_lock_of_a_live_set_is_two_holders(self):
        for lock in ("job", "other"):
            h = self.start().add("lease", lease("lb", "lb-1", "b", "ub", 20, "Held", at(1), lock=lock), "ADDED")
            result = check(h.events)
            self.assertEqual(len(result.violations), 1, lock)
            self.assertIn("two holders", result.violations[0]["violation"])
            self.assertEqual(result.violations[0]["lock"], "ns/" + lock)

    def test_a_dead_holders_set_handed_over_to_sets_overlapping_it_is_safe(self):
        h = self.start().add("pod", pod("a", "ua"), "DELETED")
        h.add("lease", set_lease("lb", "lb-1", ["other", "third"], "b", "ub", 20, "Held", at(1)), "ADDED")
        result = check(h.events)
        self.assertEqual(result.violations, [])
        self.assertEqual(result.set_grants, 2)
        self.assertEqual(result.grants, 4, "each set's grant counts on each of its locks")

    def shared_set_beside(self, *singles):
        """A Shared set on pool and sem of capacity 2, shown on slot 0 (its slot on pool), granted
        after Shared single claims on sem: (pod, token, slot) each."""
        h = History()
        for name, token, slot in singles:
            h.add("pod", pod(name, "u" + name), "ADDED")
            h.add("lease", lease("l" + name, "l%s-1" % name, name, "u" + name, token, "Held", at(0), lock="sem",
                                 shape=(2, "Shared", slot)), "ADDED")
        h.renew(0).add("pod", pod("s", "us"), "ADDED")
        return h.add("lease", set_lease("ls", "ls-1", ["pool", "sem"], "s", "us", 20, "Held", at(1),
                                        shape=(2, "Shared", 0)), "ADDED")

    def test_a_shared_sets_slot_on_its_other_locks_is_not_its_status_slot(self):
        result = check(self.shared_set_beside(("a", 10, 0)).events)
        self.assertEqual(result.violations, [], "the set holds slot 1 of sem: status.slot is its slot on pool")
        self.assertEqual(result.set_grants, 1)

    def test_a_shared_set_beyond_a_semaphores_capacity_is_caught(self):
        whats = [v["violation"] for v in check(self.shared_set_beside(("a", 10, 0), ("b", 11, 1)).events).violations]
        self.assertEqual(len(whats), 1, whats)
        self.assertIn("more grants than capacity 2: two holders: token 20 to s", whats[0])


class ReplayTest(unittest.TestCase):
    def test_events_are_replayed_in_resource_version_order(self):
        h = History().start().add("pod", pod("a", "ua"), "DELETED").grant_b()
        self.assertEqual(check(list(reversed(h.events))).violations, [])

    def test_election_fail_over_within_one_lease(self):
        h = History()
        h.add("pod", pod("a", "ua"), "ADDED").add("pod", pod("b", "ub"), "ADDED")
        h.add("lease", lease("leader", "l-1", "a", "ua", 10, "Held", at(0)), "ADDED")
        h.renew(0)
        h.add("lease", lease("leader", "l-1", "b", "ub", 20, "Held", at(1)))
        self.assertEqual(len(check(h.events).violations), 1)
        h.events.insert(4, (4.5, "pod", "DELETED", pod("a", "ua")))
        self.assertEqual(check(h.events).violations, [])


if __name__ == "__main__":
    unittest.main()
