"""Cold start at scale: LEASES Leases over LOCKS locks with PODS pods are written to the
API emulator first; then eslease-controller starts and the time until every Lease has a
status (one Held per lock, the rest Pending) is measured, with the controller's resident
memory read from /proc out of process and the Elasticsearch requests it cost from the
emulator's counters. Prints JSON.

usage: scale_bench.py BIN_DIR SOURCE_DIR [--leases N] [--locks N] [--pods N]
"""

import argparse
import concurrent.futures
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from controller_env import Environment, lease, namespace, pod  # noqa: E402

NS = "scale"


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as response:
        response.read()


def get(url):
    with urllib.request.urlopen(url, timeout=120) as response:
        return json.loads(response.read())


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--leases", type=int, default=10000)
    parser.add_argument("--locks", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=10000)
    args = parser.parse_args()
    with Environment(args.bin, args.source) as env:
        env.apply(namespace(NS))
        pods_url = env.kube_url + "/api/v1/namespaces/%s/pods" % NS
        leases_url = env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: post(pods_url, pod("pod-%d" % i, NS)), range(args.pods)))
            list(pool.map(lambda i: post(leases_url, lease("lease-%d" % i, NS, "lock-%d" % (i % args.locks),
                                                           "pod-%d" % (i % args.pods))), range(args.leases)))
        seeded = time.monotonic() - started
        env.es("POST", "/_emulator/stats/reset")
        t0 = time.monotonic()
        controller = env.start_controller("--kube-api-qps", "5000", "--kube-api-burst", "10000", "--workers", "8")
        peak = 0
        while True:
            peak = max(peak, rss_kib(controller.proc.pid))
            items = get(leases_url)["items"]
            phases = [i.get("status", {}).get("phase") for i in items]
            if phases.count("Held") == args.locks and phases.count("Pending") == args.leases - args.locks:
                break
            if time.monotonic() - t0 > 300:
                raise SystemExit("did not converge in 300 s: %d Held, %d Pending" %
                                 (phases.count("Held"), phases.count("Pending")))
            time.sleep(1.0)  # listing 10,000 Leases is work for the API server too
        converged = time.monotonic() - t0
        peak = max(peak, rss_kib(controller.proc.pid))
        stats = env.es("GET", "/_emulator/stats")
        print(json.dumps({"benchmark": "scale_cold_start", "leases": args.leases, "locks": args.locks,
                          "pods": args.pods, "seed_seconds": round(seeded, 1),
                          "converge_seconds": round(converged, 2), "controller_peak_rss_mib": round(peak / 1024, 1),
                          "elasticsearch_requests": stats.get("requests"),
                          "targets": {"converge_seconds": 10, "controller_rss_mib": 64}}, indent=2))


if __name__ == "__main__":
    main()
