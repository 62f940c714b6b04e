"""Safety under chaos, as the controller publishes it and as the workloads holding the locks
see it.

Two eslease-controller replicas (leader election) serve locks whose claimants are pods; each
pod's container is a real `eslease run LOCK [LOCK...] --pod POD -- CMD` in Kubernetes mode,
on plain locks, in the shapes of KUBE_SHAPES (a semaphore, a read-write lock) and as the lock
sets of KUBE_SETS, overlapping each other, the plain locks and the shapes; and direct-
mode `eslease --es URL run` processes contend on other locks of the same index in every lock
shape (DIRECT_SHAPES): plain locks, a semaphore, a read-write lock, overlapping lock sets. CMD
(critical_section.py) records its critical section and, while in it, writes one document
per lock to a protected index with its fencing token as external version. Election-mode
locks are served beside them. The mix (mix.py) then deletes, fails and un-readies pods,
takes nodes down, partitions them from the API server and powers them off (the emulator's
node lifecycle controller marks a silent node Unknown after a shortened grace), makes
Elasticsearch and the API server fail, drop and lose the answers of writes they applied,
deletes Leases as an operator would, pauses holders past their validity and cuts them off
from the API server, pauses, kills and doubles controllers, and kills the leader just as a
holder's death is to be handed over. Some
holders run with their clock skewed within the safety margin (`--skew-beyond-margin`: some
beyond it).

Every Pod, Lease and session change is recorded from the API's watch streams and replayed
in resourceVersion order (safety.py), the holders' journals are checked (workload_check.py),
and after the chaos stops every claim must settle (convergence.py). Prints JSON; exits 1 on
a violation or when the locks do not settle. With `--expect-skew-violations` (for a
`--skew-beyond-margin` run) it exits 0 only when the checker reported overlapping critical
sections, all of holders skewed beyond the margin, while the protected index accepted no
stale write and nothing else was violated.

The Elasticsearch is ESLEASE_TEST_BACKEND's (tests/engines/backend.py): on a real OpenSearch
node the Elasticsearch faults come from the fault proxy in front of it (every fault but a
primary failover, which only the emulator can stage).

usage: chaos_bench.py BIN_DIR SOURCE_DIR [--seconds 60] [--locks 8] [--claimants 3]
                      [--election-locks 3] [--direct-locks 2]
                      [--no-direct-shapes | --no-kube-shapes | --expect-shape-grants]
                      [--step-ms 60] [--seed N]
                      [--skew-beyond-margin [--expect-skew-violations]] [--history FILE] [--logs DIR]
"""

import argparse
import json
import os
import random
import shutil
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from api_proxy import ApiProxy  # noqa: E402
from controller_env import Environment, lease, namespace, pod, wait_for  # noqa: E402
from convergence import Claim, DirectClaimant, slot_ids, unconverged  # noqa: E402
from holders import Holder, Holders, Timings  # noqa: E402
from mix import Chaos  # noqa: E402
from recorder import Recorder, call  # noqa: E402
from safety import check  # noqa: E402
from validity import parse_time  # noqa: E402
from workload_check import (HolderProfile, Shape, check_fencing, check_sections, failing_first,  # noqa: E402
                            grants_by_shape, read_journals, set_grants_by_holder)

NS = "chaos"
INDEX = "eslease-locks"
PROTECTED_INDEX = "chaos-protected"
TIMINGS = Timings(ttl=4, grace=0.5, liveness_grace=1, es_timeout=1.0)
# Every controller: a client rate that chaos does not throttle, and an Elasticsearch timeout
# that answers held back by the faults outlast (TIMINGS.es_timeout).
CONTROLLER_FLAGS = ["--kube-api-qps", "1000", "--kube-api-burst", "2000", "--es-timeout", "1s"]
# The direct-mode claimants beside those of the plain locks dlock-K: (holder, locks, capacity,
# Shared). dsem is a semaphore of 3 slots; drw a read-write lock of capacity 3; the sets share
# locks with each other (dpool), with single claims (dlock-0, dlock-1, dsem, drw) and with the
# semaphore, each applying its one shape to all of its locks. Every claimant of one lock states
# its capacity.
DIRECT_SHAPES = [("sem-0", ["dsem"], 3, True), ("sem-1", ["dsem"], 3, True), ("sem-2", ["dsem"], 3, True),
                 ("read-0", ["drw"], 3, True), ("read-1", ["drw"], 3, True), ("write-0", ["drw"], 3, False),
                 ("set-plain", ["dlock-0", "dlock-1"], 1, False), ("set-shared", ["dsem", "dpool"], 3, True),
                 ("set-writer", ["dpool", "drw"], 3, False)]
# The claim-mode shapes: (lock, capacity, access of each claimant pod's claim). ksem is a
# semaphore of 3 slots with one claimant more than it has room for; krw a read-write lock of
# capacity 3 with Shared readers and an Exclusive writer. Each claim is a real `eslease run LOCK
# --capacity 3 [--exclusive]` in its pod. Election mode has no shapes: an election claim is one
# claim whatever its capacity, so it never has more than one holder.
KUBE_SHAPES = [("ksem", 3, [True] * 4), ("krw", 3, [True, True, False])]
# The claim-mode lock sets, each one pod's `eslease run LOCK1 LOCK2 ... [--capacity 3
# --exclusive]`: (pod, locks, capacity, Shared). kset-0 and kset-1 overlap on kx and ky, named in
# other orders; kset-0 shares lock-0 with its three single claimants; kset-2 and kset-3 overlap
# on kpool, kset-3 a Shared slot of the semaphore ksem, kset-2 a writer of krw. A set's shape
# applies to each of its locks, so every claimant of kpool states ksem's capacity.
KUBE_SETS = [("kset-0", ["lock-0", "kx", "ky"], 1, False), ("kset-1", ["ky", "kz", "kx"], 1, False),
             ("kset-2", ["krw", "kpool"], 3, False), ("kset-3", ["kpool", "ksem"], 3, True)]
# The nodes' heartbeats, shortened as TIMINGS shortens the tool's: each kubelet renews its node
# Lease every half second, and the node lifecycle controller marks a node it has not heard from
# for NODE_GRACE seconds Unknown (Kubernetes: 10 s, 50 s), looking every quarter second.
NODE_GRACE = 3.0
KUBE_FLAGS = ["--node-lease-renew-interval", "500ms", "--node-monitor-grace-period", "%dms" % (NODE_GRACE * 1000),
              "--node-monitor-period", "250ms"]
# The replicas: a leader election quick enough for a short run; its renew deadline is what
# lost or late answers to Lease updates bite.
ELECTION_FLAGS = ["--leader-elect", "--leader-election-namespace", "default", "--leader-election-lease-duration",
                  "2s", "--leader-election-renew-deadline", "1500ms", "--leader-election-retry-period", "500ms"]


class Cast:
    """Everything a run is made of: the emulators, the record, the pods, claims and holders,
    and the controllers."""

    def __init__(self, env, args, rng):
        self.env = env
        self.ns = NS
        self.index = INDEX
        self.timings = TIMINGS
        self.node_grace = NODE_GRACE
        self.recorder = Recorder(env.kube_url, NS)
        self.proxy = ApiProxy(urllib.parse.urlparse(env.kube_url).netloc)
        self.holders = Holders(env, self.proxy, rng, TIMINGS, NS, PROTECTED_INDEX, os.path.join(env.dir, "journals"))
        self.pods = {}  # name -> labels
        self.claims = []  # [Claim] the run expects, for rule (c)
        self.election_claims = {}  # name -> Lease object as first applied
        self.direct_locks = {}  # name -> capacity
        self.rogues = []
        self.controller_seq = 0
        self._cast(args, rng)

    def _cast(self, args, rng):
        t = self.timings
        # Behind by a whole lease duration past the margin and the grace: cut off from the API
        # server, such a holder works on well after its successor has started.
        beyond = -(t.margin + t.grace + t.ttl)
        self.skew_beyond_margin = args.skew_beyond_margin
        for i in range(args.locks):
            for j in range(args.claimants):
                name = "w-%d-%d" % (i, j)
                skew = 0.0
                if args.skew_beyond_margin and j == 0:
                    skew = beyond
                elif rng.random() < 0.4:
                    skew = rng.uniform(-0.75, 0.75) * t.margin
                self.add_pod_holder(rng, name, ["lock-%d" % i], skew=skew)
        for lock, capacity, accesses in (KUBE_SHAPES if args.kube_shapes else []):
            for j, shared in enumerate(accesses):
                self.add_pod_holder(rng, "%s-%d" % (lock, j), [lock], capacity, shared)
        for name, locks, capacity, shared in (KUBE_SETS if args.kube_shapes else []):
            if all(not lock.startswith("lock-") or int(lock[5:]) < args.locks for lock in locks):
                self.add_pod_holder(rng, name, locks, capacity, shared)
        for k in range(args.election_locks):
            for j in range(args.claimants):
                self.pods["g-%d-%d" % (k, j)] = {"app": "elected", "group": "g-%d" % k}
            self.election_claims["elect-%d" % k] = lease("elect-%d" % k, NS, "election-%d" % k,
                                                         selector={"group": "g-%d" % k},
                                                         leaseDurationSeconds=t.ttl,
                                                         livenessGraceSeconds=t.liveness_grace)
            self.claims.append(Claim("elect-%d" % k, "election-%d" % k))
        for k in range(args.direct_locks):
            self.direct_locks["dlock-%d" % k] = 1
            for j in range(args.claimants):
                skew = rng.uniform(-0.75, 0.75) * t.margin if rng.random() < 0.4 else 0.0
                self.holders.add(Holder("direct/h-%d-%d" % (k, j), "direct", "dlock-%d" % k, skew))
        for name, locks, capacity, shared in (DIRECT_SHAPES if args.direct_shapes else []):
            if any(lock.startswith("dlock-") and lock not in self.direct_locks for lock in locks):
                continue  # a plain lock this run does not have (--direct-locks below 2)
            self.direct_locks.update(dict.fromkeys(locks, capacity))
            skew = rng.uniform(-0.75, 0.75) * t.margin if rng.random() < 0.4 else 0.0
            self.holders.add(Holder("direct/" + name, "direct", locks[0], skew, shape=(locks, capacity, shared)))

    def add_pod_holder(self, rng, name, locks, capacity=1, shared=False, skew=None):
        """A claimant pod whose container claims `locks` (one, or a set) with the shape given,
        and the claim the run expects of it. Its clock is skewed within the margin at times."""
        margin = self.timings.margin
        if skew is None:
            skew = rng.uniform(-0.75, 0.75) * margin if rng.random() < 0.4 else 0.0
        self.pods[name] = {"app": "worker"}
        shape = (locks, capacity, shared) if len(locks) > 1 or capacity > 1 else None
        holder = self.holders.add(Holder("%s/%s" % (NS, name), "kubernetes", locks[0], skew, pod=name,
                                         priority=rng.choice(["Foreground", "Background"]), shape=shape))
        self.claims.append(Claim(holder.lease_name(), locks, name, holder.name, capacity, shared))

    def setup(self):
        self.env.apply(namespace(NS))
        call("PUT", "%s/%s" % (self.env.es_url, PROTECTED_INDEX), {"settings": {"number_of_shards": 1}})
        self.env.apply(*[self.pod_object(name, labels) for name, labels in self.pods.items()])
        self.env.apply(*self.election_claims.values())
        for _ in range(2):
            self.start_controller()

    def pod_object(self, name, labels):
        return pod(name, NS, labels)

    def start_controller(self):
        self.controller_seq += 1
        return self.env.start_controller(*(ELECTION_FLAGS + CONTROLLER_FLAGS),
                                         name="controller-%d" % (self.controller_seq - 1))

    def start_rogue(self):
        """A controller without leader election: it acts beside the leader."""
        rogue = self.env.start_controller(*CONTROLLER_FLAGS, name="rogue-%d" % len(self.rogues))
        self.rogues.append(rogue)
        return rogue

    # --- the state rule (c) reads ----------------------------------------------------------
    def documents(self):
        """lock id -> (holder, token) of every lock document, for the run's locks."""
        ids = [doc for c in self.claims for lock in c.locks for doc in slot_ids("%s/%s" % (NS, lock), c.capacity)]
        return {doc: (source.get("holder"), token) for doc, (source, token) in self._read(ids).items()}

    def direct_documents(self):
        """slot document id -> (holder name, token) of the live slot documents of the direct
        locks (an expired one is as good as free: the next claimant takes it over)."""
        ids = [doc for lock, capacity in self.direct_locks.items() for doc in slot_ids("direct/" + lock, capacity)]
        now = time.time()
        return {doc: ("direct/" + source.get("holder"), token) for doc, (source, token) in self._read(ids).items()
                if (parse_time(source.get("expiresAt")) or now) >= now}

    def _read(self, ids):
        """id -> (source, token) of the lock documents found."""
        found = call("POST", "%s/%s/_mget" % (self.env.es_url, INDEX), {"ids": sorted(set(ids))}) or {"docs": []}
        docs = {}
        for d in found["docs"]:
            if d.get("found"):
                source = d["_source"]
                token = source.get("fencingToken") or (d["_primary_term"] << 32) | d["_seq_no"]
                docs[d["_id"]] = (source, str(token))
        return docs

    def open_sections(self):
        """holder -> token of the critical section its running command is in now."""
        sections, _ = read_journals(line for path in self.holders.journal_paths() for line in open(path))
        latest = {}
        for s in sections:
            if s.holder not in latest or s.start > latest[s.holder].start:
                latest[s.holder] = s
        holders = self.holders.holders
        # A section its command's kill left open belongs to a run before the current one.
        return {h: s.token for h, s in latest.items()
                if not s.stopped and holders[h].running() and s.start >= holders[h].started}

    def unconverged(self, workloads=True):
        """Rule (c)'s problems left; without `workloads`, only the claims and documents."""
        running = {h.name for h in self.holders.holders.values() if h.running()}
        return unconverged(NS, self.recorder.snapshot("lease"), self.claims, self.documents(), running,
                           self.open_sections() if workloads else None, self.direct_claimants(),
                           self.direct_documents())

    def direct_claimants(self):
        """[DirectClaimant], their locks named by id ("direct/<lock>") as their journals name them."""
        claimants = []
        for h in self.holders.holders.values():
            if h.mode == "direct":
                locks, capacity, shared = h.claim()
                claimants.append(DirectClaimant(h.name, Shape(["direct/" + lock for lock in locks], capacity, shared)))
        return claimants

    def profiles(self):
        """holder name -> HolderProfile, with its claim's shape for a direct holder."""
        t = self.timings
        shapes = {c.holder: c.shape for c in self.direct_claimants()}
        shapes.update({h.name: Shape(["%s/%s" % (NS, lock) for lock in h.shape[0]], *h.shape[1:])
                       for h in self.holders.holders.values() if h.mode == "kubernetes" and h.shape})
        return {h.name: HolderProfile(h.mode, t.ttl, t.margin, t.grace, h.skew, shapes.get(h.name))
                for h in self.holders.holders.values()}


def protected_versions(env, locks):
    """lock id -> the protected document's version (None when missing)."""
    found = call("POST", "%s/%s/_mget" % (env.es_url, PROTECTED_INDEX), {"ids": sorted(locks)}) or {"docs": []}
    return {d["_id"]: d.get("_version") if d.get("found") else None for d in found["docs"]}


def emulator_counter(url, name):
    return (call("GET", url + "/_emulator/stats") or {}).get(name)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--locks", type=int, default=8, help="claim-mode locks, each with --claimants holder pods")
    parser.add_argument("--claimants", type=int, default=3)
    parser.add_argument("--election-locks", type=int, default=3)
    parser.add_argument("--direct-locks", type=int, default=2, help="plain locks of direct-mode processes")
    parser.add_argument("--no-direct-shapes", dest="direct_shapes", action="store_false",
                        help="leave out the direct-mode semaphore, read-write lock and lock sets")
    parser.add_argument("--no-kube-shapes", dest="kube_shapes", action="store_false",
                        help="leave out the claim-mode semaphore, read-write lock and lock sets")
    parser.add_argument("--expect-shape-grants", action="store_true",
                        help="exit 1 unless grants of every lock shape reached their workloads (writers "
                             "excepted: a short run under load may give a read-write lock's writer no turn) "
                             "and, with the claim-mode sets, a Lease of a set was shown Held")
    parser.add_argument("--step-ms", type=float, default=60, help="mean pause between two chaos steps")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--skew-beyond-margin", action="store_true",
                        help="one holder of every claim-mode lock runs with its clock behind by more than the margin")
    parser.add_argument("--expect-skew-violations", action="store_true",
                        help="exit 0 only if overlaps of holders skewed beyond the margin were found, and nothing else")
    parser.add_argument("--history", help="write every recorded Pod, Lease and session event here (JSON lines)")
    parser.add_argument("--logs", help="copy every process's output and the holders' journals into this directory")
    return parser.parse_args()


def run_chaos(cast, chaos, args, rng):
    started = time.monotonic()
    while time.monotonic() - started < args.seconds:
        chaos.step()
        chaos.run_due()
        time.sleep(rng.expovariate(1000.0 / args.step_ms))
    return time.monotonic() - started


def settle(cast, chaos):
    """Calms the cluster and waits for rule (c); returns (converged, seconds, problems left)."""
    chaos.calm()
    calm_at = time.monotonic()
    try:
        wait_for(chaos.settled, 60, "every pod to be Ready again", interval=0.2)
        wait_for(lambda: chaos.settled() and not cast.unconverged(), 90, "every claim to settle", interval=0.2)
        return True, time.monotonic() - calm_at, []
    except AssertionError:
        return False, time.monotonic() - calm_at, cast.unconverged()


def check_workloads(cast, validity):
    profiles = cast.profiles()
    lines = [line for path in cast.holders.journal_paths() for line in open(path)]
    sections, writes = read_journals(lines)

    def published(section):
        if section.lease is None:
            return None
        return validity.published_until(section.lock.split("/", 1)[0], section.lease, section.token)[0]

    section_report = check_sections(sections, profiles, cast.holders.pauses(), published, cast.holders.kills())
    locks = {w.lock for w in writes}
    return section_report, check_fencing(writes, protected_versions(cast.env, locks)), \
        grants_by_shape(sections, profiles), set_grants_by_holder(sections, profiles)


class Findings:
    """What a run found: its checks' results and whether the claims settled."""

    def __init__(self, cast, chaos_seconds, settled):
        self.chaos_seconds = chaos_seconds
        self.converged, self.convergence_seconds, self.problems = settled
        self.events = cast.recorder.history()
        self.gaps = cast.recorder.gaps
        self.safety = check(self.events)
        self.sections, self.fencing, self.shape_grants, self.set_grants = check_workloads(cast,
                                                                                          self.safety.validity)
        self.kube_sets = any(h.mode == "kubernetes" and len(h.claim()[0]) > 1 for h in cast.holders.holders.values())

    def violations(self, expect_skew_violations=False):
        """Every violation, those that fail the run first."""
        return failing_first(self.safety.violations + self.fencing.violations + self.sections.violations,
                             expect_skew_violations)

    def shape_grants_seen(self):
        """Whether grants of every lock shape reached their workloads (writers excepted), and a
        Lease of a lock set was shown Held when pods claim sets."""
        if self.kube_sets and not self.safety.set_grants:
            return False
        return all(count for kind, count in self.shape_grants.items() if not kind.endswith("exclusive"))

    def passed(self, expect_skew_violations, expect_shape_grants=False):
        if not self.converged or self.gaps or self.safety.violations or self.fencing.violations:
            return False
        if expect_shape_grants and not self.shape_grants_seen():
            return False
        overlaps = self.sections.violations
        if expect_skew_violations:
            return bool(overlaps) and all(v.get("cause") == "skew_beyond_margin" for v in overlaps)
        return not overlaps


def fault_counts(cast, chaos):
    """The faults injected, with the writes the emulators applied but never answered."""
    faults = {"holder_paused": 0, "controller_paused": 0}
    faults.update(chaos.counts)
    faults["es_write_applied_unanswered"] = emulator_counter(cast.env.es_url, "es_write_applied_unanswered")
    faults["kube_write_applied_unanswered"] = emulator_counter(cast.env.kube_url, "kube_write_applied_unanswered")
    faults["holder_clock_skewed"] = sum(1 for h in cast.holders.holders.values() if h.skew)
    return dict(sorted(faults.items()))


def write_history(path, events):
    with open(path, "w") as out:
        for rv, kind, event_type, obj, seen in sorted(events, key=lambda e: e[0]):
            out.write(json.dumps({"rv": rv, "kind": kind, "type": event_type, "object": obj, "seen": seen}) + "\n")


def report(args, seed, cast, chaos, found):
    safety, sections = found.safety, found.sections
    exits = {}
    for h in cast.holders.holders.values():
        for code, n in h.exits.items():
            exits[str(code)] = exits.get(str(code), 0) + n
    violations = found.violations(args.expect_skew_violations)
    return {
        "benchmark": "chaos",
        "backend": cast.env.elasticsearch.describe(),
        "seed": seed,
        "chaos_seconds": round(found.chaos_seconds, 1),
        "locks": args.locks, "election_locks": args.election_locks, "direct_locks": args.direct_locks,
        "claimants_per_lock": args.claimants,
        "timings_seconds": {"ttl": TIMINGS.ttl, "safety_margin": TIMINGS.margin, "grace": TIMINGS.grace,
                            "liveness_grace": TIMINGS.liveness_grace, "es_timeout": TIMINGS.es_timeout,
                            "node_monitor_grace": NODE_GRACE},
        "skew_beyond_margin": args.skew_beyond_margin,
        "faults_injected": sum(chaos.counts.values()),
        "faults": fault_counts(cast, chaos),
        "controllers_started": cast.controller_seq + len(cast.rogues),
        "events_replayed": len(found.events),
        "history_gaps": found.gaps,
        "grants_observed": safety.grants,
        "set_grants_observed": safety.set_grants,
        "handovers": safety.handovers,
        "late_grants_shown": safety.late_grants,
        "takeovers_by_reason": dict(sorted(safety.takeovers.items())),
        "min_after_validity_slack_ms": None if safety.min_validity_slack is None
        else round(safety.min_validity_slack * 1000, 1),
        "healing": dict(sorted(chaos.healing.items())),
        "holder_runs": {"started": cast.holders.runs_started, "exits": dict(sorted(exits.items()))},
        "critical_sections_checked": sections.checked,
        "critical_section_overlaps": {"excused_paused_past_validity": sections.excused,
                                      "violations": len(sections.violations),
                                      "of_holders_skewed_beyond_margin": sections.skew_beyond_margin},
        "fenced_writes": found.fencing.summary(),
        "shape_grants": found.shape_grants,
        "set_grants_by_holder": found.set_grants,
        "most_shared_holders_at_once": found.sections.most_at_once,
        "violations": len(violations),
        "violation_details": violations[:20],
        "converged": found.converged,
        "convergence_seconds": round(found.convergence_seconds, 2),
        "unconverged": found.problems[:20],
    }


def main():
    args = parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)

    with Environment(args.bin, args.source, kube_args=KUBE_FLAGS) as env:
        cast = Cast(env, args, rng)
        chaos = Chaos(cast, rng)
        try:
            cast.setup()
            wait_for(lambda: chaos.settled() and not cast.unconverged(workloads=False), 90,
                     "every lock to be held before the chaos starts", interval=0.2)
            chaos_seconds = run_chaos(cast, chaos, args, rng)
            settled = settle(cast, chaos)
        finally:
            cast.holders.stop_all()
            cast.recorder.stop()
            cast.proxy.stop()
        found = Findings(cast, chaos_seconds, settled)
        if args.history:
            write_history(args.history, found.events)
        print(json.dumps(report(args, seed, cast, chaos, found), indent=2))
        if args.logs:
            shutil.copytree(env.dir, args.logs, dirs_exist_ok=True)
        sys.exit(0 if found.passed(args.expect_skew_violations, args.expect_shape_grants) else 1)


if __name__ == "__main__":
    main()
