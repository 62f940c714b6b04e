"""How fast a holder learns of its grant through `eslease sidecar` (the design's target: 200
on /holds/<lock> within 50 ms, p99, of the Lease showing Held; 503 within the same of the
loss). The controller (default flags), both emulators and one `eslease sidecar` per pod run
as separate processes; a watcher of the namespace's Leases timestamps each change as a user
would see it, and a poller per sidecar asks /holds/<lock> over a kept-alive connection, as
fast as it answers, and timestamps each change of its answer (when the answer arrived: an
upper bound, by at most one round trip).

Two scenarios:
- claim: a Lease for one pod on a free lock; Held -> 200; then the holder lets go (the
  released mark, then the delete): the Lease seen being deleted -> 503. Many samples, quickly.
- election: three pods under one election Lease; the holder turns NotReady (presumed dead):
  the Lease seen leaving Held -> the old holder's sidecar 503; after the revoked grant's
  validity, the successor seen Held -> the successor's sidecar 200.

Prints JSON (p50/p99/max per scenario and edge, negative when the sidecar knew before the
watcher); exits 1 when a sidecar never answered as expected.

usage: sidecar_bench.py BIN_DIR SOURCE_DIR [--claims N] [--handovers N] [--verbose]
"""

import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace, wait_for  # noqa: E402
from cluster import Stream, summary_ms, wait_on  # noqa: E402

NS = "sidecar-bench"
LEASES = "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS
TIMEOUT = 60


def api(env, method, path, body=None):
    """One request to the API server, as a client library sends it (a PATCH is a merge patch)."""
    headers = {"content-type": "application/merge-patch+json" if method == "PATCH" else "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(env.kube_url + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


class LeaseWatch:
    """Every change of the namespace's Leases, as (monotonic time, event type, name, phase,
    token, holder pod, being deleted)."""

    def __init__(self, kube_url):
        self.events = []
        url = kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases?watch=1&timeoutSeconds=3600" % NS
        self.stream = Stream(url, self.handle)

    def handle(self, event, now):
        obj = event.get("object", {})
        status = obj.get("status", {})
        self.events.append((now, event.get("type"), obj.get("metadata", {}).get("name"), status.get("phase"),
                            status.get("fencingToken"), (status.get("holder") or {}).get("podName"),
                            bool(obj.get("metadata", {}).get("deletionTimestamp"))))

    def first(self, match, since, what):
        """The first event after `since` that `match` accepts."""
        return self.stream.wait(lambda: next((e for e in self.events if e[0] >= since and match(e)), None),
                                TIMEOUT, what)


class Poller:
    """Asks one sidecar's /holds/<lock> again and again; keeps each change of its answer as
    (monotonic time the answer arrived, status, token)."""

    def __init__(self, url, lock):
        self.host = url.split("//", 1)[1]
        self.path = "/holds/" + lock
        self.cv = threading.Condition()
        self.changes = []
        self.running = True
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        connection = None
        last = None
        while self.running:
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(self.host, timeout=10)
                connection.request("GET", self.path)
                response = connection.getresponse()
                body = response.read()
                now = time.monotonic()
                token = json.loads(body).get("token") if response.status == 200 else None
                answer = (response.status, token)
            except (OSError, http.client.HTTPException, ValueError):
                connection = None
                time.sleep(0.01)
                continue
            if answer != last:
                last = answer
                with self.cv:
                    self.changes.append((now,) + answer)
                    self.cv.notify_all()
            time.sleep(0.0005)

    def first(self, status, token, since, what):
        """When the answer first became `status` (with `token`, unless None) at or after `since`."""
        return wait_on(self.cv, lambda: next((t for t, s, tok in self.changes
                                              if s == status and (token is None or tok == token) and t >= since),
                                             None), TIMEOUT, what)

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)


class Sidecars:
    """One `eslease sidecar` per pod, and a poller of each for `lock`."""

    def __init__(self, env, lock):
        self.env = env
        self.lock = lock
        self.by_pod = {}

    def start(self, pod):
        process_env = dict(os.environ, POD_NAME=pod, POD_NAMESPACE=NS)
        p = self.env._spawn("sidecar-" + pod, [os.path.join(self.env.bin, "eslease"), "--kubeconfig",
                                                self.env.kubeconfig, "sidecar", "--listen", "127.0.0.1:0"],
                            env=process_env)
        url = "http://" + p.announced(r"serving /holds on (\S+)", TIMEOUT).group(1)
        wait_for(lambda: self.env.http_status(url + "/healthz") == 200, TIMEOUT, "the sidecar of %s" % pod)
        self.by_pod[pod] = (p, Poller(url, self.lock))
        return self.by_pod[pod][1]

    def poller(self, pod):
        return self.by_pod[pod][1]

    def stop(self, pod):
        p, poller = self.by_pod.pop(pod)
        poller.stop()
        p.stop()

    def stop_all(self):
        for pod in list(self.by_pod):
            self.stop(pod)


def claim_scenario(env, watch, claims, log):
    """A claim on a free lock, granted and let go of, again and again."""
    sidecars = Sidecars(env, "report")
    env.create_ready_pods(NS, ["reporter"])
    poller = sidecars.start("reporter")
    granted, lost = [], []
    try:
        for i in range(claims):
            name = "report-%d" % i
            since = time.monotonic()
            api(env, "POST", LEASES, lease(name, NS, "report", "reporter"))
            held = watch.first(lambda e: e[2] == name and e[3] == "Held" and e[4], since, "%s Held" % name)
            seen = poller.first(200, held[4], since, "the sidecar to report %s" % name)
            granted.append(seen - held[0])
            # The holder lets go, as `eslease release` from its pod does: the released mark,
            # then the delete.
            api(env, "PATCH", LEASES + "/" + name, {"metadata": {"annotations": {"eslease.io/released": held[4]}}})
            since = time.monotonic()
            api(env, "DELETE", LEASES + "/" + name)
            going = watch.first(lambda e: e[2] == name and (e[6] or e[1] == "DELETED"), since, "%s deleted" % name)
            gone = poller.first(503, None, since, "the sidecar to stop reporting %s" % name)
            lost.append(gone - going[0])
            watch.first(lambda e: e[2] == name and e[1] == "DELETED", since, "%s gone" % name)
            log("claim %3d: Held -> 200 %+.1f ms; deleted -> 503 %+.1f ms" % (
                i + 1, granted[-1] * 1000, lost[-1] * 1000))
    finally:
        sidecars.stop_all()
    return {"granted_to_200": summary_ms(granted), "lost_to_503": summary_ms(lost)}


def election_scenario(env, watch, handovers, log):
    """The election holder turns NotReady: revoked, then handed over after its validity."""
    sidecars = Sidecars(env, "leader")
    pods = ["web-0", "web-1", "web-2"]
    env.create_ready_pods(NS, pods, labels={"app": "web"})
    for pod in pods:
        sidecars.start(pod)
    since = time.monotonic()
    env.apply(lease("web-leader", NS, "leader", selector={"app": "web"}, leaseDurationSeconds=3,
                    livenessGraceSeconds=1))
    held = watch.first(lambda e: e[2] == "web-leader" and e[3] == "Held" and e[4], since, "the first grant")
    granted, lost = [], []
    try:
        for i in range(handovers):
            token, holder = held[4], held[5]
            sidecars.poller(holder).first(200, token, since, "the holder's sidecar to report it")
            since = time.monotonic()
            env.kubelet(holder, NS, {"ready": False})
            leaving = watch.first(lambda e: e[2] == "web-leader" and (e[3] != "Held" or e[4] != token), since,
                                  "the grant to %s to end" % holder)
            gone = sidecars.poller(holder).first(503, None, since, "the old holder's sidecar to stop reporting")
            lost.append(gone - leaving[0])
            held = watch.first(lambda e: e[2] == "web-leader" and e[3] == "Held" and e[4] and e[4] != token,
                               since, "the successor's grant")
            seen = sidecars.poller(held[5]).first(200, held[4], since, "the successor's sidecar to report it")
            granted.append(seen - held[0])
            log("handover %3d: %s -> %s; left Held -> 503 %+.1f ms; Held -> 200 %+.1f ms" % (
                i + 1, holder, held[5], lost[-1] * 1000, granted[-1] * 1000))
            env.kubelet(holder, NS, {"ready": True})
            wait_for(lambda: env.pod_ready(holder, NS), TIMEOUT, "pod %s Ready again" % holder)
    finally:
        sidecars.stop_all()
    return {"granted_to_200": summary_ms(granted), "lost_to_503": summary_ms(lost)}


def run(bin_dir, source, claims, handovers, log=lambda m: None):
    with Environment(bin_dir, source) as env:
        env.start_controller()
        env.apply(namespace(NS))
        watch = LeaseWatch(env.kube_url)
        result = {"benchmark": "sidecar", "controller_flags": "defaults"}
        result["claim"] = claim_scenario(env, watch, claims, log)
        result["election"] = election_scenario(env, watch, handovers, log)
        return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--handovers", type=int, default=20)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    result = run(args.bin, args.source, args.claims, args.handovers,
                 log=(lambda m: print(m, file=sys.stderr)) if args.verbose else (lambda m: None))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
