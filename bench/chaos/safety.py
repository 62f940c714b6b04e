"""The chaos checker's rules on what the controller publishes: replays every Pod, Lease and
namespace-session change of a run in resourceVersion order (the API server's one global
order) and finds each moment a lock could have had two holders.

The validity published to a holder is the design's (bench/common/validity.py): the grant
(Lease L, token T) is valid until renewTime + L's leaseDurationSeconds of the latest version
of the namespace's session that does not list L=T, and only while L shows Held with T.

A grant is a (lock, fencing token) first shown Held. A lock of capacity N (its Leases'
`spec.capacity`, default 1) has up to N grants at once: Shared ones (`spec.access`) side by
side, each on its own slot (`status.slot`), an Exclusive one alone. When a new grant of a lock
appears, each earlier grant of the lock still counted is either over at that point of the
history or still holds, and those still holding must leave room for the new one (for a
capacity-1 lock: the previous grant must be over). An earlier grant is over when:
- its pod is confirmed dead (object gone, replaced by a new UID, or phase Failed/Succeeded),
- or its holder let go: its Lease carried `eslease.io/released: <its token>` (the eslease
  tool's release) before it went,
- or else (presumed dead, revoked, or its Lease deleted by someone else) the new grant's
  acquireTime is no earlier than the latest validity ever published to the old holder, and
  the old Lease no longer shows the old grant Held with a validity beyond that moment.
Tokens of one lock must grow with every grant (by acquireTime: an older grant first shown
after a newer one is a late status write, judged as the next rule judges it), one token
belongs to one grant, and a grant that has been superseded must never again be shown Held,
to a pod that lives, with a validity past its successor's acquireTime (on a lock of capacity
above 1: unless there is room for it again beside the grants still holding). The sessions
must keep their own promises: a listed grant is never published a longer validity, and a
listing stays until its hand-over time plus a minute.

Pure: no I/O, so the check itself is tested on hand-made histories.
"""

import json
import os
import sys
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from validity import PublishedValidity, parse_time  # noqa: E402

TERMINAL = ("Failed", "Succeeded")
RELEASED_ANNOTATION = "eslease.io/released"


class Grant:
    def __init__(self, lock, ns, token, lease, lease_uid, pod, uid, acquired, rv, shape=(1, False, None)):
        self.lock = lock
        self.ns = ns
        self.token = token
        self.lease = lease
        self.lease_uid = lease_uid
        self.pod = pod
        self.uid = uid
        self.acquired = acquired
        self.rv = rv
        # What its Lease claimed: capacity, Shared access, and the slot it was granted.
        self.capacity, self.shared, self.slot = shape

    def describe(self):
        return "token %d to %s (Lease %s)" % (self.token, self.pod, self.lease)


def _shape(lease, lock):
    """(capacity, Shared, slot) of a Lease's claim and its grant on `lock` (an id, ns/name).
    status.slot is the grant's slot on the claim's first lock: on a set's other locks a
    Shared grant may hold another slot, unknown here (None)."""
    spec = lease.get("spec") or {}
    first = (spec.get("lockNames") or [spec.get("lockName")])[0]
    slot = (lease.get("status") or {}).get("slot") if lock.split("/", 1)[1] == first else None
    return int(spec.get("capacity") or 1), spec.get("access") == "Shared", slot


class SafetyCheck:
    """Feed `apply(rv, kind, type, obj)` (kind "pod", "lease" or "session") in resourceVersion
    order; read `violations`, `grants` (count) and `handovers` (how each previous grant had
    ended)."""

    def __init__(self):
        self.validity = PublishedValidity()
        self.pods = {}  # name -> pod object as of the current point in the history
        self.leases = {}  # name -> Lease object
        self.released = set()  # (Lease name, token) its holder said it let go of
        self.by_lock = {}  # lock -> [Grant] in grant order
        self.active = {}  # lock -> [Grant] not known to be over: the grants that may hold it now
        self.violations = []
        self.grants = 0  # by lock: a set's grant counts once on each of its locks
        self.set_grants = 0  # grants of lock sets, each once
        self.handovers = {"confirmed_dead": 0, "released": 0, "after_validity": 0, "same_holder_again": 0}
        self.takeovers = {}  # status.lastTakeover.reason -> count
        self.late_grants = 0  # grants first shown after a newer one of their lock
        # The closest an after-validity hand-over came to the old holder's published validity.
        self.min_validity_slack = None
        self._takeovers_seen = set()
        self._anomalies_seen = 0

    # --- the world as of the current resourceVersion -----------------------------------
    def apply(self, rv, kind, event_type, obj, seen=None):
        """One event; `seen`, when known, is when the watcher got it."""
        if kind == "session":
            self.validity.apply_session(event_type, obj, seen)
            self._session_promises(rv)
            return
        name = obj["metadata"]["name"]
        table = self.pods if kind == "pod" else self.leases
        before = table.get(name)
        if kind == "lease":
            self._note_release(obj)
            self.validity.apply_lease(event_type, obj)
            self._session_promises(rv)
        if event_type == "DELETED":
            table.pop(name, None)
            return
        table[name] = obj
        if kind == "lease":
            self._lease_changed(rv, before, obj)

    def _note_release(self, lease):
        token = ((lease["metadata"].get("annotations") or {}).get(RELEASED_ANNOTATION) or "").strip()
        if token.isdigit():
            self.released.add((lease["metadata"]["name"], int(token)))

    def _pod_dead(self, grant):
        pod = self.pods.get(grant.pod)
        return (pod is None or pod["metadata"].get("uid") != grant.uid
                or pod.get("status", {}).get("phase") in TERMINAL)

    def _let_go(self, grant):
        return (grant.lease, grant.token) in self.released

    def _shown_until(self, grant):
        """The validity the grant's Lease shows it now (None: none published yet), or False
        when the Lease does not show this grant Held."""
        shown = self.validity.shown(grant.ns, grant.lease)
        if shown is None or shown[0] != grant.token:
            return False
        return shown[1]

    # --- Lease changes -----------------------------------------------------------------
    def _lease_changed(self, rv, before, lease):
        """A Lease shown Held holds each lock it names: a set's grant is checked on every one of
        its locks, so a set shown Held while any of its locks has another holder is found."""
        status = lease.get("status") or {}
        if not status.get("fencingToken"):
            return
        ns = lease["metadata"].get("namespace", "")
        spec = lease.get("spec") or {}
        for name in spec.get("lockNames") or [spec.get("lockName")]:
            self._shown_on(rv, before, lease, "%s/%s" % (ns, name))
        if spec.get("lockNames") and status.get("phase") == "Held" and \
                ((before or {}).get("status") or {}).get("fencingToken") != status.get("fencingToken"):
            self.set_grants += 1

    def _shown_on(self, rv, before, lease, lock):
        status = lease["status"]
        token_text = status["fencingToken"]
        name = lease["metadata"]["name"]
        ns = lease["metadata"].get("namespace", "")
        token = int(token_text)
        holder = status.get("holder") or {}
        grants = self.by_lock.setdefault(lock, [])
        grant = next((g for g in grants if g.token == token), None)
        # A grant is its token, Lease name and holder pod, as the session names it: a Lease
        # deleted and created again under its name may be shown its predecessor's grant.
        if grant is not None and (grant.lease != name or grant.uid != holder.get("podUID")):
            self._violate(rv, lock, "token %d shown for two grants: %s and %s/%s"
                          % (token, grant.describe(), holder.get("podName"), name))
            return
        if status.get("phase") != "Held":
            return
        if grant is None:
            grant = Grant(lock, ns, token, name, lease["metadata"].get("uid"), holder.get("podName"),
                          holder.get("podUID"), parse_time(status.get("acquireTime")), rv, _shape(lease, lock))
            newest = grants[-1] if grants else None
            if newest is not None and grant.token < newest.token and None not in (grant.acquired, newest.acquired) \
                    and grant.acquired < newest.acquired:
                # An older grant shown for the first time only now (a stale replica's status
                # write, or one of several grants of one moment written last): judged as a
                # superseded grant shown Held, not as a new one.
                self.late_grants += 1
                grants.insert(sum(1 for g in grants if g.token < grant.token), grant)
                self._superseded_shown(rv, lock, grant, newest)
                self.grants += grant in self.active.get(lock, ())  # a grant of its own beside the others
                return
            self._new_grant(rv, lock, grants, grant, status)
            return
        before_status = (before or {}).get("status") or {}
        was_held = before_status.get("phase") == "Held" and before_status.get("fencingToken") == token_text
        if not was_held and grant not in self.active.get(lock, ()):
            self._superseded_shown(rv, lock, grant, grants[-1])

    def _superseded_shown(self, rv, lock, grant, newest):
        """A grant no longer counted as holding its lock shown Held: harmless once its pod is
        gone or it let go, or while the validity it shows ended before the newest was granted;
        on a lock of capacity above 1 also when there is room for it beside the grants that
        still hold (it is counted again)."""
        if self._pod_dead(grant) or self._let_go(grant):
            return
        shown_until = self._shown_until(grant)
        if shown_until is not None and newest.acquired is not None and shown_until <= newest.acquired:
            return
        if grant.capacity > 1:
            holding = [g for g in self.active.get(lock, [])
                       if g is newest or self._still_holds(g, newest) is not None]
            if not self._conflicts(grant, holding):
                self.active[lock] = sorted(self.active[lock] + [grant], key=lambda g: g.token)
                return
        self._violate(rv, lock, "superseded grant shown Held again until %s: %s after %s"
                      % (_stamp(shown_until), grant.describe(), newest.describe()))

    def _new_grant(self, rv, lock, grants, grant, status):
        self.grants += 1
        takeover = status.get("lastTakeover") or {}
        if takeover.get("reason") and (grant.lease_uid, takeover.get("time")) not in self._takeovers_seen:
            self._takeovers_seen.add((grant.lease_uid, takeover.get("time")))
            self.takeovers[takeover["reason"]] = self.takeovers.get(takeover["reason"], 0) + 1
        previous = grants[-1] if grants else None
        grants.append(grant)
        if previous is not None and grant.token <= previous.token:
            self._violate(rv, lock, "fencing token did not grow: %s after %s"
                          % (grant.describe(), previous.describe()))
        holding = {}  # earlier grant -> why it still holds
        for earlier in self.active.get(lock, []):
            why = self._still_holds(earlier, grant)
            if why is None:
                self._ended(earlier, grant)
            else:
                holding[earlier] = why
        conflicts = self._conflicts(grant, list(holding))
        for what, earlier in conflicts:
            self._violate(rv, lock, what + holding[earlier])
            self._ended(earlier, grant)
        ended = {earlier for _, earlier in conflicts}
        self.active[lock] = [g for g in holding if g not in ended] + [grant]

    def _conflicts(self, grant, holding):
        """[(what, earlier grant)]: the grants still holding that leave no room for `grant`,
        each with what is wrong (empty text on a lock of capacity 1: two holders at all)."""
        if grant.capacity == 1:
            return [("", g) for g in holding]
        found = [("an Exclusive grant not alone: ", g) for g in holding if not (g.shared and grant.shared)]
        shared = [g for g in holding if g.shared and grant.shared]
        found += [("more grants than capacity %d: " % grant.capacity, g)
                  for g in shared[:max(0, len(shared) + 1 - grant.capacity)]]
        found += [("two grants on slot %s: " % grant.slot, g) for g in shared
                  if grant.slot is not None and g.slot == grant.slot and all(g is not f for _, f in found)]
        found += [("capacities %d and %d on one lock: " % (g.capacity, grant.capacity), g) for g in holding
                  if g.capacity != grant.capacity and all(g is not f for _, f in found)]
        return found

    def _still_holds(self, earlier, grant):
        """None when the earlier grant is over by the time `grant` was acquired (see the
        module's text), else why it still holds."""
        same_holder = earlier.lease_uid == grant.lease_uid and earlier.uid == grant.uid
        if not same_holder and (self._pod_dead(earlier) or self._let_go(earlier)):
            return None
        # The same claim of the same pod granted again (a new token) is no second holder, but
        # a revocation is final: the new grant, too, waits out the validity published to the
        # old one.
        published, _rule = self.validity.published_until(earlier.ns, earlier.lease, earlier.token)
        shown_until = self._shown_until(earlier)
        if not same_holder and shown_until is not False and earlier.lease != grant.lease and \
                (shown_until is None or grant.acquired is None or shown_until > grant.acquired):
            return "two holders: %s granted at %s while %s is still shown Held until %s and its pod lives" \
                % (grant.describe(), _stamp(grant.acquired), earlier.describe(), _stamp(shown_until))
        if published is not None and (grant.acquired is None or grant.acquired < published):
            return "handed over before the published validity ended: %s acquired at %s, %s valid until %s" \
                % (grant.describe(), _stamp(grant.acquired), earlier.describe(), _stamp(published))
        return None

    def _ended(self, earlier, grant):
        """Counts how an earlier grant ended, as the grant after it found it."""
        if earlier.lease_uid == grant.lease_uid and earlier.uid == grant.uid:
            self.handovers["same_holder_again"] += 1
        elif self._pod_dead(earlier):
            self.handovers["confirmed_dead"] += 1
            return
        elif self._let_go(earlier):
            self.handovers["released"] += 1
            return
        else:
            self.handovers["after_validity"] += 1
        published, _rule = self.validity.published_until(earlier.ns, earlier.lease, earlier.token)
        if published is not None and grant.acquired is not None and grant.acquired >= published:
            slack = grant.acquired - published
            self.min_validity_slack = slack if self.min_validity_slack is None else min(self.min_validity_slack,
                                                                                        slack)

    def _session_promises(self, rv):
        for anomaly in self.validity.anomalies[self._anomalies_seen:]:
            ns, lease, token = anomaly["grant"]
            self._violate(rv, "%s/(Lease %s)" % (ns, lease), "session: %s (token %d)" % (anomaly["what"], token))
        self._anomalies_seen = len(self.validity.anomalies)

    def _violate(self, rv, lock, what):
        self.violations.append({"resourceVersion": rv, "lock": lock, "violation": what})


def _stamp(t):
    if t is None or t is False:
        return "never"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def check(events):
    """events: (resourceVersion, "pod"|"lease"|"session", type, object[, seen]) in any order."""
    result = SafetyCheck()
    for event in sorted(events, key=lambda e: e[0]):
        result.apply(*event)
    return result


if __name__ == "__main__":
    # Checks a history chaos-bench wrote with --history: safety.py FILE
    with open(sys.argv[1]) as history:
        recorded = [json.loads(line) for line in history]
    found = check([(e["rv"], e["kind"], e["type"], e["object"], e.get("seen")) for e in recorded])
    print(json.dumps({"grants": found.grants, "handovers": found.handovers, "violations": found.violations},
                     indent=2))
    sys.exit(1 if found.violations else 0)
