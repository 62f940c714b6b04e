"""Safety under chaos: two eslease-controller replicas (leader election) serve claim-mode and
election-mode locks while holder pods are deleted, force-deleted, failed, completed and made
NotReady, nodes go NotReady, Elasticsearch answers 503/429, drops connections and fails
over its primary, the API server drops watches and fails writes, Leases are deleted and
re-created, controllers are killed and restarted, and now and then a third controller runs
without leader election, so two act at once. Every Pod and Lease change is
recorded from the API's watch streams and replayed in resourceVersion order by `safety.py`:
no lock may ever have two holders, and no successor may be granted before a presumed-dead
holder's published expireTime. After the chaos stops, every lock must converge: exactly one
Held claim per lock with a live claimant, matching its Elasticsearch document.

Controller and emulators run as separate processes. Prints JSON; exits 1 on a violation or
when the locks do not converge.

usage: chaos_bench.py BIN_DIR SOURCE_DIR [--seconds 60] [--locks 12] [--claimants 3]
                      [--election-locks 3] [--step-ms 60] [--seed N] [--history FILE] [--logs DIR]
"""

import argparse
import heapq
import json
import os
import random
import shutil
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace, pod, wait_for  # noqa: E402
from safety import TERMINAL, check  # noqa: E402

NS = "chaos"
INDEX = "eslease-locks"
LEASE_SECONDS = 3
GRACE_SECONDS = 1
ELECTION_FLAGS = ["--leader-elect", "--leader-election-namespace", "default",
                  "--leader-election-lease-duration", "2s", "--leader-election-renew-deadline", "1500ms",
                  "--leader-election-retry-period", "500ms", "--kube-api-qps", "1000", "--kube-api-burst", "2000"]


def call(method, url, body=None, timeout=10):
    """The decoded answer, or None when the server refused (4xx/5xx): chaos races are normal."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError:
        return None


class Recorder:
    """Watches the namespace's Pods and Leases from the start, resuming after every dropped
    stream from the last resourceVersion it saw, and keeps every event for the safety check
    and the current objects for the chaos driver."""

    PATHS = {"pod": "/api/v1/namespaces/%s/pods" % NS,
             "lease": "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS}

    def __init__(self, kube_url):
        self.kube_url = kube_url
        self.lock = threading.Lock()
        self.events = []
        self.current = {"pod": {}, "lease": {}}
        self.gaps = 0  # watches that could not resume (410): the history has a hole
        self.stopping = False
        self.threads = []
        for kind in self.PATHS:
            rv = call("GET", kube_url + self.PATHS[kind])["metadata"]["resourceVersion"]
            thread = threading.Thread(target=self._follow, args=(kind, rv), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _follow(self, kind, rv):
        while not self.stopping:
            url = "%s%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s" % (self.kube_url, self.PATHS[kind], rv)
            try:
                with urllib.request.urlopen(url, timeout=30) as stream:
                    for line in stream:
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            # Compacted: take the present state as one snapshot and go on.
                            with self.lock:
                                self.gaps += 1
                            rv = call("GET", self.kube_url + self.PATHS[kind])["metadata"]["resourceVersion"]
                            break
                        rv = obj["metadata"]["resourceVersion"]
                        if event["type"] == "BOOKMARK":
                            continue
                        with self.lock:
                            self.events.append((int(rv), kind, event["type"], obj))
                            name = obj["metadata"]["name"]
                            if event["type"] == "DELETED":
                                self.current[kind].pop(name, None)
                            else:
                                self.current[kind][name] = obj
            except OSError:
                time.sleep(0.05)  # the emulator dropped the stream; resume from rv

    def snapshot(self, kind):
        with self.lock:
            return dict(self.current[kind])

    def stop(self):
        self.stopping = True


def pod_state(obj):
    """One of: gone, terminal, terminating, unready, ready."""
    if obj is None:
        return "gone"
    status = obj.get("status", {})
    if status.get("phase") in TERMINAL:
        return "terminal"
    if obj["metadata"].get("deletionTimestamp"):
        return "terminating"
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
    return "ready" if ready else "unready"


class Chaos:
    def __init__(self, env, recorder, args, rng):
        self.env = env
        self.rec = recorder
        self.args = args
        self.rng = rng
        self.later = []  # (when, seq, action) heap
        self.seq = 0
        self.counts = {}
        self.pods = {}  # pod name -> labels
        self.claims = {}  # lease name -> Lease object as first applied
        self.taken_out = set()  # lease names deleted on purpose, to re-create
        self.controller_seq = 0
        self.rogues = []  # controllers started without leader election: two act at once

    # --- the cast ------------------------------------------------------------------------
    def setup(self):
        self.env.apply(namespace(NS))
        for i in range(self.args.locks):
            for j in range(self.args.claimants):
                name = "w-%d-%d" % (i, j)
                self.pods[name] = {"app": "worker"}
                self.claims["lock-%d-%s" % (i, name)] = lease(
                    "lock-%d-%s" % (i, name), NS, "lock-%d" % i, name,
                    leaseDurationSeconds=LEASE_SECONDS, livenessGraceSeconds=GRACE_SECONDS,
                    priority=self.rng.choice(["Foreground", "Background"]))
        for k in range(self.args.election_locks):
            for j in range(self.args.claimants):
                self.pods["g-%d-%d" % (k, j)] = {"app": "elected", "group": "g-%d" % k}
            self.claims["elect-%d" % k] = lease("elect-%d" % k, NS, "election-%d" % k, selector={"group": "g-%d" % k},
                                                leaseDurationSeconds=LEASE_SECONDS,
                                                livenessGraceSeconds=GRACE_SECONDS)
        self.env.apply(*[pod(name, NS, labels) for name, labels in self.pods.items()])
        self.env.apply(*self.claims.values())
        for c in range(2):
            self.start_controller()

    def start_controller(self):
        self.env.start_controller(*ELECTION_FLAGS, name="controller-%d" % self.controller_seq)
        self.controller_seq += 1

    def running_controllers(self):
        return [c for c in self.env.controllers if c.proc.poll() is None and c not in self.rogues]

    def rogue_running(self):
        return any(r.proc.poll() is None for r in self.rogues)

    def split_brain(self):
        """A second controller that acts without leader election for a few seconds, as a
        partitioned old leader would: only conditional writes keep the two apart."""
        rogue = self.env.start_controller("--kube-api-qps", "1000", "--kube-api-burst", "2000",
                                          name="rogue-%d" % len(self.rogues))
        self.rogues.append(rogue)
        self.after(self.rng.uniform(2.0, 6.0), lambda: rogue.stop(sig_kill=self.rng.random() < 0.5))

    # --- scheduling ----------------------------------------------------------------------
    def after(self, seconds, action):
        self.seq += 1
        heapq.heappush(self.later, (time.monotonic() + seconds, self.seq, action))

    def run_due(self):
        while self.later and self.later[0][0] <= time.monotonic():
            heapq.heappop(self.later)[2]()

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    # --- one step of chaos ---------------------------------------------------------------
    def holders(self):
        leases = self.rec.snapshot("lease").values()
        return [l["status"]["holder"]["podName"] for l in leases
                if (l.get("status") or {}).get("phase") == "Held" and l["status"].get("holder", {}).get("podName")]

    def victim(self):
        """A holder three times in four (takeovers are the point), else any claimant."""
        holders = self.holders()
        if holders and self.rng.random() < 0.75:
            return self.rng.choice(holders)
        return self.rng.choice(sorted(self.pods))

    def pod_url(self, name):
        return "%s/api/v1/namespaces/%s/pods/%s" % (self.env.kube_url, NS, name)

    def step(self):
        roll = self.rng.random()
        kube, es = self.env.kube_url, self.env.es_url
        if roll < 0.22:
            self.count("pod_deleted")
            call("DELETE", self.pod_url(self.victim()))
        elif roll < 0.34:
            self.count("pod_force_deleted")
            call("DELETE", self.pod_url(self.victim()) + "?gracePeriodSeconds=0")
        elif roll < 0.44:
            phase = self.rng.choice(TERMINAL)
            self.count("pod_" + phase.lower())
            call("POST", "%s/_emulator/kubelet/pods/%s/%s" % (kube, NS, self.victim()), {"phase": phase})
        elif roll < 0.56:
            self.count("pod_not_ready")
            name = self.victim()
            call("POST", "%s/_emulator/kubelet/pods/%s/%s" % (kube, NS, name), {"ready": False})
            self.after(self.rng.uniform(0.3, 4.0),
                       lambda: call("POST", "%s/_emulator/kubelet/pods/%s/%s" % (kube, NS, name), {"ready": True}))
        elif roll < 0.61:
            self.count("node_not_ready")
            node = "node-%d" % self.rng.randint(1, 3)
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (kube, node), {"ready": self.rng.choice(["False", "Unknown"])})
            self.after(self.rng.uniform(0.5, 4.0),
                       lambda: call("POST", "%s/_emulator/kubelet/nodes/%s" % (kube, node), {"ready": "True"}))
        elif roll < 0.71:
            self.count("es_fault")
            rule = self.rng.choice([{"op": "*", "status": 503, "count": self.rng.randint(1, 20)},
                                    {"op": "bulk", "status": 429, "count": self.rng.randint(1, 5)},
                                    {"op": "*", "drop": True, "count": self.rng.randint(1, 5)},
                                    {"op": "*", "latency_ms": self.rng.randint(50, 400), "count": 10}])
            call("POST", es + "/_emulator/faults", rule)
            if self.rng.random() < 0.2:
                self.count("es_primary_failover")
                call("POST", es + "/_emulator/bump_primary_term?index=" + INDEX)
        elif roll < 0.80:
            self.count("kube_fault")
            choice = self.rng.random()
            if choice < 0.4:
                call("POST", kube + "/_emulator/watches/drop")
            elif choice < 0.7:
                call("POST", kube + "/_emulator/faults",
                     {"verb": "patch", "resource": "leases", "status": 500, "count": self.rng.randint(1, 10)})
            else:
                # Leader-election renewals (coordination Leases are updated with PUT).
                call("POST", kube + "/_emulator/faults",
                     {"verb": "update", "resource": "leases", "status": 500, "count": self.rng.randint(1, 8)})
        elif roll < 0.90:
            self.count("lease_deleted")
            name = self.rng.choice(sorted(set(self.claims) - self.taken_out))
            self.taken_out.add(name)
            call("DELETE", "%s/apis/eslease.io/v1alpha1/namespaces/%s/leases/%s" % (kube, NS, name))
        elif roll < 0.93 and not self.rogue_running():
            self.count("split_brain")
            self.split_brain()
        elif roll < 0.95 or len(self.running_controllers()) < 2:
            running = self.running_controllers()
            if running:
                victim = self.rng.choice(running)
                kill = self.rng.random() < 0.5
                self.count("controller_killed" if kill else "controller_stopped")
                victim.stop(sig_kill=kill)
            self.start_controller()
        # otherwise: a quiet step
        self.heal()

    def heal(self):
        """What a cluster does by itself: a finished pod is deleted and its controller (a
        Job, a StatefulSet) makes a new one; a Lease taken out is applied again."""
        pods = self.rec.snapshot("pod")
        leases = self.rec.snapshot("lease")
        for name, labels in self.pods.items():
            state = pod_state(pods.get(name))
            if state == "terminal":
                call("DELETE", self.pod_url(name) + "?gracePeriodSeconds=0")
            elif state == "gone":
                call("POST", "%s/api/v1/namespaces/%s/pods" % (self.env.kube_url, NS), pod(name, NS, labels))
        for name in list(self.taken_out):
            if name not in leases:
                call("POST", "%s/apis/eslease.io/v1alpha1/namespaces/%s/leases" % (self.env.kube_url, NS),
                     self.claims[name])
                self.taken_out.discard(name)

    def calm(self):
        """Ends every fault and lets every pod and node be well again."""
        call("DELETE", self.env.es_url + "/_emulator/faults")
        call("DELETE", self.env.kube_url + "/_emulator/faults")
        for node in ("node-1", "node-2", "node-3"):
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"ready": "True"})
        self.later = []
        for rogue in self.rogues:
            rogue.stop()
        while len(self.running_controllers()) < 2:
            self.start_controller()

        def settled():
            self.heal()
            pods = self.rec.snapshot("pod")
            for name in self.pods:
                if pod_state(pods.get(name)) == "unready":
                    call("POST", "%s/_emulator/kubelet/pods/%s/%s" % (self.env.kube_url, NS, name), {"ready": True})
            return not self.taken_out and all(pod_state(pods.get(n)) == "ready" for n in self.pods)

        wait_for(settled, 60, "every pod to be Ready again", interval=0.2)


def document_token(env, lock):
    found = call("GET", "%s/%s/_doc/%s" % (env.es_url, INDEX, urllib.parse.quote("%s/%s" % (NS, lock), safe="")))
    if not found or not found.get("found"):
        return None, None
    source = found["_source"]
    token = source.get("fencingToken") or (found["_primary_term"] << 32) | found["_seq_no"]
    return source.get("holder"), str(token)


def unconverged(env, recorder):
    """Locks that do not yet show exactly one Held claim agreeing with their document."""
    leases = recorder.snapshot("lease").values()
    by_lock = {}
    for l in leases:
        by_lock.setdefault(l["spec"]["lockName"], []).append(l)
    wrong = []
    for lock, claims in sorted(by_lock.items()):
        held = [l for l in claims if (l.get("status") or {}).get("phase") == "Held"]
        if len(held) != 1:
            wrong.append("%s: %d Held" % (lock, len(held)))
            continue
        status = held[0]["status"]
        holder, token = document_token(env, lock)
        if holder != "%s/%s" % (NS, status["holder"]["podName"]) or token != status.get("fencingToken"):
            wrong.append("%s: document %s/%s, Lease %s/%s" % (lock, holder, token, status["holder"]["podName"],
                                                               status.get("fencingToken")))
    return wrong


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--locks", type=int, default=12)
    parser.add_argument("--claimants", type=int, default=3)
    parser.add_argument("--election-locks", type=int, default=3)
    parser.add_argument("--step-ms", type=float, default=60, help="mean pause between two chaos steps")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--history", help="write every recorded Pod and Lease event here (JSON lines)")
    parser.add_argument("--logs", help="copy every process's output into this directory")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)

    with Environment(args.bin, args.source) as env:
        recorder = Recorder(env.kube_url)
        chaos = Chaos(env, recorder, args, rng)
        chaos.setup()
        wait_for(lambda: not unconverged(env, recorder), 60, "every lock to be held before the chaos starts",
                 interval=0.1)
        started = time.monotonic()
        while time.monotonic() - started < args.seconds:
            chaos.step()
            chaos.run_due()
            time.sleep(rng.expovariate(1000.0 / args.step_ms))
        chaos_seconds = time.monotonic() - started
        chaos.calm()
        calm_at = time.monotonic()
        wrong = []
        converged = True
        try:
            wait_for(lambda: not unconverged(env, recorder), 60, "every lock to converge", interval=0.1)
        except AssertionError:
            converged = False
            wrong = unconverged(env, recorder)
        convergence = time.monotonic() - calm_at
        recorder.stop()
        with recorder.lock:
            events = list(recorder.events)
        result = check(events)
        if args.history:
            with open(args.history, "w") as out:
                for rv, kind, event_type, obj in sorted(events, key=lambda e: e[0]):
                    out.write(json.dumps({"rv": rv, "kind": kind, "type": event_type, "object": obj}) + "\n")
        report = {
            "benchmark": "chaos",
            "seed": seed,
            "chaos_seconds": round(chaos_seconds, 1),
            "locks": args.locks, "election_locks": args.election_locks, "claimants_per_lock": args.claimants,
            "faults": dict(sorted(chaos.counts.items())),
            "controllers_started": chaos.controller_seq,
            "events_replayed": len(events),
            "history_gaps": recorder.gaps,
            "grants_observed": result.grants,
            "handovers": result.handovers,
            "takeovers_by_reason": dict(sorted(result.takeovers.items())),
            "min_after_expiry_slack_ms": None if result.min_expiry_slack is None
            else round(result.min_expiry_slack * 1000, 1),
            "violations": len(result.violations),
            "violation_details": result.violations[:20],
            "converged": converged,
            "convergence_seconds": round(convergence, 2),
            "unconverged": wrong,
        }
        print(json.dumps(report, indent=2))
        if args.logs:
            shutil.copytree(env.dir, args.logs, dirs_exist_ok=True)
        sys.exit(0 if converged and not result.violations and not recorder.gaps else 1)


if __name__ == "__main__":
    main()
