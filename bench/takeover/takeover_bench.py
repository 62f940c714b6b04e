"""Takeover latency: a holder pod is deleted (gone: confirmed dead) -> the waiting claim's
Lease status is Held, as a watcher of the API sees it. The controller and both emulators
run as separate processes. A semaphore (capacity 10, Shared claims) then loses its holder
pods one at a time, the controller at its default flags: the next waiting claim must get the
freed slot while the other nine holders keep their tokens, and no more than 10 claims may be
Held at once (exit status 1 otherwise).

Then lock sets, also at the default flags: claims each on 3 locks drawn at random (seeded)
from a pool of 8, for their own pods, 8 of them kept waiting; they overlap, so they contend
and a set at the head of the queue keeps the free locks it needs from the claims behind it.
A holder's pod is deleted, one at a time: the oldest holder whose deletion, by the design's
queueing rule, grants a waiting claim (set_checks.grants_by_rank). A hand-over's latency is
the time from the sending of the pod's DELETE (grace period 0, so the object is gone) to the
first watch event showing Held a claim that was not shown Held before the deletion and whose
set shares a lock with the deleted holder's. When every waiting claim also needs a lock of
another holder, no holder's deletion grants anything: the oldest holder's pod is deleted
anyway and that deletion is not timed (`deletions_not_timed`). The run fails when, as the
watcher sees the events in order, two Leases of live claims are shown Held at once on a
shared lock (a deleted holder's Lease may still show Held beside its successor for a moment;
that is counted apart), a Lease is shown Held without a fencing token or with another token
than its first, a live holder's Lease leaves Held, a live claim shown Held does not hold
every lock of its set (its lock documents, read after each hand-over, name another Lease),
or the holders seen are not those the queueing rule grants.

Last, the first scenario runs with --liveness-takeover=false and a short TTL, the way
TTL-based lock libraries hand a lock over, so the two are measured side by side. Prints
JSON; --png FILE draws the histograms.

--backend emulator|opensearch (default: ESLEASE_TEST_BACKEND, else emulator) chooses the
Elasticsearch (tests/engines/backend.py; a real engine is reached directly, without the fault
proxy); --backend emulator,opensearch runs every scenario on each, one after the other, and
reports them side by side under "backends", with the takeover percentiles of each together
under "beside".

Deaths come one at a time, --pause-ms (default 50) apart, as on a cluster: back to back, the
takeovers' own writes would soon use up the client's rate limit at its defaults and each
takeover would wait for the limit (mass-takeover-bench measures that). The floor is the same
three steps a takeover takes (a pod's deletion seen, one conditional write, a Lease write
seen), one after the other from the same quiet machine.

usage: takeover_bench.py BIN_DIR SOURCE_DIR [--backend B[,B]] [--takeovers N] [--ttl-takeovers N]
                         [--semaphore-takeovers N] [--set-takeovers N] [--pause-ms N] [--png FILE]
"""

import argparse
import collections
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace, pod, wait_for  # noqa: E402
from cluster import wait_on  # noqa: E402
from semaphore_checks import SEMAPHORE_CAPACITY, SEMAPHORE_PREFIX, SemaphoreChecks  # noqa: E402
from set_checks import SetChecks, grants_by_rank, not_holding_their_sets  # noqa: E402

NS = "bench"


class LeaseWatcher:
    """Streams Lease watch events and records when each Lease was first seen Held with a
    given fencing token, and each Lease's latest phase and token. `on_event(name, phase,
    token, seen)`, if given, sees every event in order, under `cv`."""

    def __init__(self, kube_url, on_event=None):
        self.url = kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases?watch=1" % NS
        # name -> {token: monotonic time first seen Held}: a wait looks at its own Lease only,
        # not at every Lease seen Held so far (which would slow each wake-up as a run goes on).
        self.held = collections.defaultdict(dict)
        self.current = {}  # name -> (phase, token); phase "Deleted" once the Lease is gone
        self.on_event = on_event
        self.cv = threading.Condition()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        with urllib.request.urlopen(self.url, timeout=3600) as stream:
            for line in stream:
                event = json.loads(line)
                obj = event.get("object", {})
                status = obj.get("status", {})
                name = obj["metadata"]["name"]
                phase = "Deleted" if event.get("type") == "DELETED" else status.get("phase")
                token = status.get("fencingToken")
                seen = time.monotonic()
                with self.cv:
                    if phase == "Held":
                        self.held[name].setdefault(token, seen)
                    self.current[name] = (phase, token)
                    if self.on_event:
                        self.on_event(name, phase, token, seen)
                    self.cv.notify_all()

    def wait_until(self, predicate, timeout, what):
        """Waits, under `cv`, until `predicate()` returns a true value, and returns it."""
        return wait_on(self.cv, predicate, timeout, what)

    def wait_held(self, name, not_token, timeout=60):
        def seen_held():
            for token, seen in self.held.get(name, {}).items():
                if token != not_token:
                    return seen, token
            return None
        return self.wait_until(seen_held, timeout, "Lease %s to be Held" % name)


def request(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.loads(response.read() or b"null")


class KeptAliveConnection:
    """One HTTP connection kept open, so a timed request pays no connection set-up."""

    def __init__(self, base_url):
        url = urllib.parse.urlsplit(base_url)
        self.connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)

    def call(self, method, path, body=None, content_type="application/json"):
        self.connection.request(method, path, body=None if body is None else json.dumps(body),
                                headers={"Content-Type": content_type})
        response = self.connection.getresponse()
        return json.loads(response.read() or b"null")


def create(env, objects):
    for obj in objects:
        if obj["kind"] == "Pod":
            request("POST", env.kube_url + "/api/v1/namespaces/%s/pods" % NS, obj)
        else:
            request("POST", env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS, obj)


def status(env, name):
    return request("GET", env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases/%s" % (NS, name)).get(
        "status", {})


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def summary(latencies):
    ms = [x * 1000 for x in latencies]
    if not ms:  # a scenario left out (--semaphore-takeovers 0, ...)
        return {"count": 0}
    return {"count": len(ms), "p50_ms": round(percentile(ms, 50), 3), "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(max(ms), 3), "mean_ms": round(statistics.mean(ms), 3)}


def scenario(args, liveness, count, ttl_seconds):
    """`count` locks, each with a held claim and a waiting one; kill each holder pod in turn
    (liveness on) or all at once (TTL mode, which takes seconds each) and time the handover."""
    with Environment(args.bin, args.source, backend=args.backend, fault_proxy=False) as env:
        # Default flags: a takeover at a time is far from the client rate limit.
        env.start_controller(*([] if liveness else ["--liveness-takeover=false"]))
        env.apply(namespace(NS))
        watcher = LeaseWatcher(env.kube_url)
        objects = []
        for i in range(count):
            objects += [pod("holder-%d" % i, NS), pod("waiter-%d" % i, NS)]
        create(env, objects)
        create(env, [lease("a-%d" % i, NS, "lock-%d" % i, "holder-%d" % i, leaseDurationSeconds=ttl_seconds)
                     for i in range(count)])
        for i in range(count):
            wait_for(lambda i=i: status(env, "a-%d" % i).get("phase") == "Held", 60, "holder %d" % i)
        create(env, [lease("b-%d" % i, NS, "lock-%d" % i, "waiter-%d" % i, leaseDurationSeconds=ttl_seconds)
                     for i in range(count)])
        for i in range(count):
            wait_for(lambda i=i: status(env, "b-%d" % i).get("phase") == "Pending", 60, "waiter %d" % i)
        latencies = []
        if liveness:
            kube = KeptAliveConnection(env.kube_url)
            for i in range(count):
                quiet(args)
                # From the moment the DELETE is sent: its answer may come after the watch event.
                gone = time.monotonic()
                kube.call("DELETE", "/api/v1/namespaces/%s/pods/holder-%d?gracePeriodSeconds=0" % (NS, i))
                seen, _ = watcher.wait_held("b-%d" % i, None)
                latencies.append(seen - gone)
        else:
            gone = {}
            for i in range(count):
                gone[i] = time.monotonic()
                request("DELETE", env.kube_url + "/api/v1/namespaces/%s/pods/holder-%d?gracePeriodSeconds=0" % (NS, i))
            for i in range(count):
                seen, _ = watcher.wait_held("b-%d" % i, None, timeout=ttl_seconds * 3 + 30)
                latencies.append(seen - gone[i])
        floor = None
        if liveness and count:
            floor = {"write_floor": write_floor(env.es_url), **takeover_floor_steps(env, "b-0", args)}
        return latencies, {"backend": env.elasticsearch.describe(), **(floor or {})}


class EventClock:
    """Streams one watch and remembers when each (event type, object name, marker) was first
    seen, the marker being the object's `bench/floor` annotation."""

    def __init__(self, url):
        self.seen = {}
        self.cv = threading.Condition()
        self.stream = urllib.request.urlopen(url + ("&" if "?" in url else "?") + "watch=1", timeout=3600)
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        for line in self.stream:
            event = json.loads(line)
            meta = event.get("object", {}).get("metadata", {})
            key = (event.get("type"), meta.get("name"), (meta.get("annotations") or {}).get("bench/floor"))
            with self.cv:
                self.seen.setdefault(key, time.monotonic())
                self.cv.notify_all()

    def wait(self, key, timeout=30):
        return wait_on(self.cv, lambda: self.seen.get(key), timeout, "watch event %s" % (key,))


def quiet(args):
    """The pause before each timed step (--pause-ms): deaths come one at a time, as they do on
    a cluster, not back to back. Back to back, a takeover's own writes (statuses, annotations,
    events: a few per takeover) soon use up the client's rate limit at its defaults (200 writes
    a second, 400 at once) and each takeover then waits for the next token: that measures the
    limit, which mass-takeover-bench measures on purpose. The floor's steps wait as long, so
    that both start from the same quiet machine."""
    time.sleep(args.pause_ms / 1000.0)


def takeover_floor_steps(env, lease_name, args, repetitions=100):
    """The takeover's floor, measured here beside it: its three steps, one after the other from
    a quiet machine as a takeover takes them, with nothing else to do. A pod's deletion seen by
    a watch (the controller learns of the death), one conditional write of a lock document (as
    write_floor's, into an index that syncs its translog), and a write to a Lease seen by a
    watch (the successor's status reaching a watcher; an annotation, so that the controller has
    nothing to change). The floor is the median of the three together."""
    pods = EventClock(env.kube_url + "/api/v1/namespaces/%s/pods" % NS)
    leases = EventClock(env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS)
    es = KeptAliveConnection(env.es_url)
    index = "takeover-bench-floor-chain"
    es.call("PUT", "/" + index, {"settings": {"number_of_shards": 1}})
    document = es.call("PUT", "/%s/_create/lock" % index, {"n": -1})
    steps = {"pod_deletion_seen": [], "one_conditional_write": [], "lease_write_seen": [], "together": []}
    kube = KeptAliveConnection(env.kube_url)
    for n in range(repetitions):
        name = "floor-%d" % n
        create(env, [pod(name, NS)])
        pods.wait(("ADDED", name, None))
        quiet(args)
        gone = time.monotonic()
        kube.call("DELETE", "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (NS, name))
        seen = pods.wait(("DELETED", name, None))
        document = es.call("PUT", "/%s/_doc/lock?if_seq_no=%d&if_primary_term=%d" % (
            index, document["_seq_no"], document["_primary_term"]), {"n": n})
        written = time.monotonic()
        kube.call("PATCH", "/apis/eslease.io/v1alpha1/namespaces/%s/leases/%s" % (NS, lease_name),
                  {"metadata": {"annotations": {"bench/floor": str(n)}}}, "application/merge-patch+json")
        shown = leases.wait(("MODIFIED", lease_name, str(n)))
        for step, took in (("pod_deletion_seen", seen - gone), ("one_conditional_write", written - seen),
                           ("lease_write_seen", shown - written), ("together", shown - gone)):
            steps[step].append(took)
    es.call("DELETE", "/" + index)
    es.connection.close()
    return {"floor_steps": {step: summary(times) for step, times in steps.items()}}


def write_floor(es_url, writes=200):
    """What one conditional write of a lock document costs this Elasticsearch, as a takeover
    makes it: `writes` in a row on one document, over one kept-alive connection, into an index
    that syncs its translog before answering (the default) and into one that does not. The
    difference is the sync's share of a takeover's time."""
    es = KeptAliveConnection(es_url)
    call = es.call
    out = {}
    for durability in ("request", "async"):
        index = "takeover-bench-floor-" + durability
        call("PUT", "/" + index, {"settings": {"number_of_shards": 1, "index.translog.durability": durability}})
        written = call("PUT", "/%s/_create/lock" % index, {"n": 0})
        seconds = []
        for n in range(writes):
            started = time.perf_counter()
            written = call("PUT", "/%s/_doc/lock?if_seq_no=%d&if_primary_term=%d" % (
                index, written["_seq_no"], written["_primary_term"]), {"n": n})
            seconds.append(time.perf_counter() - started)
        call("DELETE", "/" + index)
        out["translog_" + durability] = summary(seconds)
    out["translog_sync_p50_ms"] = round(out["translog_request"]["p50_ms"] - out["translog_async"]["p50_ms"], 3)
    es.connection.close()
    return out


SEMAPHORE_QUEUE = 10  # claims kept waiting throughout: one is added as each is granted


def add_semaphore_claim(env, watcher, index):
    """A pod and its Shared claim on the semaphore, both named sem-INDEX; waits until the
    claim is Held or Pending, so claims queue in the order they are added. Claims created in
    the same second (creationTimestamp's precision) are served in name order, so INDEX is
    zero-padded."""
    name = SEMAPHORE_PREFIX + "%06d" % index
    create(env, [pod(name, NS), lease(name, NS, "semaphore", name, leaseDurationSeconds=30,
                                      capacity=SEMAPHORE_CAPACITY, access="Shared")])
    watcher.wait_until(lambda: watcher.current.get(name, (None,))[0] in ("Held", "Pending"), 60,
                       "claim %s to be Held or Pending" % name)
    return name


def semaphore_handover(args, env, watcher, checks, holders):
    """Deletes the oldest holder's pod and waits for its successor and for the deleted
    holder's Lease to leave Held; returns (successor, latency, a mark of the other holders for
    `SemaphoreChecks.lost_since`, read when the next hand-over begins)."""
    victim = holders.popleft()
    with watcher.cv:
        mark = checks.departures_of(holders)
        granted_before = len(checks.granted)
        checks.deleted.add(victim)
    quiet(args)
    gone = time.monotonic()
    request("DELETE", env.kube_url + "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (NS, victim))

    def successor_seen():
        return len(checks.granted) > granted_before and checks.granted[granted_before]
    successor, seen = watcher.wait_until(successor_seen, 60, "a successor to %s" % victim)
    watcher.wait_until(lambda: watcher.current[victim][0] != "Held", 60, "Lease %s to leave Held" % victim)
    holders.append(successor)
    return successor, seen - gone, mark


def semaphore_scenario(args):
    """A lock of capacity 10 held by 10 Shared claims, each for its own pod, with 10 more
    waiting; the oldest holder's pod is deleted, one at a time, and the next waiting claim
    must be Held while the other nine keep their tokens. The controller runs at its defaults."""
    checks = SemaphoreChecks()
    with Environment(args.bin, args.source, backend=args.backend, fault_proxy=False) as env:
        env.start_controller()
        env.apply(namespace(NS))
        watcher = LeaseWatcher(env.kube_url, checks)
        added = iter(range(SEMAPHORE_CAPACITY + SEMAPHORE_QUEUE + args.semaphore_takeovers))
        holders = collections.deque(add_semaphore_claim(env, watcher, next(added)) for _ in range(SEMAPHORE_CAPACITY))
        watcher.wait_until(lambda: all(watcher.current[n][0] == "Held" for n in holders), 60, "the holders")
        waiting = collections.deque(add_semaphore_claim(env, watcher, next(added)) for _ in range(SEMAPHORE_QUEUE))
        latencies, not_next, lost, mark = [], 0, 0, {}
        for _ in range(args.semaphore_takeovers):
            # Each hand-over's other holders must keep their tokens until the next one begins.
            with watcher.cv:
                lost += checks.lost_since(mark)
            successor, latency, mark = semaphore_handover(args, env, watcher, checks, holders)
            latencies.append(latency)
            not_next += successor != waiting[0]
            if successor in waiting:
                waiting.remove(successor)
            waiting.append(add_semaphore_claim(env, watcher, next(added)))
        with watcher.cv:
            lost += checks.lost_since(mark)
            report = {"capacity": SEMAPHORE_CAPACITY, "waiting": SEMAPHORE_QUEUE, "controller_flags": "defaults",
                      "successor_not_next_in_queue": not_next, "holders_not_keeping_token": lost,
                      "most_held_at_once": checks.most_held_live,
                      "most_shown_held_at_once": checks.most_held_shown}
        return latencies, report


SET_POOL = 8  # locks set-lock-0 .. set-lock-7
SET_SIZE = 3  # locks in each claim's set
SET_QUEUE = 8  # live claims kept waiting throughout
SET_SEED = 1  # the sets drawn, so that runs compare
LOCK_INDEX = "eslease-locks"
# The set_takeover counts that fail the run.
SET_VIOLATIONS = ("overlapping_live_holders", "held_without_token", "token_changes", "live_holders_leaving_held",
                  "held_without_whole_set", "holders_not_as_ranked")


class SetQueue:
    """The lock-set scenario's claims as the queueing rule sees them: each claim's locks, the
    live holders (oldest grant first) and the live waiting claims in rank order. The claims
    never held are ranked in the order they were created (the controller's watch sees them
    arrive in that order, to the microsecond), so zero-padded names in creation order are rank
    order; a deleted holder's claim has no live pod and keeps nothing."""

    def __init__(self):
        self.rng = random.Random(SET_SEED)
        self.locks = {}
        self.holders = []
        self.waiting = []

    def grants_without(self, victim=None):
        held = [self.locks[h] for h in self.holders if h != victim]
        return grants_by_rank(held, [(c, self.locks[c]) for c in self.waiting])

    def choose_victim(self):
        """The oldest holder whose deletion the rule says hands one of its locks to a waiting
        claim, and the claims then granted; else the oldest holder and no grant (every
        waiting claim needs a lock of another holder too, so the deletion is not timed)."""
        for holder in self.holders:
            grants = self.grants_without(holder)
            if grants:  # a deletion only frees the victim's locks, so each grant needs one of them
                return holder, grants
        return self.holders[0], []

    def settle(self, gone, granted):
        if gone:
            self.holders.remove(gone)
        for claim in granted:
            self.waiting.remove(claim)
            self.holders.append(claim)


def add_set_claim(env, watcher, checks, queue):
    """A pod and its claim on SET_SIZE locks of the pool, drawn at random, both named
    set-INDEX; waits until the claim is Pending, or Held when the rule grants it at once."""
    name = "set-%06d" % len(queue.locks)
    locks = sorted("set-lock-%d" % i for i in queue.rng.sample(range(SET_POOL), SET_SIZE))
    queue.locks[name] = frozenset(locks)
    queue.waiting.append(name)
    expected = "Held" if name in queue.grants_without() else "Pending"
    with watcher.cv:
        checks.sets[name] = queue.locks[name]
    create(env, [pod(name, NS), lease(name, NS, locks, name, leaseDurationSeconds=30)])
    # A claim Held against the rule is found when the holders are compared (set_scenario).
    watcher.wait_until(lambda: watcher.current.get(name, (None,))[0] in (expected, "Held"), 60,
                       "claim %s to be %s" % (name, expected))
    queue.settle(None, [name] if expected == "Held" else [])


def set_handover(args, env, watcher, checks, queue):
    """Deletes a holder's pod (SetQueue.choose_victim) and waits for the claims the rule
    grants and for the deleted holder's Lease to leave Held; returns the time from the DELETE
    to the first of those seen Held, or None when the rule grants none."""
    victim, successors = queue.choose_victim()
    with watcher.cv:
        granted_before = len(checks.granted)
        checks.deleted.add(victim)
    quiet(args)
    gone = time.monotonic()
    request("DELETE", env.kube_url + "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (NS, victim))

    def successor_seen():
        return next((seen for name, seen in checks.granted[granted_before:] if checks.sets[name] & queue.locks[victim]),
                    None)
    latency = watcher.wait_until(successor_seen, 60, "a successor to %s" % victim) - gone if successors else None
    watcher.wait_until(lambda: watcher.current[victim][0] != "Held" and
                       all(watcher.current.get(c, (None,))[0] == "Held" for c in successors), 60,
                       "%s to be Held and Lease %s to leave Held" % (", ".join(successors) or "nothing", victim))
    queue.settle(victim, successors)
    return latency


def sets_not_held_whole(env, queue, live_holders):
    """The live holders shown Held some of whose locks' documents do not name their Lease."""
    ids = ["%s/set-lock-%d" % (NS, i) for i in range(SET_POOL)]
    found = request("POST", "%s/%s/_mget" % (env.es_url, LOCK_INDEX), {"ids": ids})
    owners = {d["_id"].split("/", 1)[1]: d["_source"].get("lease", "").split("/", 1)[-1]
              for d in found["docs"] if d.get("found")}
    return not_holding_their_sets({c: queue.locks[c] for c in live_holders}, owners)


def set_scenario(args):
    """SET_POOL locks; claims on SET_SIZE of them each, for their own pods, SET_QUEUE of them
    waiting; a holder's pod is deleted, one at a time, until `--set-takeovers` hand-overs were
    timed. The controller runs at its defaults."""
    checks, queue = SetChecks(), SetQueue()
    latencies, untimed, not_as_ranked, not_whole = [], 0, 0, set()
    with Environment(args.bin, args.source, backend=args.backend, fault_proxy=False) as env:
        env.start_controller()
        env.apply(namespace(NS))
        watcher = LeaseWatcher(env.kube_url, checks)
        while len(queue.waiting) < SET_QUEUE:
            add_set_claim(env, watcher, checks, queue)
        while len(latencies) < args.set_takeovers:
            latency = set_handover(args, env, watcher, checks, queue)
            if latency is None:
                untimed += 1
            else:
                latencies.append(latency)
            while len(queue.waiting) < SET_QUEUE:
                add_set_claim(env, watcher, checks, queue)
            with watcher.cv:
                live_holders = checks.live_holders()
            # The holders seen must be the rule's; when not, the rule goes on from what is seen.
            if live_holders != set(queue.holders):
                not_as_ranked += 1
                queue.holders = [c for c, _ in checks.granted if c in live_holders]
                queue.waiting = sorted(set(queue.locks) - live_holders - checks.deleted)
            not_whole.update(sets_not_held_whole(env, queue, live_holders))
        with watcher.cv:
            report = {"set_size": SET_SIZE, "pool_size": SET_POOL, "waiting": SET_QUEUE, "seed": SET_SEED,
                      "controller_flags": "defaults", "deletions_not_timed": untimed,
                      "holders_not_as_ranked": not_as_ranked, "held_without_whole_set": len(not_whole),
                      "shown_held_beside_deleted_holder_on_shared_lock": len(checks.overlapping_shown)}
            report.update(checks.violations())
        return latencies, report


def draw(path, liveness, semaphore, lock_set, ttl):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (Debian: python3-matplotlib); no PNG drawn", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 4, figsize=(21, 4))
    axes[0].hist([x * 1000 for x in liveness], bins=50, color="#2a7")
    axes[0].set_title("liveness takeover (%d): holder gone -> successor Held" % len(liveness))
    axes[0].set_xlabel("ms")
    axes[1].hist([x * 1000 for x in semaphore], bins=50, color="#27a")
    axes[1].set_title("semaphore, capacity %d (%d): the same" % (SEMAPHORE_CAPACITY, len(semaphore)))
    axes[1].set_xlabel("ms")
    axes[2].hist([x * 1000 for x in lock_set], bins=50, color="#72a")
    axes[2].set_title("sets of %d of %d locks (%d): first successor Held" % (SET_SIZE, SET_POOL, len(lock_set)))
    axes[2].set_xlabel("ms")
    axes[3].hist([x for x in ttl], bins=20, color="#c62")
    axes[3].set_title("--liveness-takeover=false (%d): TTL expiry" % len(ttl))
    axes[3].set_xlabel("s")
    fig.tight_layout()
    fig.savefig(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--takeovers", type=int, default=1000)
    parser.add_argument("--semaphore-takeovers", type=int, default=100)
    parser.add_argument("--set-takeovers", type=int, default=100)
    parser.add_argument("--ttl-takeovers", type=int, default=20)
    parser.add_argument("--ttl-seconds", type=int, default=3)
    parser.add_argument("--pause-ms", type=int, default=50,
                        help="quiet time before each timed death and each step of the floor")
    parser.add_argument("--png")
    parser.add_argument("--backend", default=os.environ.get("ESLEASE_TEST_BACKEND") or "emulator",
                        help="emulator, opensearch, or both comma-separated (run one after the other)")
    args = parser.parse_args()
    backends = [b for b in args.backend.split(",") if b]
    results = {}
    violations = 0
    for backend in backends:
        args.backend = backend
        results[backend], found = run_all(args, args.png if len(backends) == 1 else None)
        violations += found
    if len(backends) == 1:
        print(json.dumps(results[backends[0]], indent=2))
    else:
        beside = {scenario_name: {b: {key: results[b][scenario_name][key] for key in ("p50_ms", "p99_ms")}
                                  for b in backends}
                  for scenario_name in ("liveness_takeover", "semaphore_takeover", "set_takeover", "ttl_takeover")}
        beside["one_conditional_write"] = {b: {key: results[b]["write_floor"]["translog_request"][key]
                                               for key in ("p50_ms", "p99_ms")} for b in backends}
        beside["translog_sync_p50_ms"] = {b: results[b]["write_floor"]["translog_sync_p50_ms"] for b in backends}
        beside["takeover_floor_p50_ms"] = {b: results[b]["takeover_floor"]["p50_ms"] for b in backends}
        print(json.dumps({"benchmark": "takeover", "beside": beside, "backends": results}, indent=2))
    return 1 if violations else 0


def floor_of(liveness_info):
    """The median of the three steps taken together: a takeover can be no faster on this
    machine. Beside it, each step's median."""
    steps = liveness_info["floor_steps"]
    return {"p50_ms": steps["together"]["p50_ms"],
            "steps_p50_ms": {name: step["p50_ms"] for name, step in steps.items() if name != "together"}}


def run_all(args, png):
    """Every scenario on args.backend: the result, and how many violations were seen."""
    liveness, liveness_info = scenario(args, True, args.takeovers, 30)
    semaphore, semaphore_report = semaphore_scenario(args)
    lock_set, set_report = set_scenario(args)
    ttl, _ = scenario(args, False, args.ttl_takeovers, args.ttl_seconds)
    result = {"benchmark": "takeover",
              "backend": liveness_info["backend"],
              "liveness_takeover": dict(summary(liveness), controller_flags="defaults"),
              "write_floor": liveness_info.get("write_floor"),
              "takeover_floor": floor_of(liveness_info) if liveness else None,
              "semaphore_takeover": dict(summary(semaphore), **semaphore_report),
              "set_takeover": dict(summary(lock_set), **set_report),
              "ttl_takeover": dict(summary(ttl), ttl_seconds=args.ttl_seconds),
              "targets": {"liveness_takeover_p50_over_floor": 2.5, "liveness_takeover_p99_ms": 10,
                          "shapes_p50_ms": 10, "shapes_p99_ms": 50}}
    if result["liveness_takeover"]["count"]:
        result["liveness_takeover"]["p50_over_floor"] = round(
            result["liveness_takeover"]["p50_ms"] / result["takeover_floor"]["p50_ms"], 2)
    if result["ttl_takeover"]["count"] and result["liveness_takeover"]["count"]:
        result["ttl_over_liveness_p50"] = round(result["ttl_takeover"]["p50_ms"] /
                                                result["liveness_takeover"]["p50_ms"], 1)
    if png:
        draw(png, liveness, semaphore, lock_set, ttl)
    violations = (semaphore_report["successor_not_next_in_queue"] + semaphore_report["holders_not_keeping_token"] +
                  max(0, semaphore_report["most_held_at_once"] - SEMAPHORE_CAPACITY) +
                  sum(set_report[key] for key in SET_VIOLATIONS))
    return result, violations


if __name__ == "__main__":
    sys.exit(main())
