"""The chaos checker's rules on the work done under the locks, read from the journals the
holders' commands keep (critical_section.py):

(a) Critical sections of one lock never overlap, except where the earlier holder was paused
    past its validity. An overlap whose earlier holder ran with its clock behind by more
    than its safety margin is still a violation, marked `skew_beyond_margin`: the guarantee
    assumes clocks within the margin, and the checker must see what breaks when they are not.
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


class HolderProfile:
    """How a holder's tool runs: mode "kubernetes" or "direct", lease duration, safety margin
    and grace (seconds), and its clock's skew (seconds; negative when behind)."""

    def __init__(self, mode, ttl, margin, grace, skew=0.0):
        self.mode = mode
        self.ttl = ttl
        self.margin = margin
        self.grace = grace
        self.skew = skew

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
        self.lock = record["lock"]
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
        self.overlaps = []  # every overlap, with its verdict
        self.violations = []
        self.excused = 0
        self.skew_beyond_margin = 0


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
    by_lock = collections.defaultdict(list)
    for s in sections:
        by_lock[s.lock].append(s)
    for lock, runs in sorted(by_lock.items()):
        runs.sort(key=lambda s: (s.token, s.start))
        for i, earlier in enumerate(runs):
            for later in runs[i + 1:]:
                if later.token == earlier.token or earlier.end <= later.start or later.end <= earlier.start:
                    continue
                _judge(report, lock, earlier, later, profiles[earlier.holder], pauses, validity_of(earlier))
    return report


def _judge(report, lock, earlier, later, profile, pauses, validity_end):
    overlap = {"lock": lock, "earlier": earlier.describe(), "later": later.describe(),
               "overlap_seconds": round(min(earlier.end, later.end) - later.start, 3)}
    if paused_past_validity(earlier, later, profile, pauses, validity_end):
        overlap["verdict"] = "excused: the earlier holder was paused past its validity"
        report.excused += 1
    else:
        overlap["verdict"] = "violation"
        if profile.skew_beyond_margin():
            overlap["cause"] = "skew_beyond_margin"
            report.skew_beyond_margin += 1
        report.violations.append(overlap)
    report.overlaps.append(overlap)


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
