"""The lock-set scenario's queueing rule and checks on a Lease watch stream, kept apart from
the processes the benchmark runs so that they can be tested on hand-made sets and events."""


def grants_by_rank(held, waiting):
    """The claims the design's queueing rule ("Lock shapes") grants now, in rank order, for
    capacity-1 Exclusive locks: `held` are the lock sets of the live holders, `waiting` the
    live waiting claims as (claim, lock set) in rank order. Walking the queue once, a claim
    whose locks are all free takes them; one that cannot be served yet keeps what is free of
    its locks, so no claim ranked below it takes that. Either way its locks are gone for the
    claims below it."""
    unavailable = set().union(*held)
    grants = []
    for claim, locks in waiting:
        if not locks & unavailable:
            grants.append(claim)
        unavailable |= locks
    return grants


def not_holding_their_sets(holders, owners):
    """The claims in `holders` (claim -> lock set) some of whose locks' documents name another
    Lease or are missing; `owners` maps a lock to the Lease name its document names."""
    return sorted(claim for claim, locks in holders.items() if any(owners.get(lock) != claim for lock in locks))


class SetChecks:
    """Sees every watch event of the namespace, in order, under the watcher's lock, for the
    claims whose lock sets the bench registered in `sets` before creating their Leases: which
    were granted and when, and what breaks the rules of a lock set:
      - two Leases shown Held at once whose sets share a lock, both of claims whose pod the
        bench has not deleted (`overlapping_live`, as pairs); the pairs where one of the two is
        a deleted holder are counted apart (`overlapping_shown`): the controller tells the
        successor first, so a dead holder's Lease leaves Held a moment after its locks moved on;
      - a Lease shown Held without a fencing token, or with another token than the one it was
        first shown Held with (a second grant to a claim whose pod was deleted counts too);
      - a live holder's Lease shown out of Held (nothing in the scenario takes a set away from
        a live holder)."""

    def __init__(self):
        self.sets = {}  # claim -> frozenset of its lock names
        self.deleted = set()  # claims whose pod the bench has deleted
        self.tokens = {}  # claim -> the token it was first seen Held with
        self.granted = []  # (claim, time first seen Held), in that order
        self.held_now = set()
        self.overlapping_live = set()
        self.overlapping_shown = set()
        self.held_without_token = 0
        self.token_changes = 0
        self.live_departures = 0

    def __call__(self, name, phase, token, seen):
        if name not in self.sets:
            return
        if phase != "Held":
            if name in self.held_now and name not in self.deleted:
                self.live_departures += 1
            self.held_now.discard(name)
            return
        if not token:
            self.held_without_token += 1
        if name not in self.tokens:
            self.tokens[name] = token
            self.granted.append((name, seen))
        elif token != self.tokens[name]:
            self.token_changes += 1
        for other in self.held_now - {name}:
            if self.sets[other] & self.sets[name]:
                pair = tuple(sorted((name, other)))
                live = not {name, other} & self.deleted
                (self.overlapping_live if live else self.overlapping_shown).add(pair)
        self.held_now.add(name)

    def live_holders(self):
        return self.held_now - self.deleted

    def violations(self):
        return dict(overlapping_live_holders=len(self.overlapping_live), held_without_token=self.held_without_token,
                    token_changes=self.token_changes, live_holders_leaving_held=self.live_departures)

