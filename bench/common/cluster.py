"""What the Python benchmarks share: objects created in bulk through the API, watch streams
recorded with the wall-clock time each event arrived, a replay of several streams in the
API server's order, the kube-emulator's write counters, and percentiles.

The benchmarks read the API only as a client would (watches, lists, the emulator's admin
counters), so the same scripts measure any controller that keeps the design's contracts.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import lease, namespace, pod, wait_for  # noqa: E402,F401  (re-exported)
from validity import SESSION_NAME, PublishedValidity  # noqa: E402

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
LEASES = "/apis/eslease.io/v1alpha1"


# --- HTTP ------------------------------------------------------------------------------
def call(method, url, body=None, timeout=120):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def in_parallel(function, items, threads=8):
    """Calls `function` on every item from `threads` threads; returns the results in order."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(function, items))


# --- watch streams followed live ---------------------------------------------------------
def wait_on(cv, found, timeout, what):
    """Waits under the condition `cv` (notified on every change) until `found()` returns a
    true value, and returns it; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with cv:
        while True:
            value = found()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
            cv.wait(remaining)


class Stream:
    """Follows one watch stream on a thread; `handle(event, now)` runs under `cv`, `now` being
    the monotonic time its line arrived."""

    def __init__(self, url, handle):
        self.cv = threading.Condition()
        self.handle = handle
        self.response = urllib.request.urlopen(url, timeout=3600)
        threading.Thread(target=self.follow, daemon=True).start()

    def follow(self):
        try:
            for line in self.response:
                now = time.monotonic()
                event = json.loads(line)
                with self.cv:
                    self.handle(event, now)
                    self.cv.notify_all()
        except Exception:  # the emulator stopped
            pass

    def wait(self, found, timeout, what):
        return wait_on(self.cv, found, timeout, what)


# --- the API's write counters -----------------------------------------------------------
def kube_writes(kube_url):
    """The kube-emulator's count of write requests so far, by "verb resource"."""
    return write_counts(call("GET", kube_url + "/_emulator/stats")["requests"])


def write_counts(requests):
    """The writes among the emulator's request counters. A resource of a named API group is
    counted twice there, as `verb plural` (every group's) and `verb plural.group`: only the
    second is kept, so each write counts once."""
    grouped = {(k.split(" ", 1)[0], k.split(" ", 1)[1].split(".", 1)[0]) for k in requests if "." in k}
    return collections.Counter({k: n for k, n in requests.items()
                                if k.split(" ", 1)[0] in WRITE_VERBS and tuple(k.split(" ", 1)) not in grouped})


def writes_between(before, after, seconds=None, own=None):
    """The writes made between two counter snapshots, less `own` (a Counter of the
    benchmark's own writes in between), in total and by "verb resource"; per second too when
    the window's length is given."""
    made = after - before
    if own:
        made.subtract(own)
    made = +made  # drops kinds at zero
    result = {"total": sum(made.values()), "by_kind": dict(sorted(made.items()))}
    if seconds:
        result["seconds"] = round(seconds, 2)
        result["per_second"] = round(result["total"] / seconds, 2)
    return result


# --- watch streams ----------------------------------------------------------------------
class Watch:
    """One watch stream read by a thread that only keeps each line with the wall-clock time
    it arrived (so the clock is not held up by parsing); `poll` parses what came since."""

    def __init__(self, url):
        self.url = url
        self.events = []  # (seen, type, object), every event so far
        self._lines = []
        self._parsed = 0
        self.error = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            with urllib.request.urlopen(self.url, timeout=3600) as stream:
                for line in stream:
                    self._lines.append((time.time(), line))
        except Exception as e:  # the emulator stopped, or the stream broke: poll() says so
            self.error = e

    def poll(self):
        """The events that arrived since the last poll, parsed."""
        end = len(self._lines)
        new = []
        for seen, line in self._lines[self._parsed:end]:
            event = json.loads(line)
            if event["type"] == "ERROR":
                raise AssertionError("watch %s failed: %s" % (self.url, event["object"]))
            if event["type"] != "BOOKMARK":
                new.append((seen, event["type"], event["object"]))
        self._parsed = end
        self.events += new
        if not new and self.error is not None and end == len(self._lines):
            raise AssertionError("watch %s ended: %s" % (self.url, self.error))
        return new


def replay(streams, apply, sample_times=(), sample=None):
    """Applies the events of several watch streams in resourceVersion order (the API server's
    one order across resources): apply(stream index, seen, type, object). At each of the
    ascending `sample_times`, calls sample(t) with what has been applied then: the longest
    run of that order whose every event had arrived by t, so a sample never sees a change
    before another that the server made earlier."""
    merged = sorted(((int(obj["metadata"]["resourceVersion"]), i, seen, event_type, obj)
                     for i, stream in enumerate(streams) for seen, event_type, obj in stream),
                    key=lambda e: e[0])
    at = 0
    for t in sample_times:
        while at < len(merged) and merged[at][2] <= t:
            apply(*merged[at][1:])
            at += 1
        sample(t)
    for event in merged[at:]:
        apply(*event[1:])


def validity_of(lease_events, session_events, sample_times=(), sample=None):
    """Replays recorded Lease and session events into a PublishedValidity (see `replay` for
    the samples) and returns it as of the end of the history."""
    model = PublishedValidity()
    appliers = (model.apply_lease, model.apply_session)
    replay((lease_events, session_events), lambda i, seen, kind, obj: appliers[i](kind, obj),
           sample_times, sample and (lambda t: sample(t, model)))
    return model


class Cluster:
    """The benchmark's view of the API: Leases of every namespace and the sessions, watched
    from before anything is created; helpers to create pods and claims and to wait on what
    the watch shows."""

    def __init__(self, env):
        self.env = env
        self.kube = env.kube_url
        self.lease_watch = Watch(self.kube + LEASES + "/leases?watch=1")
        selector = urllib.parse.quote("metadata.name=" + SESSION_NAME)
        self.session_watch = Watch(self.kube + "/apis/coordination.k8s.io/v1/leases?watch=1&fieldSelector=" + selector)
        self.leases = {}  # (namespace, name) -> current object
        self.first_held = {}  # (namespace, name, token) -> when first seen Held with that token
        # The published validity as the events arrive, for waiting on it; checks replay the
        # history in the server's order instead (`validity`).
        self.live = PublishedValidity()

    def namespace(self, ns):
        call("POST", self.kube + "/api/v1/namespaces", namespace(ns))

    def create_pods(self, ns, names, node=None, threads=8, timeout=300, labels=None):
        """Creates pods (on `node`, else wherever the scheduler puts them; with `labels`, else
        app=worker) and waits until the kubelet reports them all Ready."""
        def create(name):
            obj = pod(name, ns, labels)
            if node:
                obj["spec"]["nodeName"] = node
            call("POST", "%s/api/v1/namespaces/%s/pods" % (self.kube, ns), obj)

        in_parallel(create, names, threads)
        wanted = set(names)
        wait_for(lambda: wanted <= self.ready_pods(ns), timeout, "%d pods in %s to be Ready" % (len(names), ns), 0.5)

    def ready_pods(self, ns):
        items = call("GET", "%s/api/v1/namespaces/%s/pods" % (self.kube, ns))["items"]
        return {p["metadata"]["name"] for p in items
                if any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in p.get("status", {}).get("conditions", []))}

    def create_claims(self, ns, claims, threads=8, **spec):
        """claims: (Lease name, lock name, pod name) each, created in the order given when
        threads is 1 (the order the controller queues waiting claims in)."""
        url = "%s%s/namespaces/%s/leases" % (self.kube, LEASES, ns)
        in_parallel(lambda c: call("POST", url, lease(c[0], ns, c[1], c[2], **spec)), claims, threads)

    def update(self):
        """Takes in what the watches brought since the last call."""
        for _, event_type, obj in self.session_watch.poll():
            self.live.apply_session(event_type, obj)
        for seen, event_type, obj in self.lease_watch.poll():
            self.live.apply_lease(event_type, obj)
            key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            if event_type == "DELETED":
                self.leases.pop(key, None)
                continue
            self.leases[key] = obj
            status = obj.get("status") or {}
            if status.get("phase") == "Held":
                self.first_held.setdefault(key + (status.get("fencingToken"),), seen)

    def phase(self, ns, name):
        return ((self.leases.get((ns, name)) or {}).get("status") or {}).get("phase")

    def token(self, ns, name):
        return ((self.leases.get((ns, name)) or {}).get("status") or {}).get("fencingToken")

    def wait(self, condition, timeout, what):
        """Waits until condition() holds over what the watches have shown."""
        def check():
            self.update()
            return condition()

        return wait_for(check, timeout, what, 0.05)

    def wait_phases(self, ns, names, phase, timeout=300):
        self.wait(lambda: all(self.phase(ns, n) == phase for n in names), timeout,
                  "%d Leases in %s to be %s" % (len(names), ns, phase))

    def validity(self, sample_times=(), sample=None):
        """The published validity over everything watched so far (see `validity_of`)."""
        self.update()
        return validity_of(self.lease_watch.events, self.session_watch.events, sample_times, sample)


# --- figures ----------------------------------------------------------------------------
def rss_kib(pid):
    """A process's resident memory now, from /proc."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def summary_ms(seconds):
    """p50/p99/max (and min, mean) of durations given in seconds, in milliseconds."""
    ms = [x * 1000 for x in seconds]
    if not ms:
        return {"count": 0}
    return {"count": len(ms), "min_ms": round(min(ms), 1), "p50_ms": round(percentile(ms, 50), 1),
            "p99_ms": round(percentile(ms, 99), 1), "max_ms": round(max(ms), 1),
            "mean_ms": round(sum(ms) / len(ms), 1)}


def controller_default(bin_dir, flag):
    """A flag's default as the controller's --help states it (e.g. "--kube-api-qps" -> "200")."""
    import re
    import subprocess
    text = subprocess.run([os.path.join(bin_dir, "eslease-controller"), "--help"], capture_output=True,
                          text=True, timeout=30).stdout
    match = re.search(re.escape(flag) + r"\b.*?\(default: ([^)]*)\)", text, re.S)
    if not match:
        raise SystemExit("eslease-controller --help states no default for %s" % flag)
    return match.group(1)


def bench_arguments():
    """A parser for the arguments every benchmark driver takes first."""
    parser = argparse.ArgumentParser()
    parser.add_argument("bin", help="the directory holding eslease-controller, es-emulator and kube-emulator")
    parser.add_argument("source", help="the source tree whose crds/ are applied")
    return parser


def draw_or_warn():
    """matplotlib's pyplot with the file backend, or None (and a note on stderr)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("matplotlib is not installed (Debian: python3-matplotlib); no PNG drawn", file=sys.stderr)
        return None
