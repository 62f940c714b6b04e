"""The chaos checker's rules on the work done under the locks, read from the journals the
holders' commands keep (critical_section.py):

(a) The critical sections on one lock keep to its shape: an Exclusive holder's section never
    overlaps another grant's on the lock, and no more Shared sections run at once than the
    lock's capacity (a plain lock is capacity 1, Exclusive: no two sections overlap). A
    section of a lock set counts on every lock of its set, and must name every lock its
    holder claimed (nobody runs on part of its set). Grants beyond the shape are excused
    where the earlier holder (the lower token) was paused past its validity. One whose
    earlier holder ran with its clock behind by more than its safety margin is still a
    violation, marked `skew_beyond_margin`: the guarantee assumes clocks within the margin,
    and the checker must see what breaks when they are not.
(b) In the protected index, no write carrying a token lower than one already accepted for
    the same document was accepted: the accepted writes of each document, in `_seq_no` order
    (the shard's own order), carry tokens that never go down, and the document's version at
    the end is the largest token accepted.

A critical section runs from its `start` record to its `stop` record; one killed without
stopping ends a heartbeat after its last record (it was alive then, and could not have
lived a full heartbeat longer unnoticed), or when the harness's SIGKILL of its holder had
left no process alive, if that came first (the harness kills a holder before it deletes or
ends its pod, so a successor granted on that news starts after it).

When is a holder "paused past its validity"? One of its pauses must have begun before the
moment its grant stopped being valid and lasted into the window in which its tool had to
stop the command (the validity less the safety margin and the grace). In Kubernetes mode
the validity is the one the sessions published (bench/common/validity.py). In direct mode
the tool times its grant itself from its last confirmed renewal, which no one else sees, so
the window is taken as the lease duration plus the grace before the successor started.

Pure: no I/O beyond parsing given lines, so the rules are tested on hand-made journals.
"""

import collections
import json

HEARTBEAT_SECONDS = 0.1  # critical_section.py's


class Shape:
    """What a holder claims: its locks (ids as its journal names them; several for a set), the
    capacity it states and whether its access is Shared."""

    def __init__(self, locks, capacity=1, shared=False):
        self.locks = tuple(locks)
        self.capacity = capacity
        self.shared = shared


class HolderProfile:
    """How a holder's tool runs: mode "kubernetes" or "direct", lease duration, safety margin
    and grace (seconds), its clock's skew (seconds; negative when behind), and its claim's
    Shape (None: the one lock its journal names, capacity 1, Exclusive)."""

    def __init__(self, mode, ttl, margin, grace, skew=0.0, shape=None):
        self.mode = mode
        self.ttl = ttl
        self.margin = margin
        self.grace = grace
        self.skew = skew
        self.shape = shape

    def skew_beyond_margin(self):
        """A clock behind by more than the margin: the tool believes its grant longer than it is."""
        return self.mode == "kubernetes" and self.skew < -self.margin


class Section:
    """One critical section: one run of the command under one grant."""

    def __init__(self, holder, lock, lease, token, pid, start):
        self.holder = holder
        self.lock = lock
        self.lease = lease
        self.token = token
        self.pid = pid
        self.start = start
        self.last_seen = start
        self.stopped = None  # reason of its stop record: "done" or "terminated"
        self.stop_time = None
        self.killed_at = None  # when its holder's kill had left no process alive

    @property
    def locks(self):
        """The locks it runs on: ESLEASE_LOCK, comma-separated for a set."""
        return tuple(self.lock.split(","))

    @property
    def end(self):
        if self.stopped:
            return self.stop_time
        unnoticed = self.last_seen + HEARTBEAT_SECONDS
        return unnoticed if self.killed_at is None else min(unnoticed, self.killed_at)

    def describe(self):
        return "%s token %d [%.3f, %.3f]%s" % (self.holder, self.token, self.start, self.end,
                                               "" if self.stopped else " (killed)")


class Write:
    """One fenced write and its outcome: accepted, refused, failed or unknown."""

    def __init__(self, record):
        self.holder = record["holder"]
        self.lock = record.get("doc") or record["lock"]  # the document it wrote: one lock of a set
        self.token = record["token"]
        self.outcome = record["outcome"]
        self.seq_no = record.get("seq_no")
        self.time = record["t"]


def read_journals(lines):
    """Parses journal lines (any order of files, each file in order) into (sections, writes)."""
    sections = {}
    writes = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut by the end of the run
        key = (record["holder"], record["pid"], record["token"])
        if record["event"] == "start":
            sections[key] = Section(record["holder"], record["lock"], record.get("lease"), record["token"],
                                    record["pid"], record["t"])
            continue
        section = sections.get(key)
        if section is None:
            continue
        section.last_seen = max(section.last_seen, record["t"])
        if record["event"] == "stop":
            section.stopped = record.get("reason", "stopped")
            section.stop_time = record["t"]
        elif record["event"] == "write":
            writes.append(Write(record))
    return list(sections.values()), writes


# --- (a) critical sections ----------------------------------------------------------------
class SectionReport:
    def __init__(self):
        self.checked = 0
        self.overlaps = []  # every grant beyond a lock's shape, with its verdict
        self.violations = []
        self.excused = 0
        self.skew_beyond_margin = 0
        self.most_at_once = {}  # lock of capacity > 1 -> the most Shared grants seen on it at once


def paused_past_validity(earlier, later, profile, pauses, validity_end):
    """Whether one of the earlier holder's pauses kept its tool from stopping the command in
    time (see the module's text). `validity_end` is its published validity, or None."""
    if profile.mode == "kubernetes" and validity_end is not None:
        valid_until = validity_end
        window_opens = validity_end - profile.margin - profile.grace
    else:
        valid_until = later.start
        window_opens = later.start - profile.ttl - profile.grace
    return any(began < valid_until and ended > window_opens and ended > earlier.start
               for began, ended in pauses.get(earlier.holder, ()))


class _Judge:
    """The rules' shared parts: the holders' profiles and pauses, and the verdicts so far."""

    def __init__(self, report, profiles, pauses, validity_of):
        self.report = report
        self.profiles = profiles
        self.pauses = pauses
        self.validity_of = validity_of

    def shape(self, section):
        return self.profiles[section.holder].shape or Shape(section.locks)

    def excused(self, earlier, later):
        return paused_past_validity(earlier, later, self.profiles[earlier.holder], self.pauses,
                                    self.validity_of(earlier))

    def record(self, finding, excused, earlier):
        """One grant beyond a shape: excused, or a violation (marked when an earlier holder's
        clock was behind by more than its margin)."""
        if excused:
            finding["verdict"] = "excused: the earlier holder was paused past its validity"
            self.report.excused += 1
        else:
            finding["verdict"] = "violation"
            if any(self.profiles[s.holder].skew_beyond_margin() for s in earlier):
                finding["cause"] = "skew_beyond_margin"
                self.report.skew_beyond_margin += 1
            self.report.violations.append(finding)
        self.report.overlaps.append(finding)


def check_sections(sections, profiles, pauses, validity_of, kills=None):
    """sections: [Section]; profiles: holder -> HolderProfile; pauses: holder -> [(began,
    ended)]; validity_of(section) -> the validity published to its grant, or None; kills:
    holder -> [when a SIGKILL of it had left no process alive]."""
    for s in sections:
        after = [t for t in (kills or {}).get(s.holder, ()) if t >= s.last_seen]
        if not s.stopped and after:
            s.killed_at = min(after)
    report = SectionReport()
    report.checked = len(sections)
    judge = _Judge(report, profiles, pauses, validity_of)
    by_lock = collections.defaultdict(list)
    for s in sections:
        claimed = judge.shape(s).locks
        if set(s.locks) != set(claimed):
            report.violations.append({"lock": s.lock, "holder": s.holder, "violation": "ran on part of its set: "
                                      "%s token %d claimed %s" % (s.holder, s.token, ",".join(claimed))})
        for lock in s.locks:
            by_lock[lock].append(s)
    for lock, runs in sorted(by_lock.items()):
        runs.sort(key=lambda s: (s.token, s.start))
        capacities = sorted({judge.shape(s).capacity for s in runs})
        if len(capacities) > 1:
            report.violations.append({"lock": lock, "violation": "its claimants state capacities %s" % capacities})
        _check_exclusive(judge, lock, runs)
        shared = [s for s in runs if judge.shape(s).shared]
        if capacities[-1] > 1 and shared:
            report.most_at_once[lock] = _check_capacity(judge, lock, capacities[-1], shared)
    return report


def _overlap(a, b):
    return a.token != b.token and a.start < b.end and b.start < a.end


def _check_exclusive(judge, lock, runs):
    """An Exclusive holder is alone: no other grant's section overlaps its own."""
    for i, earlier in enumerate(runs):
        for later in runs[i + 1:]:
            if not _overlap(earlier, later) or (judge.shape(earlier).shared and judge.shape(later).shared):
                continue
            finding = {"lock": lock, "earlier": earlier.describe(), "later": later.describe(),
                       "overlap_seconds": round(min(earlier.end, later.end) - later.start, 3)}
            judge.record(finding, judge.excused(earlier, later), [earlier])


def _check_capacity(judge, lock, capacity, shared):
    """No more Shared grants at once than the capacity. The count is largest when a section
    starts, so it is taken at every start; a grant whose holder was paused past its validity
    before a later grant among them does not count. Returns the most grants seen at once."""
    most = 0
    judged = set()
    for newest in sorted(shared, key=lambda s: s.start):
        at = newest.start
        active = {}
        for s in shared:
            if s.start <= at < s.end:
                active.setdefault(s.token, s)  # sections of one grant (a restarted command) count once
        most = max(most, len(active))
        tokens = frozenset(active)
        if len(active) <= capacity or tokens in judged:
            continue
        judged.add(tokens)
        live = [s for s in active.values()
                if not any(judge.excused(s, later) for later in active.values() if later.token > s.token)]
        beyond = sorted(live, key=lambda s: s.token)[:-1]
        at_once = sorted(active.values(), key=lambda s: s.token)
        finding = {"lock": lock, "capacity": capacity, "at_once": [s.describe() for s in at_once],
                   "overlap_seconds": round(min(s.end for s in at_once) - at, 3)}
        judge.record(finding, len(live) <= capacity, beyond)
    return most


def shape_kind(profile, written):
    """The kind of lock shape a holder claims (None: a plain lock): "set"; "read_write_exclusive"
    for an Exclusive claim on capacity > 1 (a writer); "read_write_shared" for a Shared one on a
    lock that also has Exclusive claimants (`written`: those locks), else "semaphore" on capacity
    > 1. A pod's claim in Kubernetes mode is the same kind with "kube_" before it."""
    shape = profile.shape
    if shape is None:
        return None
    if len(shape.locks) > 1:
        kind = "set"
    elif shape.capacity == 1:
        return None
    elif not shape.shared:
        kind = "read_write_exclusive"
    else:
        kind = "read_write_shared" if shape.locks[0] in written else "semaphore"
    return "kube_" + kind if profile.mode == "kubernetes" else kind


def grants_by_shape(sections, profiles):
    """How many grants (a holder's token) of each kind of lock shape (shape_kind) reached a
    workload, for every kind some holder of the run claims."""
    written = {lock for p in profiles.values() if p.shape is not None and not p.shape.shared for lock in p.shape.locks}
    kinds = {holder: shape_kind(p, written) for holder, p in profiles.items()}
    counts = {kind: 0 for kind in sorted(set(kinds.values()) - {None})}
    for holder in _grant_holders(sections):
        if kinds.get(holder) is not None:
            counts[kinds[holder]] += 1
    return counts


def set_grants_by_holder(sections, profiles):
    """How many grants (a holder's token) reached the workload of each holder of a lock set;
    0 for one never granted its set."""
    counts = {holder: 0 for holder, p in profiles.items() if p.shape is not None and len(p.shape.locks) > 1}
    for holder in _grant_holders(sections):
        if holder in counts:
            counts[holder] += 1
    return dict(sorted(counts.items()))


def _grant_holders(sections):
    """The holder of each grant that reached a workload, once per grant (a restarted command
    runs several sections under one token)."""
    return [holder for holder, _token in {(s.holder, s.token) for s in sections}]


def failing_first(violations, expect_skew_violations):
    """The violations in the order a reader of a truncated report needs them: when overlaps of
    holders skewed beyond the margin are expected, every other violation (the ones that fail
    the run) before them; otherwise as given. The order within each group is kept."""
    if not expect_skew_violations:
        return list(violations)
    return sorted(violations, key=lambda v: v.get("cause") == "skew_beyond_margin")


# --- (b) fenced writes --------------------------------------------------------------------
class FencingReport:
    def __init__(self):
        self.counts = collections.Counter()  # outcome -> writes
        self.refused_stale = 0
        self.stale_accepted = 0
        self.violations = []

    def summary(self):
        return {"accepted": self.counts["accepted"], "refused_stale": self.refused_stale,
                "failed": self.counts["failed"], "unknown_outcome": self.counts["unknown"],
                "stale_accepted": self.stale_accepted}


def check_fencing(writes, stored_versions):
    """writes: [Write]; stored_versions: lock -> the protected document's version at the end
    (None when it is missing)."""
    report = FencingReport()
    accepted = collections.defaultdict(list)
    for w in writes:
        report.counts[w.outcome] += 1
        if w.outcome == "accepted":
            accepted[w.lock].append(w)
        elif w.outcome == "refused":
            report.refused_stale += 1
    for lock, done in sorted(accepted.items()):
        done.sort(key=lambda w: w.seq_no)
        highest = None
        for w in done:
            if highest is not None and w.token < highest.token:
                report.stale_accepted += 1
                report.violations.append({"lock": lock, "violation": "stale write accepted: %s token %d (seq_no %d) "
                                          "after %s token %d (seq_no %d)" % (w.holder, w.token, w.seq_no,
                                                                             highest.holder, highest.token,
                                                                             highest.seq_no)})
            if highest is None or w.token > highest.token:
                highest = w
        stored = stored_versions.get(lock)
        if stored is None or stored < highest.token:
            report.violations.append({"lock": lock, "violation": "the protected document ends at version %s, below "
                                      "the accepted token %d" % (stored, highest.token)})
    return report
