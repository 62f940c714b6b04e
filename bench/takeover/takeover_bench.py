"""Takeover latency: a holder pod is deleted (gone: confirmed dead) -> the waiting claim's
Lease status is Held, as a watcher of the API sees it. The controller and both emulators
run as separate processes. The same scenario then runs with --liveness-takeover=false and a
short TTL, the way TTL-based lock libraries hand a lock over, so the two are measured side
by side. Prints JSON; --png FILE draws both latency histograms.

usage: takeover_bench.py BIN_DIR SOURCE_DIR [--takeovers N] [--ttl-takeovers N] [--png FILE]
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace, pod, wait_for  # noqa: E402

NS = "bench"


class LeaseWatcher:
    """Streams Lease watch events and records when each Lease was first seen Held with a
    given fencing token."""

    def __init__(self, kube_url):
        self.url = kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases?watch=1" % NS
        self.held = {}  # (name, token) -> monotonic time seen
        self.cv = threading.Condition()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        with urllib.request.urlopen(self.url, timeout=3600) as stream:
            for line in stream:
                event = json.loads(line)
                obj = event.get("object", {})
                status = obj.get("status", {})
                if status.get("phase") == "Held":
                    key = (obj["metadata"]["name"], status.get("fencingToken"))
                    with self.cv:
                        self.held.setdefault(key, time.monotonic())
                        self.cv.notify_all()

    def wait_held(self, name, not_token, timeout=60):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for (n, token), seen in self.held.items():
                    if n == name and token != not_token:
                        return seen, token
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("Lease %s was never seen Held" % name)
                self.cv.wait(remaining)


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


def draw(path, liveness, ttl):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (Debian: python3-matplotlib); no PNG drawn", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].hist([x * 1000 for x in liveness], bins=50, color="#2a7")
    axes[0].set_title("liveness takeover (%d): holder gone -> successor Held" % len(liveness))
    axes[0].set_xlabel("ms")
    axes[1].hist([x for x in ttl], bins=20, color="#c62")
    axes[1].set_title("--liveness-takeover=false (%d): TTL expiry" % len(ttl))
    axes[1].set_xlabel("s")
    fig.tight_layout()
    fig.savefig(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--takeovers", type=int, default=1000)
    parser.add_argument("--ttl-takeovers", type=int, default=20)
    parser.add_argument("--ttl-seconds", type=int, default=3)
    parser.add_argument("--png")
    args = parser.parse_args()
    liveness = scenario(args, True, args.takeovers, 30)
    ttl = scenario(args, False, args.ttl_takeovers, args.ttl_seconds)
    result = {"benchmark": "takeover", "liveness_takeover": summary(liveness),
              "ttl_takeover": dict(summary(ttl), ttl_seconds=args.ttl_seconds),
              "targets": {"p50_ms": 10, "p99_ms": 50}}
    result["ttl_over_liveness_p50"] = round(result["ttl_takeover"]["p50_ms"] / result["liveness_takeover"]["p50_ms"], 1)
    print(json.dumps(result, indent=2))
    if args.png:
        draw(args.png, liveness, ttl)


if __name__ == "__main__":
    main()
