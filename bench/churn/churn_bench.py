"""Per-job churn, as a long-lived controller sees it: rounds of --batch Leases, each on a lock
name never used before and held by a pod of its own, until --names distinct names have been
used. Each round creates the pods and the Leases, waits until every Lease is Held, releases
them as the tool does (`eslease release`: the eslease.io/released marker with the grant's
token, then the Lease deleted), waits until the Leases are gone, and deletes the pods. The
controller runs at its default flags, with both emulators, as separate processes.

Prints JSON: the controller's resident memory (VmRSS from /proc) after --warmup-names and at
the end (once the last session is gone, or after --settle-seconds), with samples between;
the lock documents left in the index and the session objects left; the distinct names; the
rate sustained (names per second) and the time taken. A controller that keeps nothing per
name once it is gone ends at about the memory it had after the warm-up.

usage: churn_bench.py BIN_DIR SOURCE_DIR [--names 100000] [--batch 200] [--warmup-names 2000]
                      [--samples 20] [--settle-seconds 120] [--round-timeout 300]
"""

import json
import os
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cluster import bench_arguments, call, in_parallel, rss_kib  # noqa: E402
from controller_env import Environment, lease, namespace, pod, wait_for  # noqa: E402
from validity import SESSION_NAME  # noqa: E402

NS = "churn"
LEASES = "/apis/eslease.io/v1alpha1"
INDEX = "eslease-locks"
RELEASED_ANNOTATION = "eslease.io/released"


class LeasePhases:
    """The phase and fencing token of every Lease of the namespace, from one watch; only what
    exists now is kept, so the driver's own memory stays flat over a long run."""

    def __init__(self, kube_url):
        self.current = {}  # name -> (phase, token)
        self._lock = threading.Lock()
        self.error = None
        url = kube_url + LEASES + "/namespaces/%s/leases?watch=1" % NS
        self._stream = urllib.request.urlopen(url, timeout=3600)
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self):
        try:
            for line in self._stream:
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "ERROR":
                    raise RuntimeError("the Lease watch failed: %s" % obj)
                if event["type"] == "BOOKMARK":
                    continue
                name = obj["metadata"]["name"]
                status = obj.get("status") or {}
                with self._lock:
                    if event["type"] == "DELETED":
                        self.current.pop(name, None)
                    else:
                        self.current[name] = (status.get("phase"), status.get("fencingToken"))
        except Exception as e:  # the emulator stopped, or the stream broke: waits say so
            self.error = e

    def get(self, name):
        with self._lock:
            return self.current.get(name)

    def count(self, names):
        with self._lock:
            return sum(1 for n in names if n in self.current)

    def all_held(self, names):
        with self._lock:
            return all((self.current.get(n) or (None,))[0] == "Held" for n in names)


def one_round(env, phases, r, args):
    """One round of per-job locks: created, Held, released as the tool releases, gone."""
    jobs = ["job-%d-%d" % (r, i) for i in range(args.batch)]
    pods_url = "%s/api/v1/namespaces/%s/pods" % (env.kube_url, NS)
    leases_url = "%s%s/namespaces/%s/leases" % (env.kube_url, LEASES, NS)
    in_parallel(lambda j: call("POST", pods_url, pod(j, NS)), jobs)
    in_parallel(lambda j: call("POST", leases_url, lease(j, NS, "lock-" + j, j)), jobs)
    wait_for(lambda: watched(phases, phases.all_held, jobs), args.round_timeout,
             "round %d: %d Leases Held" % (r, len(jobs)), 0.05)

    def release(job):
        token = (phases.get(job) or (None, None))[1]
        marker = {"metadata": {"annotations": {RELEASED_ANNOTATION: token}}}
        req = urllib.request.Request("%s/%s" % (leases_url, job), data=json.dumps(marker).encode(), method="PATCH",
                                     headers={"content-type": "application/merge-patch+json"})
        urllib.request.urlopen(req, timeout=120).read()
        call("DELETE", "%s/%s" % (leases_url, job))

    in_parallel(release, jobs)
    wait_for(lambda: watched(phases, lambda names: phases.count(names) == 0, jobs), args.round_timeout,
             "round %d: the Leases to be gone" % r, 0.05)
    in_parallel(lambda j: call("DELETE", "%s/%s" % (pods_url, j)), jobs)


def watched(phases, condition, names):
    """condition(names) over what the watch has shown; fails once the watch has ended."""
    if phases.error is not None:
        raise AssertionError("the Lease watch ended: %s" % phases.error)
    return condition(names)


def leftovers(env):
    """(lock documents in the index, session objects in the cluster, pods left)."""
    try:
        documents = env.es("GET", "/%s/_count" % INDEX)["count"]
    except urllib.error.HTTPError as e:
        documents = 0 if e.code == 404 else None
    selector = urllib.parse.quote("metadata.name=" + SESSION_NAME)
    sessions = len(call("GET", env.kube_url + "/apis/coordination.k8s.io/v1/leases?fieldSelector=" + selector)["items"])
    pods = len(call("GET", "%s/api/v1/namespaces/%s/pods" % (env.kube_url, NS))["items"])
    return documents, sessions, pods


def main():
    parser = bench_arguments()
    parser.add_argument("--names", type=int, default=100000, help="distinct lock names used in all")
    parser.add_argument("--batch", type=int, default=200, help="Leases (and pods) per round")
    parser.add_argument("--warmup-names", type=int, default=2000, help="names before the first memory figure")
    parser.add_argument("--samples", type=int, default=20, help="memory samples taken along the run")
    parser.add_argument("--settle-seconds", type=float, default=120,
                        help="at most this long after the last round for the session to go")
    parser.add_argument("--round-timeout", type=float, default=300)
    args = parser.parse_args()
    rounds = max(1, (args.names + args.batch - 1) // args.batch)
    warmup_rounds = min(rounds, max(1, (args.warmup_names + args.batch - 1) // args.batch))
    sample_every = max(1, (rounds - warmup_rounds) // max(1, args.samples))
    with Environment(args.bin, args.source) as env:
        env.apply(namespace(NS))
        controller = env.start_controller()
        pid = controller.proc.pid
        phases = LeasePhases(env.kube_url)
        started = time.monotonic()
        warm = None
        samples = []
        for r in range(rounds):
            one_round(env, phases, r, args)
            names = (r + 1) * args.batch
            if r + 1 == warmup_rounds:
                warm = {"names": names, "rss_mib": round(rss_kib(pid) / 1024, 1),
                        "seconds": round(time.monotonic() - started, 1)}
            elif r + 1 > warmup_rounds and (r + 1 - warmup_rounds) % sample_every == 0:
                samples.append({"names": names, "rss_mib": round(rss_kib(pid) / 1024, 1),
                                "seconds": round(time.monotonic() - started, 1)})
                print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
        elapsed = time.monotonic() - started
        names = rounds * args.batch
        settle_until = time.monotonic() + args.settle_seconds
        documents, sessions, pods = leftovers(env)
        while (documents or sessions or pods) and time.monotonic() < settle_until:
            time.sleep(1)
            documents, sessions, pods = leftovers(env)
        end_rss = rss_kib(pid) / 1024
        result = {"benchmark": "churn", "distinct_lock_names": names, "batch": args.batch,
                  "elapsed_seconds": round(elapsed, 1), "names_per_second": round(names / elapsed, 1),
                  "controller_rss_mib": {"after_warmup": warm["rss_mib"], "end": round(end_rss, 1),
                                         "growth": round(end_rss - warm["rss_mib"], 1),
                                         "growth_kib_per_1000_names": round(
                                             (end_rss - warm["rss_mib"]) * 1024 * 1000 / max(1, names - warm["names"]),
                                             1)},
                  "warmup": warm, "samples": samples,
                  "left": {"lock_documents": documents, "session_objects": sessions, "pods": pods},
                  "controller_flags": "defaults"}
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
