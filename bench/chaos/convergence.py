"""Rule (c) of the chaos checker, on the state once the chaos has stopped: every claim ends
in a phase and none is lost.

- every Lease shows a phase the design names, written for its current generation;
- every claimant whose tool runs has its claim: Held, or Pending with its place in the
  queue (positions 0, 1, ... among the lock's waiting claims, as the first ten are kept
  exact);
- every lock with a claimant shows exactly one Held claim, and it agrees with the lock's
  Elasticsearch document (holder and fencing token); a lock of capacity above 1 shows at
  least one, an Exclusive one alone or Shared ones up to its capacity, each agreeing with
  the slot documents it holds (its slot when Shared, every slot when Exclusive), and no
  Shared claim waits while the lock has room for it and no Exclusive claim holds or waits;
- the holder of every lock runs its critical section under that token: the grant reached
  the workload, and the workload still works under it;
- outside Kubernetes, every live slot document belongs to a holder that runs and works under
  its token; every claimant that works holds its whole claim (one slot of each lock of its
  set when Shared, every slot when Exclusive); every claimant that waits has a reason: a lock
  of its claim with no room for it. So every set claimant ends holding all of its set, or
  waiting behind a holder, never on part of it or behind nobody.

Pure: the caller gathers the state; tested on hand-made states.
"""

PHASES = ("Pending", "Held", "Released", "TimedOut", "Invalid")


class Claim:
    """A claim the run expects: a Lease of `lock` for `pod` (None for an election claim),
    and the holder whose tool made it (None when the run applied it itself)."""

    def __init__(self, lease, lock, pod=None, holder=None, capacity=1, shared=False):
        self.lease = lease
        self.lock = lock
        self.pod = pod
        self.holder = holder
        self.capacity = capacity
        self.shared = shared


class DirectClaimant:
    """A claim outside Kubernetes: holder name ("direct/<holder>") and its Shape (lock ids,
    capacity, access; workload_check.py)."""

    def __init__(self, holder, shape):
        self.holder = holder
        self.shape = shape


def slot_ids(lock, capacity):
    """The documents of a lock's slots: `<lock>` for slot 0, `<lock>#<k>` above."""
    return [lock] + ["%s#%d" % (lock, k) for k in range(1, capacity)]


def _status(lease):
    return (lease or {}).get("status") or {}


def unconverged(ns, leases, claims, documents, running, open_sections, direct_claimants=(), direct_documents=None):
    """The problems left, [] once converged.

    leases: name -> Lease object; claims: [Claim]; documents: lock id -> (holder, token) of
    its document, None when there is none; running: names of holders whose tool runs;
    open_sections: holder name -> token of the critical section it is in now, or None to
    leave the workloads out; direct_claimants: [DirectClaimant]; direct_documents: slot
    document id -> (holder name, token) of the live ones (not expired) on their locks."""
    problems = []
    for name, lease in sorted(leases.items()):
        status = _status(lease)
        if status.get("phase") not in PHASES:
            problems.append("Lease %s shows no phase (%r)" % (name, status.get("phase")))
        elif status.get("observedGeneration") != lease["metadata"].get("generation"):
            problems.append("Lease %s: status is for generation %s, not %s"
                            % (name, status.get("observedGeneration"), lease["metadata"].get("generation")))
    by_lock = {}
    for claim in claims:
        by_lock.setdefault(claim.lock, []).append(claim)
    for lock, expected in sorted(by_lock.items()):
        problems += _lock_problems(ns, lock, expected, leases, documents, running, open_sections)
    if direct_claimants:
        problems += _direct_problems(direct_claimants, direct_documents or {}, running, open_sections)
    return problems


def _lock_problems(ns, lock, expected, leases, documents, running, open_sections):
    problems = []
    present = []
    for claim in expected:
        lease = leases.get(claim.lease)
        if lease is None:
            if claim.holder is None or claim.holder in running:
                problems.append("%s: claim %s is lost (no Lease)" % (lock, claim.lease))
            continue
        present.append((claim, lease))
    held = [(c, l) for c, l in present if _status(l).get("phase") == "Held"]
    waiting = [(c, l) for c, l in present if _status(l).get("phase") == "Pending"]
    pending = sorted(_status(l).get("queuePosition", -1) for _c, l in waiting)
    shape_problem = _held_shape_problem(expected[0].capacity, held, waiting)
    if shape_problem:
        return problems + ["%s: %s" % (lock, shape_problem)]
    if pending != list(range(len(pending))):
        problems.append("%s: waiting claims at queue positions %s" % (lock, pending))
    for claim, lease in held:
        status = lease["status"]
        slots = slot_ids("%s/%s" % (ns, lock), claim.capacity)
        for doc in [slots[status.get("slot") or 0]] if claim.shared else slots:
            holder, token = documents.get(doc) or (None, None)
            if holder != "%s/%s" % (ns, status["holder"]["podName"]) or token != status.get("fencingToken"):
                problems.append("%s: document %s %s/%s, Lease %s/%s" % (
                    lock, doc, holder, token, status["holder"]["podName"], status.get("fencingToken")))
                break
        else:
            if claim.holder is not None and open_sections is not None and \
                    open_sections.get(claim.holder) != int(status["fencingToken"]):
                problems.append("%s: its holder %s is not in its critical section under token %s (it is in %s)"
                                % (lock, claim.holder, status["fencingToken"], open_sections.get(claim.holder)))
    return problems


def _held_shape_problem(capacity, held, waiting):
    """What is wrong with the Held claims of a lock against its capacity and their access, or
    None: one Held on a plain lock; on capacity above 1 one Exclusive alone or up to capacity
    Shared ones, and no Shared claim waiting while there is room and no Exclusive claim."""
    if capacity == 1 or not held:
        return None if len(held) == 1 else "%d Held" % len(held)
    if any(not c.shared for c, _l in held) and len(held) > 1:
        return "an Exclusive claim Held beside %d others" % (len(held) - 1)
    if len(held) > capacity:
        return "%d Held on capacity %d" % (len(held), capacity)
    if len(held) < capacity and all(c.shared for c, _l in held + waiting) and waiting:
        return "%d Held on capacity %d while %d Shared claims wait" % (len(held), capacity, len(waiting))
    return None


def _direct_problems(claimants, documents, running, open_sections):
    problems = []
    for doc, (holder, token) in sorted(documents.items()):
        if holder not in running:
            problems.append("%s: held by %s, which does not run" % (doc, holder))
        elif open_sections is not None and open_sections.get(holder) != int(token):
            problems.append("%s: its holder %s is not in its critical section under token %s (it is in %s)"
                            % (doc, holder, token, open_sections.get(holder)))
    for c in claimants:
        if c.holder not in running:
            continue
        shape = c.shape
        mine = {lock: [d for d in slot_ids(lock, shape.capacity) if documents.get(d, (None,))[0] == c.holder]
                for lock in shape.locks}
        works = open_sections.get(c.holder) is not None if open_sections is not None else any(mine.values())
        if works:
            need = 1 if shape.shared else shape.capacity
            if any(len(held) != need for held in mine.values()):
                problems.append("%s holds part of its claim: %s" % (c.holder, ", ".join(
                    "%s: %d of %d" % (lock, len(held), need) for lock, held in sorted(mine.items()))))
        elif not any(_no_room(lock, c.holder, shape, documents) for lock in shape.locks):
            problems.append("%s waits while %s has room for it" % (c.holder, ", ".join(shape.locks)))
    return problems


def _no_room(lock, holder, shape, documents):
    """Whether another holder keeps the claimant off the lock: any slot for an Exclusive claim,
    every slot for a Shared one."""
    others = [d for d in slot_ids(lock, shape.capacity) if d in documents and documents[d][0] != holder]
    return len(others) == shape.capacity if shape.shared else bool(others)
