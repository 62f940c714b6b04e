"""Takeover latency: a holder pod is deleted (gone: confirmed dead) -> the waiting claim's
Lease status is Held, as a watcher of the API sees it. The controller and both emulators
run as separate processes. A semaphore (capacity 10, Shared claims) then loses its holder
pods one at a time, the controller at its default flags: the next waiting claim must get the
freed slot while the other nine holders keep their tokens, and no more than 10 claims may be
Held at once (exit status 1 otherwise). Last, the first scenario runs with
--liveness-takeover=false and a short TTL, the way TTL-based lock libraries hand a lock over,
so the two are measured side by side. Prints JSON; --png FILE draws the histograms.

usage: takeover_bench.py BIN_DIR SOURCE_DIR [--takeovers N] [--ttl-takeovers N]
                         [--semaphore-takeovers N] [--png FILE]
"""

import argparse
import collections
import json
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace, pod, wait_for  # noqa: E402
from semaphore_checks import SEMAPHORE_CAPACITY, SEMAPHORE_PREFIX, SemaphoreChecks  # noqa: E402

NS = "bench"


class LeaseWatcher:
    """Streams Lease watch events and records when each Lease was first seen Held with a
    given fencing token, and each Lease's latest phase and token. `on_event(name, phase,
    token, seen)`, if given, sees every event in order, under `cv`."""

    def __init__(self, kube_url, on_event=None):
        self.url = kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases?watch=1" % NS
        self.held = {}  # (name, token) -> monotonic time seen
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
                        self.held.setdefault((name, token), seen)
                    self.current[name] = (phase, token)
                    if self.on_event:
                        self.on_event(name, phase, token, seen)
                    self.cv.notify_all()

    def wait_until(self, predicate, timeout, what):
        """Waits, under `cv`, until `predicate()` returns a true value, and returns it."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("timed out after %.0fs waiting for %s" % (timeout, what))
                self.cv.wait(remaining)

    def wait_held(self, name, not_token, timeout=60):
        def seen_held():
            for (n, token), seen in self.held.items():
                if n == name and token != not_token:
                    return seen, token
            return None
        return self.wait_until(seen_held, timeout, "Lease %s to be Held" % name)


def request(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as response:
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
    return {"count": len(ms), "p50_ms": round(percentile(ms, 50), 3), "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(max(ms), 3), "mean_ms": round(statistics.mean(ms), 3)}


def scenario(args, liveness, count, ttl_seconds):
    """`count` locks, each with a held claim and a waiting one; kill each holder pod in turn
    (liveness on) or all at once (TTL mode, which takes seconds each) and time the handover."""
    with Environment(args.bin, args.source) as env:
        extra = [] if liveness else ["--liveness-takeover=false"]
        env.start_controller(*extra, "--kube-api-qps", "5000", "--kube-api-burst", "10000")
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
            for i in range(count):
                request("DELETE", env.kube_url + "/api/v1/namespaces/%s/pods/holder-%d?gracePeriodSeconds=0" % (NS, i))
                gone = time.monotonic()
                seen, _ = watcher.wait_held("b-%d" % i, None)
                latencies.append(seen - gone)
        else:
            gone = {}
            for i in range(count):
                request("DELETE", env.kube_url + "/api/v1/namespaces/%s/pods/holder-%d?gracePeriodSeconds=0" % (NS, i))
                gone[i] = time.monotonic()
            for i in range(count):
                seen, _ = watcher.wait_held("b-%d" % i, None, timeout=ttl_seconds * 3 + 30)
                latencies.append(seen - gone[i])
        return latencies


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


def semaphore_handover(env, watcher, checks, holders):
    """Deletes the oldest holder's pod and waits for its successor and for the deleted
    holder's Lease to leave Held; returns (successor, latency, a mark of the other holders for
    `SemaphoreChecks.lost_since`, read when the next hand-over begins)."""
    victim = holders.popleft()
    with watcher.cv:
        mark = checks.departures_of(holders)
        granted_before = len(checks.granted)
        checks.deleted.add(victim)
    request("DELETE", env.kube_url + "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (NS, victim))
    gone = time.monotonic()

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
    with Environment(args.bin, args.source) as env:
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
            successor, latency, mark = semaphore_handover(env, watcher, checks, holders)
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


def draw(path, liveness, semaphore, ttl):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (Debian: python3-matplotlib); no PNG drawn", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    axes[0].hist([x * 1000 for x in liveness], bins=50, color="#2a7")
    axes[0].set_title("liveness takeover (%d): holder gone -> successor Held" % len(liveness))
    axes[0].set_xlabel("ms")
    axes[1].hist([x * 1000 for x in semaphore], bins=50, color="#27a")
    axes[1].set_title("semaphore, capacity %d (%d): the same" % (SEMAPHORE_CAPACITY, len(semaphore)))
    axes[1].set_xlabel("ms")
    axes[2].hist([x for x in ttl], bins=20, color="#c62")
    axes[2].set_title("--liveness-takeover=false (%d): TTL expiry" % len(ttl))
    axes[2].set_xlabel("s")
    fig.tight_layout()
    fig.savefig(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--takeovers", type=int, default=1000)
    parser.add_argument("--semaphore-takeovers", type=int, default=100)
    parser.add_argument("--ttl-takeovers", type=int, default=20)
    parser.add_argument("--ttl-seconds", type=int, default=3)
    parser.add_argument("--png")
    args = parser.parse_args()
    liveness = scenario(args, True, args.takeovers, 30)
    semaphore, semaphore_report = semaphore_scenario(args)
    ttl = scenario(args, False, args.ttl_takeovers, args.ttl_seconds)
    result = {"benchmark": "takeover",
              "liveness_takeover": dict(summary(liveness),
                                        controller_flags="--kube-api-qps 5000 --kube-api-burst 10000"),
              "semaphore_takeover": dict(summary(semaphore), **semaphore_report),
              "ttl_takeover": dict(summary(ttl), ttl_seconds=args.ttl_seconds),
              "targets": {"p50_ms": 10, "p99_ms": 50}}
    result["ttl_over_liveness_p50"] = round(result["ttl_takeover"]["p50_ms"] / result["liveness_takeover"]["p50_ms"], 1)
    print(json.dumps(result, indent=2))
    if args.png:
        draw(args.png, liveness, semaphore, ttl)
    violations = (semaphore_report["successor_not_next_in_queue"] + semaphore_report["holders_not_keeping_token"] +
                  max(0, semaphore_report["most_held_at_once"] - SEMAPHORE_CAPACITY))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
