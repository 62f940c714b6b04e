"""Rule (c) of the chaos checker, on the state once the chaos has stopped: every claim ends
in a phase and none is lost.

- every Lease shows a phase the design names, written for its current generation;
- every claimant whose tool runs has its claim: Held, or Pending with its place in the
  queue (positions 0, 1, ... among the lock's waiting claims, as the first ten are kept
  exact; a set shows where it stands furthest back, so on a lock where sets wait only the
  single claims' positions are exact, and the k-th smallest position is at least k);
- no lock shows more Held claims than it has room for: one on a plain lock, an Exclusive
  one alone or Shared ones up to its capacity on a lock of capacity above 1, a set's claim
  counting on each of its locks; each Held claim agrees with the lock documents of its grant
  on every lock of its claim (holder and fencing token; its slot when Shared, every slot when
  Exclusive), so no set is Held on part of its locks;
- every claim that waits has a reason: a lock of its claim where the holders, and the claims
  that wait for a reason themselves (each keeps what it needs of what is free: one slot when
  Shared, every free slot when Exclusive), leave it no room. The controller grants in one
  total order, so its waiting claims always have one; a claim waiting on free locks behind
  nobody has none;
- the holder of every Held claim runs its critical section under that token: the grant
  reached the workload, and the workload still works under it;
- outside Kubernetes, every live slot document belongs to a holder that runs and works under
  its token; every claimant that works holds its whole claim (one slot of each lock of its
  set when Shared, every slot when Exclusive); every claimant that waits has a reason: a lock
  of its claim with no room for it. So every set claimant ends holding all of its set, or
  waiting behind a holder, never on part of it or behind nobody.

Pure: the caller gathers the state; tested on hand-made states.
"""

import re

PHASES = ("Pending", "Held", "Released", "TimedOut", "Invalid")


class Claim:
    """A claim the run expects: a Lease of `lock` (a name, or a list of names for a lock set)
    for `pod` (None for an election claim), and the holder whose tool made it (None when the
    run applied it itself). Capacity and access apply to each of its locks."""

    def __init__(self, lease, lock, pod=None, holder=None, capacity=1, shared=False):
        self.lease = lease
        self.locks = [lock] if isinstance(lock, str) else list(lock)
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


def default_lease_name(locks, pod):
    """The tool's name for a pod's claim when none is given (src/cli/lease_view.cpp):
    `LOCK-POD` for one lock; for a set its first lock by name, `-set-`, eight hex digits of
    the FNV-1a hash of its sorted names (each followed by a newline), and the pod; a hash of
    both when that is no valid object name."""
    ordered = sorted(locks)
    text = "".join(lock + "\n" for lock in ordered)
    if len(ordered) == 1:
        name = "%s-%s" % (ordered[0], pod)
    else:
        name = "%s-set-%08x-%s" % (ordered[0], _fnv1a(text) & 0xffffffff, pod)
    if len(name) <= 253 and all(re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", part) for part in name.split(".")):
        return name
    return "eslease-%016x" % _fnv1a(text + pod)


def _fnv1a(text):
    value = 1469598103934665603  # the tool's offset basis (not FNV's usual one)
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001b3) & 0xffffffffffffffff
    return value



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
    problems += _claim_problems(claims, leases, running, open_sections)
    by_lock = {}
    for claim in claims:
        for lock in claim.locks:
            by_lock.setdefault(lock, []).append(claim)
    for lock, expected in sorted(by_lock.items()):
        problems += _lock_problems(ns, lock, expected, leases, documents)
    problems += _waiting_without_reason(claims, leases)
    if direct_claimants:
        problems += _direct_problems(direct_claimants, direct_documents or {}, running, open_sections)
    return problems


def _phase(claim, leases):
    return _status(leases.get(claim.lease)).get("phase")


def _claim_problems(claims, leases, running, open_sections):
    """Each claim on its own: there while its holder runs, Held or Pending then, and its
    holder working under the token of its grant."""
    problems = []
    for claim in claims:
        what = ",".join(claim.locks)
        lease = leases.get(claim.lease)
        runs = claim.holder is None or claim.holder in running
        if lease is None:
            if runs:
                problems.append("%s: claim %s is lost (no Lease)" % (what, claim.lease))
            continue
        status = _status(lease)
        if runs and status.get("phase") in PHASES and status["phase"] not in ("Held", "Pending"):
            problems.append("%s: claim %s is %s while its holder runs" % (what, claim.lease, status["phase"]))
        if status.get("phase") == "Held" and claim.holder is not None and open_sections is not None and \
                open_sections.get(claim.holder) != int(status["fencingToken"]):
            problems.append("%s: its holder %s is not in its critical section under token %s (it is in %s)"
                            % (what, claim.holder, status["fencingToken"], open_sections.get(claim.holder)))
    return problems


def _lock_problems(ns, lock, expected, leases, documents):
    present = [(c, leases[c.lease]) for c in expected if c.lease in leases]
    held = [(c, l) for c, l in present if _status(l).get("phase") == "Held"]
    waiting = [(c, l) for c, l in present if _status(l).get("phase") == "Pending"]
    shape_problem = _held_shape_problem(expected[0].capacity, [c for c, _l in held])
    if shape_problem:
        return ["%s: %s" % (lock, shape_problem)]
    problems = []
    if not _queue_in_order(waiting):
        problems.append("%s: waiting claims at queue positions %s"
                        % (lock, sorted(_position(l) for _c, l in waiting)))
    for claim, lease in held:
        problem = _grant_document_problem(ns, lock, claim, lease["status"], documents)
        if problem:
            problems.append("%s: %s" % (lock, problem))
    return problems


def _position(lease):
    position = _status(lease).get("queuePosition")
    return -1 if position is None else position


def _queue_in_order(waiting):
    """Whether the waiting claims of one lock show their places: the claims ranked ahead on
    the lock are 0, 1, ... for those on this lock alone, at least as many for a set (it shows
    where it stands furthest back), so the k-th smallest position is at least k."""
    shown = sorted(_position(l) for _c, l in waiting)
    singles = [_position(l) for c, l in waiting if len(c.locks) == 1]
    if len(singles) == len(shown):
        return shown == list(range(len(shown)))
    return len(set(singles)) == len(singles) and all(0 <= p < len(shown) for p in singles) and \
        all(p >= k for k, p in enumerate(shown))


def _grant_document_problem(ns, lock, claim, status, documents):
    """What disagrees between a Held claim and its lock documents on `lock`, or None: every
    slot is its when Exclusive; when Shared, its slot (status.slot names the one on the
    claim's first lock; on a set's other locks any one slot)."""
    slots = slot_ids("%s/%s" % (ns, lock), claim.capacity)
    mine = ("%s/%s" % (ns, status["holder"]["podName"]), status.get("fencingToken"))
    if not claim.shared:
        expected = slots
    elif lock == claim.locks[0]:
        expected = [slots[status.get("slot") or 0]]
    elif any(documents.get(doc) == mine for doc in slots):
        return None
    else:
        return "no slot document shows Lease %s/%s" % (mine[0].split("/", 1)[1], mine[1])
    for doc in expected:
        holder, token = documents.get(doc) or (None, None)
        if (holder, token) != mine:
            return "document %s %s/%s, Lease %s/%s" % (doc, holder, token, status["holder"]["podName"], mine[1])
    return None


def _held_shape_problem(capacity, held):
    """What is wrong with the Held claims of a lock against its capacity and their access, or
    None: at most one on a plain lock; on capacity above 1 one Exclusive alone or up to
    capacity Shared ones."""
    if capacity == 1:
        return None if len(held) <= 1 else "%d Held" % len(held)
    if any(not c.shared for c in held) and len(held) > 1:
        return "an Exclusive claim Held beside %d others" % (len(held) - 1)
    if len(held) > capacity:
        return "%d Held on capacity %d" % (len(held), capacity)
    return None


def _waiting_without_reason(claims, leases):
    """The waiting claims with no lock of their claim kept from them (see the module's text):
    a claim has a reason once the holders, with the claims found to have one, leave it no
    room on one of its locks; repeated until no claim is found to have one any more. Holders
    are never pre-empted and the queue is one total order, so the first waiting claim waits
    for holders alone and each later one for holders and claims ahead of it: every waiting
    claim of the controller's is found, and a claim nothing keeps waiting is not."""
    held = [c for c in claims if _phase(c, leases) == "Held"]
    waiting = [c for c in claims if _phase(c, leases) == "Pending"]
    reasoned = []
    found = True
    while found:
        found = False
        for claim in waiting:
            if claim not in reasoned and any(_no_room_for(claim, lock, held, reasoned) for lock in claim.locks):
                reasoned.append(claim)
                found = True
    return ["%s: claim %s waits while its locks have room for it" % (",".join(c.locks), c.lease)
            for c in waiting if c not in reasoned]


def _no_room_for(claim, lock, held, keepers):
    """Whether the holders of `lock`, and the waiting claims in `keepers` (each keeps one free
    slot when Shared, every free one when Exclusive), leave no room on it for `claim`."""
    holders = [c for c in held if lock in c.locks]
    keeping = [c for c in keepers if c is not claim and lock in c.locks]
    if any(not c.shared for c in holders + keeping):
        return True
    free = claim.capacity - len(holders) - len(keeping)
    return free < (1 if claim.shared else claim.capacity)


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
