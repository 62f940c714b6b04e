"""The semaphore scenario's checks on a Lease watch stream, kept apart from the processes the
benchmark runs so that they can be tested on hand-made event sequences."""

import collections

SEMAPHORE_CAPACITY = 10
SEMAPHORE_PREFIX = "sem-"


class SemaphoreChecks:
    """Sees every watch event of the namespace, in order, under the watcher's lock: which
    claims of the semaphore were granted and when; the most Held at once, counting every
    Lease shown Held and counting only claims whose pod the bench has not deleted (the
    controller tells the successor first, so the dead holder's Lease leaves Held a moment
    after its slot has moved on); and how often a live holder's Lease left Held or showed
    another token."""

    def __init__(self):
        self.deleted = set()  # claims whose pod the bench has deleted
        self.tokens = {}  # claim -> the token it was first seen Held with
        self.granted = []  # (claim, time first seen Held), in that order
        self.held_now = set()
        self.departures = collections.Counter()  # live claim -> events out of Held or with another token
        self.most_held_shown = 0
        self.most_held_live = 0

    def __call__(self, name, phase, token, seen):
        if not name.startswith(SEMAPHORE_PREFIX):
            return
        live = name not in self.deleted
        if phase == "Held":
            if name not in self.tokens:
                self.tokens[name] = token
                self.granted.append((name, seen))
            elif token != self.tokens[name] and live:
                self.departures[name] += 1
            self.held_now.add(name)
        else:
            if name in self.tokens and live:
                self.departures[name] += 1
            self.held_now.discard(name)
        self.most_held_shown = max(self.most_held_shown, len(self.held_now))
        self.most_held_live = max(self.most_held_live, len(self.held_now - self.deleted))

    def departures_of(self, holders):
        """A mark to pass to `lost_since`: how often each of `holders` has departed so far."""
        return {name: self.departures[name] for name in holders}

    def lost_since(self, mark):
        """How many of the holders in `mark` have since left Held or shown another token (a
        Lease's latest state is its latest event, so one that is not Held with its token now
        has departed)."""
        return sum(1 for name, count in mark.items() if self.departures[name] != count)
