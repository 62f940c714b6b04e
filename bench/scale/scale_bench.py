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


def claims(env, controller):
    """(Held, Pending) claims as the controller's eslease_claims gauge counts them."""
    held = pending = 0
    for line in env.metrics(controller).splitlines():
        if line.startswith("eslease_claims{"):
            value = int(float(line.rsplit(" ", 1)[1]))
            if 'phase="Held"' in line:
                held += value
            elif 'phase="Pending"' in line:
                pending += value
    return held, pending


def cpu_seconds(pid):
    """User + system CPU time a process has used so far, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
        # The simulated kubelet starts every pod; the cluster is settled before the controller
        # starts, as in a cold start of the controller alone.
        while any(p.get("status", {}).get("phase") != "Running" for p in get(pods_url)["items"]):
            if time.monotonic() - started > 300:
                raise SystemExit("pods did not start in 300 s")
            time.sleep(0.5)
        seeded = time.monotonic() - started
        env.es("POST", "/_emulator/stats/reset")
        kube_pid = next(p.proc.pid for p in env.processes if p.name == "kube-emulator")
        kube_cpu_before = cpu_seconds(kube_pid)
        t0 = time.monotonic()
        controller = env.start_controller("--kube-api-qps", "5000", "--kube-api-burst", "10000", "--workers", "8")
        peak = 0
        # The controller's own claim counts follow its watch of the Leases, so they reach the
        # target once the API holds every status; a scrape is far cheaper for the emulator
        # than listing 10,000 Leases, which would slow down what is measured.
        # (A Lease without a status yet counts as Pending there, so the API has the last word.)
        target = (args.locks, args.leases - args.locks)
        while True:
            peak = max(peak, rss_kib(controller.proc.pid))
            if claims(env, controller) == target:
                phases = [i.get("status", {}).get("phase") for i in get(leases_url)["items"]]
                if (phases.count("Held"), phases.count("Pending")) == target:
                    break
            if time.monotonic() - t0 > 300:
                raise SystemExit("did not converge in 300 s: (Held, Pending) = %s" % (claims(env, controller),))
            time.sleep(0.2)  # a scrape counts 10,000 Leases: not too often
        converged = time.monotonic() - t0
        peak = max(peak, rss_kib(controller.proc.pid))
        # Where the time went: the two processes share the machine's cores.
        cpu = {"controller": round(cpu_seconds(controller.proc.pid), 2),
               "kube_emulator": round(cpu_seconds(kube_pid) - kube_cpu_before, 2)}
        stats = env.es("GET", "/_emulator/stats")
        print(json.dumps({"benchmark": "scale_cold_start", "leases": args.leases, "locks": args.locks,
                          "pods": args.pods, "seed_seconds": round(seeded, 1),
                          "converge_seconds": round(converged, 2), "controller_peak_rss_mib": round(peak / 1024, 1),
                          "cpu_seconds_while_converging": cpu,
                          "elasticsearch_requests": stats.get("requests"),
                          "targets": {"converge_seconds": 10, "controller_rss_mib": 64}}, indent=2))


if __name__ == "__main__":
    main()
