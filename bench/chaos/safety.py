"""The safety check of the chaos benchmark: replays every Pod and Lease change of a run in
resourceVersion order (the API server's one global order) and finds each moment a lock
could have had two holders.

A grant is a (lock, fencing token) first shown Held. When a new grant of a lock appears, the
previous grant must be over at that point of the history:
- its pod is confirmed dead (object gone, replaced by a new UID, or phase Failed/Succeeded),
- or its claim let go (the Lease is being deleted or gone),
- or else (the holder was only presumed dead, or could not be judged) the new grant's
  acquireTime is no earlier than the latest expireTime ever published to the old holder,
  and the old Lease no longer shows that grant as Held until after it.
Tokens of one lock must grow with every grant, one token belongs to one grant, and a grant
that has been superseded must never again be shown Held, to a pod that lives, with an
expireTime after its successor's acquireTime (a holder believes it holds until then).

Pure: no I/O, so the check itself is tested on hand-made histories.
"""

from datetime import datetime

TERMINAL = ("Failed", "Succeeded")


def parse_time(text):
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Grant:
    def __init__(self, lock, token, lease, lease_uid, pod, uid, acquired, rv):
        self.lock = lock
        self.token = token
        self.lease = lease
        self.lease_uid = lease_uid
        self.pod = pod
        self.uid = uid
        self.acquired = acquired
        self.max_expire = None
        self.rv = rv

    def describe(self):
        return "token %d to %s (Lease %s)" % (self.token, self.pod, self.lease)


class SafetyCheck:
    """Feed `apply(rv, kind, type, obj)` in resourceVersion order; read `violations`,
    `grants` (count) and `handovers` (how each previous grant had ended)."""

    def __init__(self):
        self.pods = {}  # name -> pod object as of the current point in the history
        self.leases = {}  # name -> Lease object
        self.by_lock = {}  # lock -> [Grant] in grant order
        self.violations = []
        self.grants = 0
        self.handovers = {"confirmed_dead": 0, "released": 0, "after_expiry": 0}
        self.takeovers = {}  # status.lastTakeover.reason -> count
        # The closest an after-expiry hand-over came to the old holder's published expiry.
        self.min_expiry_slack = None
        self._takeovers_seen = set()

    # --- the world as of the current resourceVersion -----------------------------------
    def apply(self, rv, kind, event_type, obj):
        name = obj["metadata"]["name"]
        table = self.pods if kind == "pod" else self.leases
        before = table.get(name)
        if event_type == "DELETED":
            table.pop(name, None)
            return
        table[name] = obj
        if kind == "lease":
            self._lease_changed(rv, before, obj)

    def _pod_dead(self, grant):
        pod = self.pods.get(grant.pod)
        return (pod is None or pod["metadata"].get("uid") != grant.uid
                or pod.get("status", {}).get("phase") in TERMINAL)

    def _released(self, grant):
        lease = self.leases.get(grant.lease)
        return (lease is None or lease["metadata"].get("uid") != grant.lease_uid
                or bool(lease["metadata"].get("deletionTimestamp")))

    # --- Lease changes -----------------------------------------------------------------
    def _lease_changed(self, rv, before, lease):
        status = lease.get("status") or {}
        token_text = status.get("fencingToken")
        if not token_text:
            return
        name = lease["metadata"]["name"]
        lock = "%s/%s" % (lease["metadata"].get("namespace", ""), lease["spec"]["lockName"])
        token = int(token_text)
        holder = status.get("holder") or {}
        grants = self.by_lock.setdefault(lock, [])
        grant = next((g for g in grants if g.token == token), None)
        if grant is not None and (grant.lease_uid != lease["metadata"].get("uid")
                                  or grant.uid != holder.get("podUID")):
            self._violate(rv, lock, "token %d shown for two grants: %s and %s/%s"
                          % (token, grant.describe(), holder.get("podName"), name))
            return
        if grant is not None:
            grant.max_expire = _later(grant.max_expire, parse_time(status.get("expireTime")))
        held = status.get("phase") == "Held"
        if not held:
            return
        if grant is None:
            self._new_grant(rv, lock, grants, Grant(lock, token, name, lease["metadata"].get("uid"), holder.get("podName"), holder.get("podUID"),
                                                    parse_time(status.get("acquireTime")), rv), status)
            return
        was_held = before is not None and (before.get("status") or {}).get("phase") == "Held" and \
            (before.get("status") or {}).get("fencingToken") == token_text
        newest = grants[-1]
        shown_until = parse_time(status.get("expireTime"))
        if not was_held and newest.token > token and not self._pod_dead(grant) and not self._released(grant) \
                and (shown_until is None or newest.acquired is None or shown_until > newest.acquired):
            self._violate(rv, lock, "superseded grant shown Held again until %s: %s after %s"
                          % (_stamp(shown_until), grant.describe(), newest.describe()))

    def _new_grant(self, rv, lock, grants, grant, status):
        grant.max_expire = parse_time(status.get("expireTime"))
        self.grants += 1
        takeover = status.get("lastTakeover") or {}
        if takeover.get("reason") and (grant.lease_uid, takeover.get("time")) not in self._takeovers_seen:
            self._takeovers_seen.add((grant.lease_uid, takeover.get("time")))
            self.takeovers[takeover["reason"]] = self.takeovers.get(takeover["reason"], 0) + 1
        previous = grants[-1] if grants else None
        grants.append(grant)
        if previous is None:
            return
        if grant.token <= previous.token:
            self._violate(rv, lock, "fencing token did not grow: %s after %s"
                          % (grant.describe(), previous.describe()))
        if self._pod_dead(previous):
            self.handovers["confirmed_dead"] += 1
            return
        if self._released(previous):
            self.handovers["released"] += 1
            return
        self.handovers["after_expiry"] += 1
        old = (self.leases.get(previous.lease) or {}).get("status") or {}
        old_until = parse_time(old.get("expireTime"))
        # A status still Held whose expireTime has passed is stale, not a holder: a holder
        # that cannot renew stops itself by its expireTime.
        if previous.lease_uid != grant.lease_uid and old.get("phase") == "Held" and \
                old.get("fencingToken") == str(previous.token) and \
                (old_until is None or grant.acquired is None or old_until > grant.acquired):
            self._violate(rv, lock, "two holders: %s granted at %s while %s is still Held until %s and its pod lives"
                          % (grant.describe(), _stamp(grant.acquired), previous.describe(),
                             _stamp(parse_time(old.get("expireTime")))))
        elif grant.acquired is None or previous.max_expire is None or grant.acquired < previous.max_expire:
            self._violate(rv, lock, "handed over before the published expiry: %s acquired at %s, %s expired at %s"
                          % (grant.describe(), _stamp(grant.acquired), previous.describe(),
                             _stamp(previous.max_expire)))
        else:
            slack = grant.acquired - previous.max_expire
            self.min_expiry_slack = slack if self.min_expiry_slack is None else min(self.min_expiry_slack, slack)

    def _violate(self, rv, lock, what):
        self.violations.append({"resourceVersion": rv, "lock": lock, "violation": what})


def _later(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _stamp(t):
    return "never" if t is None else datetime.utcfromtimestamp(t).isoformat(timespec="milliseconds") + "Z"


def check(events):
    """events: (resourceVersion, "pod"|"lease", type, object) in any order."""
    result = SafetyCheck()
    for rv, kind, event_type, obj in sorted(events, key=lambda e: e[0]):
        result.apply(rv, kind, event_type, obj)
    return result
