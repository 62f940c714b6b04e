"""The failover benchmark's figures, read from what a run recorded: the API's watch events
(as bench/chaos/recorder.py keeps them: (resourceVersion, kind, type, object, seen)) and
the journals of the holders' commands (bench/chaos/critical_section.py).

For each trial (one lock, a holder and a successor): the time from the failure to the
successor's Lease first shown Held (as a watcher saw it), and to the successor's command
starting under the lock (the first time noted as the tool started it); for a node row, the
first of them also from the node's last heartbeat (its node Lease's renewTime before the
failure). Pure, so the rules are tested on hand-made histories (figures_test.py).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cluster import summary_ms  # noqa: E402


class Trial:
    """One lock of a row: its holder's and successor's pods (and Leases), where they run, and
    what was measured. Times are wall-clock seconds (time.time())."""

    def __init__(self, index, lock, holder, successor, holder_lease, successor_lease, holder_node, successor_node):
        self.index = index
        self.lock = lock
        self.holder = holder
        self.successor = successor
        self.holder_lease = holder_lease
        self.successor_lease = successor_lease
        self.holder_node = holder_node
        self.successor_node = successor_node
        self.failed_at = None  # when the failure was injected
        self.last_heartbeat = None  # node rows: the holder node's last renewal before it
        self.done = False  # measured, or given up on
        self.recovered = False  # what the failure broke was put right


def first_held_after(events, lease, after):
    """When a watcher first saw Lease `lease` Held at or after `after` (None: never)."""
    for _, kind, event_type, obj, seen in sorted(events, key=lambda e: e[0]):
        if kind != "lease" or event_type == "DELETED" or obj["metadata"]["name"] != lease or seen < after:
            continue
        if (obj.get("status") or {}).get("phase") == "Held":
            return seen
    return None


def first_start_after(starts, holder, after):
    """When the command of `holder` first started at or after `after` (None: never).
    `starts`: (holder, when) for every start of every holder's command."""
    times = [t for h, t in starts if h == holder and t >= after]
    return min(times) if times else None


def trial_figures(trial, events, starts, successor_holder):
    """(to Held, to command start, to Held from the last heartbeat) in seconds for one
    trial; None where it did not happen."""
    if trial.failed_at is None:
        return None, None, None
    held = first_held_after(events, trial.successor_lease, trial.failed_at)
    started = first_start_after(starts, successor_holder, trial.failed_at)
    return (None if held is None else held - trial.failed_at,
            None if started is None else started - trial.failed_at,
            None if held is None or trial.last_heartbeat is None else held - trial.last_heartbeat)


def row_figures(trials, events, starts, holder_name):
    """The summaries of a row's trials: `to_held` and `to_command` (and, for node rows,
    `to_held_from_last_heartbeat`), in ms, over the trials that handed over, and how many did
    not (`not_handed_over`). `holder_name(pod)` names a pod's holder as its journal does."""
    held, started, from_heartbeat, missed = [], [], [], 0
    for trial in trials:
        to_held, to_command, since_heartbeat = trial_figures(trial, events, starts, holder_name(trial.successor))
        if to_held is None:
            missed += 1
            continue
        held.append(to_held)
        if to_command is not None:
            started.append(to_command)
        if since_heartbeat is not None:
            from_heartbeat.append(since_heartbeat)
    out = {"trials": len(trials), "not_handed_over": missed, "to_held": summary_ms(held),
           "to_command": summary_ms(started)}
    if from_heartbeat:
        out["to_held_from_last_heartbeat"] = summary_ms(from_heartbeat)
    return out


def stopped_before(sections, holder, token, moment):
    """How long before `moment` (the end of its validity, its successor's start) the command
    of `holder` under `token` stopped (seconds; negative: it ran past it), None when it has no
    such section, never stopped, or there is no such moment."""
    stops = [s.stop_time for s in sections if s.holder == holder and s.token == token and s.stop_time is not None]
    if not stops or moment is None:
        return None
    return moment - max(stops)
