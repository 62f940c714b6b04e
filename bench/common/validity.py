"""The validity the controller publishes to a holder, as a watcher of the API server reads it.

A controller publishes it in one of two ways, and a Lease version says which:

- Lease status: a version that carries `status.expireTime` publishes, while it shows `Held`
  with fencing token T, that the grant is valid until that expireTime.
- The namespace's session: the grant (Lease L, token T) is valid until
  `spec.renewTime + L.spec.leaseDurationSeconds` of the latest version of the
  `coordination.k8s.io/v1` Lease named `eslease-session` in L's namespace whose annotation
  `eslease.io/revoked: <lease>=<token>[,...]` does not list `L=T`, and only while L shows
  `Held` with token T.

Feed the versions of both kinds of objects in the order the API server wrote them (the
resourceVersion order), then ask what a grant is shown now and the latest validity it was
ever shown. Pure: no I/O, so the rule is tested on hand-made histories and serves the
benchmarks and the chaos checker alike.

Two promises of a session that the rule depends on are checked as the history is fed, and
what breaks them is kept in `anomalies`: once a grant is listed, no later session version
publishes it a longer validity (the listing freezes it), and no version drops a listing before the
grant's hand-over time plus LISTING_KEPT_SECONDS (the hand-over time being the renewTime the
session showed just before the listing plus the grant's lease duration).
"""

import re
from datetime import datetime

SESSION_NAME = "eslease-session"
REVOKED_ANNOTATION = "eslease.io/revoked"
DEFAULT_LEASE_DURATION_SECONDS = 60  # the CRD's default for spec.leaseDurationSeconds
LISTING_KEPT_SECONDS = 60  # how long past its hand-over time a listing stays in the session

STATUS_RULE = "status.expireTime"
SESSION_RULE = "session"

_FRACTION = re.compile(r"\.(\d+)")


def parse_time(text):
    """RFC 3339 (Time or MicroTime, any number of fractional digits) -> epoch seconds."""
    if not text:
        return None
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text.replace("Z", "+00:00"), count=1)
    return datetime.fromisoformat(text).timestamp()


def revoked_grants(session):
    """The (lease name, token) pairs a session version lists as revoked."""
    text = ((session.get("metadata") or {}).get("annotations") or {}).get(REVOKED_ANNOTATION) or ""
    listed = set()
    for entry in text.split(","):
        name, _, token = entry.strip().partition("=")
        if name and token.strip().isdigit():
            listed.add((name, int(token)))
    return frozenset(listed)


def is_session(obj):
    return (obj.get("metadata") or {}).get("name") == SESSION_NAME


class _SessionVersion:
    def __init__(self, obj, seen=None):
        self.renew_time = parse_time((obj.get("spec") or {}).get("renewTime"))
        self.revoked = revoked_grants(obj)
        # No later than when it was written: when a watcher saw it, else its renewTime (a
        # version that only changes the listing keeps an older renewTime).
        self.written = seen if seen is not None else self.renew_time


class _LeaseView:
    """What one version of an eslease Lease shows: the grant it shows Held, if any."""

    def __init__(self, obj):
        status = obj.get("status") or {}
        token = status.get("fencingToken")
        self.token = int(token) if status.get("phase") == "Held" and token else None
        self.expire_time = parse_time(status.get("expireTime"))
        self.duration = (obj.get("spec") or {}).get("leaseDurationSeconds") or DEFAULT_LEASE_DURATION_SECONDS


class PublishedValidity:
    """The rule above, replayed over a history. Grants are named (namespace, lease, token)."""

    def __init__(self):
        self._sessions = {}  # namespace -> [_SessionVersion] in the order written
        self._latest = {}  # namespace -> its session's latest version, unless it was deleted since
        self._leases = {}  # (namespace, lease) -> _LeaseView of its current version
        self._held_in = {}  # namespace -> names of the Leases that show Held now
        self._published = {}  # grant -> (latest validity shown, the rule that showed it)
        self._durations = {}  # (namespace, lease) -> its leaseDurationSeconds, from its latest version
        self._listed = {}  # grant -> its hand-over time (None: unknown), from its first listing
        self.anomalies = []  # sessions that broke their promises (see the module's text)

    # --- the history -------------------------------------------------------------------
    def apply_lease(self, event_type, obj):
        """One version of an eslease.io Lease (event_type DELETED: the object is gone)."""
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        held = self._held_in.setdefault(ns, set())
        if event_type == "DELETED":
            self._leases.pop((ns, name), None)
            held.discard(name)
            return
        view = _LeaseView(obj)
        self._leases[(ns, name)] = view
        self._durations[(ns, name)] = view.duration
        if view.token is None:
            held.discard(name)
            return
        held.add(name)
        self._publish(ns, name, view)

    def apply_session(self, event_type, obj, seen=None):
        """One version of a namespace's `eslease-session` Lease (`seen`: when a watcher got
        it, if known). A deleted session publishes nothing new; what its versions published
        stands (and the rule keeps reading them)."""
        if not is_session(obj):
            return
        ns = obj["metadata"].get("namespace", "")
        if event_type == "DELETED":
            # Allowed once the namespace holds nothing; the next session starts afresh.
            self._latest.pop(ns, None)
            return
        version = _SessionVersion(obj, seen)
        self._check_listings(ns, self._latest.get(ns), version)
        self._latest[ns] = version
        self._sessions.setdefault(ns, []).append(version)
        for name in self._held_in.get(ns, ()):
            self._publish(ns, name, self._leases[(ns, name)], by_session=True)

    # --- what it shows -----------------------------------------------------------------
    def shown(self, ns, name):
        """(token, validity, rule) of the grant Lease `name` shows Held now, else None.
        The validity is None when nothing has published one yet."""
        view = self._leases.get((ns, name))
        if view is None or view.token is None:
            return None
        return (view.token,) + self._validity(ns, name, view)

    def held(self):
        """Every grant shown Held now: (namespace, lease, token, validity, rule)."""
        for ns, names in self._held_in.items():
            for name in names:
                yield (ns, name) + self.shown(ns, name)

    def published_until(self, ns, name, token):
        """(latest validity the grant was ever shown, its rule), or (None, None)."""
        return self._published.get((ns, name, token), (None, None))

    def listed(self, ns, name, token):
        """Whether the namespace's latest session version lists the grant as revoked."""
        versions = self._sessions.get(ns)
        return bool(versions) and (name, token) in versions[-1].revoked

    # --- the rule ----------------------------------------------------------------------
    def _validity(self, ns, name, view):
        if view.expire_time is not None:
            return view.expire_time, STATUS_RULE
        for version in reversed(self._sessions.get(ns, ())):
            if (name, view.token) not in version.revoked:
                if version.renew_time is None:
                    break
                return version.renew_time + view.duration, SESSION_RULE
        return None, SESSION_RULE

    def _publish(self, ns, name, view, by_session=False):
        """Records what a new version (of the session, or of the Lease) shows the grant.
        A Lease shown Held again with an old token is the chaos checker's to judge (with its
        pod's liveness); a session version publishing more to a listed grant is an anomaly."""
        grant = (ns, name, view.token)
        until, rule = self._validity(ns, name, view)
        if until is None:
            return
        before = self._published.get(grant)
        if before is None or until > before[0]:
            if by_session and before is not None and grant in self._listed:
                self.anomalies.append({"grant": grant, "what": "validity extended after the grant was listed",
                                       "from": before[0], "to": until})
            self._published[grant] = (until, rule)

    # --- the session's promises --------------------------------------------------------
    def _check_listings(self, ns, previous, version):
        """Records each grant `version` lists for the first time (with its hand-over time),
        and flags every listing it drops too early."""
        for name, token in version.revoked:
            grant = (ns, name, token)
            if grant not in self._listed:
                # A grant listed by a session's first version was never published by it: its
                # hand-over time is as early as that version's own renewTime.
                renewed = previous.renew_time if previous is not None else version.renew_time
                duration = self._durations.get((ns, name), DEFAULT_LEASE_DURATION_SECONDS)
                self._listed[grant] = None if renewed is None else renewed + (duration if previous else 0)
        if previous is None:
            return
        for name, token in previous.revoked - version.revoked:
            handover = self._listed.get((ns, name, token))
            if handover is None or version.written is None or version.written < handover + LISTING_KEPT_SECONDS:
                self.anomalies.append({"grant": (ns, name, token), "what": "listing dropped before its hand-over "
                                       "time plus %d s" % LISTING_KEPT_SECONDS, "handover": handover,
                                       "dropped_at": version.written})
