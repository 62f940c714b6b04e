"""Traffic to the holder (spec.holderLabel): an election Lease with holderLabel and three
matching pods; the holder dies again and again, alternately deleted and made NotReady through
the emulator's kubelet (a revocation: the successor is granted when the old grant has
expired). A watcher of the pods checks that never two pods carry the label at once, and the
time from each death to the successor's grant (its Lease seen Held with a new token) and to
the successor's label is measured. The controller and both emulators run as separate
processes. Prints JSON; exits 1 when two pods carried the label at once or a successor was
never labelled (the end-to-end test e2e_holder_label_test runs it so).

usage: holder_label_bench.py BIN_DIR SOURCE_DIR [--deaths N]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace  # noqa: E402
from cluster import Stream  # noqa: E402  (controller_env puts bench/common on the path)

NS = "holder-label"
KEY = "example.com/leader"
LEASE = "web-leader"
TIMEOUT = 60


class PodLabels:
    """Which pods carry KEY=true, replayed from the pod watch in the API server's order; any
    moment with two is recorded."""

    def __init__(self, kube_url):
        self.labelled = set()
        self.gained = []  # (pod, monotonic time it was first seen labelled)
        self.two_at_once = []
        self.stream = Stream(kube_url + "/api/v1/namespaces/%s/pods?watch=1" % NS, self.handle)

    def handle(self, event, now):
        if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
            return
        meta = event["object"]["metadata"]
        carries = event["type"] != "DELETED" and (meta.get("labels") or {}).get(KEY) == "true"
        if carries and meta["name"] not in self.labelled:
            self.labelled.add(meta["name"])
            self.gained.append((meta["name"], now))
        elif not carries:
            self.labelled.discard(meta["name"])
        if len(self.labelled) > 1:
            self.two_at_once.append(sorted(self.labelled))

    def labelled_since(self, name, since):
        return self.stream.wait(lambda: next((t for pod, t in self.gained if pod == name and t >= since), None),
                                TIMEOUT, "pod %s to be labelled %s" % (name, KEY))

    def only(self):
        with self.stream.cv:
            return sorted(self.labelled)


class Grants:
    """Each grant of the Lease: (fencing token, holder pod, monotonic time first seen Held)."""

    def __init__(self, kube_url):
        self.grants = []
        self.stream = Stream(kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases?watch=1" % NS, self.handle)

    def handle(self, event, now):
        status = event.get("object", {}).get("status", {})
        if event.get("type") == "MODIFIED" and status.get("phase") == "Held":
            token, holder = status.get("fencingToken"), (status.get("holder") or {}).get("podName")
            if not any(g[0] == token for g in self.grants):
                self.grants.append((token, holder, now))

    def after(self, token):
        """The first grant after the one with `token`."""
        def found():
            tokens = [g[0] for g in self.grants]
            at = tokens.index(token) if token in tokens else -1
            return self.grants[at + 1] if 0 <= at < len(self.grants) - 1 else None
        return self.stream.wait(found, TIMEOUT, "a new grant of %s" % LEASE)

    def current(self):
        return self.stream.wait(lambda: self.grants[-1] if self.grants else None, TIMEOUT, "the first grant")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def summary(seconds):
    ms = [x * 1000 for x in seconds]
    if not ms:
        return {"count": 0}
    return {"count": len(ms), "p50_ms": round(percentile(ms, 50), 1), "p99_ms": round(percentile(ms, 99), 1),
            "max_ms": round(max(ms), 1)}


def run(bin_dir, source, deaths, log=lambda m: None):
    with Environment(bin_dir, source) as env:
        env.start_controller()
        env.apply(namespace(NS))
        labels = PodLabels(env.kube_url)
        grants = Grants(env.kube_url)
        names = ["web-0", "web-1", "web-2"]
        env.create_ready_pods(NS, names, labels={"app": "web"})
        env.apply(lease(LEASE, NS, "web", selector={"app": "web"}, holderLabel=KEY, leaseDurationSeconds=3,
                        livenessGraceSeconds=1))
        token, holder, _ = grants.current()
        labels.labelled_since(holder, 0)
        results = {"PodDeleted": {"held": [], "labelled": []}, "PodNotReady": {"held": [], "labelled": []}}
        made = len(names)
        for i in range(deaths):
            kind = "PodDeleted" if i % 2 == 0 else "PodNotReady"
            # Timed from before the request: the successor can be labelled, and the watch tell
            # of it, before the answer to the request is read.
            died = time.monotonic()
            if kind == "PodDeleted":
                env.http("DELETE", "%s/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (env.kube_url, NS, holder))
            else:
                env.kubelet(holder, NS, {"ready": False})
            token, successor, held_at = grants.after(token)
            labelled_at = labels.labelled_since(successor, died)
            results[kind]["held"].append(held_at - died)
            results[kind]["labelled"].append(labelled_at - died)
            log("%2d %-11s %s -> %s: Held after %.0f ms, labelled after %.0f ms" % (
                i + 1, kind, holder, successor, (held_at - died) * 1000, (labelled_at - died) * 1000))
            if kind == "PodDeleted":
                made += 1
                env.create_ready_pods(NS, ["web-%d" % made], labels={"app": "web"})
            else:
                env.kubelet(holder, NS, {"ready": True})
            holder = successor
        return {
            "benchmark": "holder_label",
            "deaths": deaths,
            "successor_held": {kind: summary(r["held"]) for kind, r in results.items()},
            "successor_labelled": {kind: summary(r["labelled"]) for kind, r in results.items()},
            "two_labelled_at_once": labels.two_at_once,
            "labelled_at_end": labels.only(),
        }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--deaths", type=int, default=100)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    result = run(args.bin, args.source, args.deaths,
                 log=(lambda m: print(m, file=sys.stderr)) if args.verbose else (lambda m: None))
    print(json.dumps(result, indent=2))
    if result["two_labelled_at_once"]:
        print("FAIL: two pods carried %s at once: %s" % (KEY, result["two_labelled_at_once"][:5]), file=sys.stderr)
        return 1
    if len(result["labelled_at_end"]) != 1:
        print("FAIL: at the end %s is on %s, not on one holder" % (KEY, result["labelled_at_end"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
