"""Cold start at scale: LEASES Leases over LOCKS locks with PODS pods are written to the
API emulator first; then eslease-controller starts and the time until every Lease has a
status (one Held per lock, the rest Pending) is measured, with the controller's resident
memory read from /proc out of process, its CPU time in all and by thread name (workers,
informers, session keeper, ...) and the Elasticsearch requests it cost from the emulator's
counters. Prints JSON.

Two runs, each on a fresh pair of emulators:
- fast (the top-level figures): --kube-api-qps 5000 --kube-api-burst 10000 --workers 8, so
  the figures show the controller rather than its client rate limit;
- default-flags (under "default_flags"): the cold start at the controller's defaults, with
  the Kubernetes writes it took until convergence (the kube-emulator's counters) against its
  bound, those writes divided by the default --kube-api-qps (and the same less the default
  --kube-api-burst, which the client's limiter lets through at once); then, --settle-seconds after convergence,
  the writes per second at rest over --steady-seconds; then a restart: the controller is
  stopped with SIGTERM and a new one started, and the writes it makes until the Leases are
  converged again (every Lease shows the phase, holder and token it showed before, and every
  Held grant a validity that ends at least a lease duration after the new controller
  started, which only it can have published), and how long that took; then the same after a
  crash ("restart_after_crash"): the new controller is killed with SIGKILL, so nothing is
  released or handed on, and another one started.

usage: scale_bench.py BIN_DIR SOURCE_DIR [--leases N] [--locks N] [--pods N] [--runs fast,default-flags]
                      [--steady-seconds 30] [--settle-seconds 10] [--default-flags-timeout 900]
                      [--fast-timeout 300]

ESLEASE_CONTROLLER_WRAPPER (e.g. "valgrind --tool=callgrind") prefixes the controller's command,
for profiling.
"""

import concurrent.futures
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cluster import (Cluster, bench_arguments, controller_default, kube_writes, rss_kib,  # noqa: E402
                     writes_between)
from controller_env import Environment, lease, namespace, pod  # noqa: E402
from validity import DEFAULT_LEASE_DURATION_SECONDS  # noqa: E402

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


def status_writes(env):
    """The writes to Lease statuses the kube-emulator has answered so far."""
    counts = get(env.kube_url + "/_emulator/stats").get("subresource_requests", {})
    return counts.get("patch leases.eslease.io/status", 0) + counts.get("update leases.eslease.io/status", 0)


def cpu_seconds(pid):
    """User + system CPU time a process has used so far, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_by_thread(pid):
    """User + system CPU time of a process's live threads, summed by thread name (the
    controller names its threads: "worker", "watch:pods", "sessions", "events", ...), from
    /proc. Threads that have ended are not listed."""
    by_name = {}
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "stat")) as f:
                text = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        used = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        by_name[name] = by_name.get(name, 0.0) + used
    return by_name


def seed(env, args):
    """Writes the pods and Leases and waits until the simulated kubelet runs every pod: the
    cluster is settled before the controller starts, as in a cold start of the controller
    alone. Returns how long that took."""
    env.apply(namespace(NS))
    pods_url = env.kube_url + "/api/v1/namespaces/%s/pods" % NS
    leases_url = env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: post(pods_url, pod("pod-%d" % i, NS)), range(args.pods)))
        list(pool.map(lambda i: post(leases_url, lease("lease-%d" % i, NS, "lock-%d" % (i % args.locks),
                                                       "pod-%d" % (i % args.pods))), range(args.leases)))
    while any(p.get("status", {}).get("phase") != "Running" for p in get(pods_url)["items"]):
        if time.monotonic() - started > 300:
            raise SystemExit("pods did not start in 300 s")
        time.sleep(0.5)
    return time.monotonic() - started


def converge(env, args, controller, t0, timeout):
    """Waits until every Lease has its status (one Held per lock, the rest Pending).
    Returns (seconds from t0, or None after `timeout`; the controller's peak RSS in KiB; the
    CPU seconds the controller and the kube-emulator had used by then)."""
    leases_url = env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % NS
    peak = 0
    # Every Lease needs a status write first, so nothing is looked at until the emulator has
    # counted as many (the emulators are fresh: every status write is the controller's).
    # Then the controller's own claim counts, which follow its watch of the Leases: a scrape
    # is far cheaper for the emulator than listing every Lease (at 100,000 Leases one list
    # costs it seconds), but not free for the controller (its waiters gauge reads every
    # waiting Lease and its pod), so it is not asked twice a second for the whole run: the
    # probe would weigh on what it measures. A Lease without a status yet counts as Pending
    # there, so the API has the last word. The time and the CPU are taken as the scrape that
    # shows convergence begins, less what the scrapes before it cost the controller: the
    # probe is not the cold start, and the list that confirms it takes seconds at 100,000
    # Leases while the controller's renewals go on, converged or not.
    target = (args.locks, args.leases - args.locks)
    kube_pid = next(p.proc.pid for p in env.processes if p.name == "kube-emulator")
    probing = 0.0  # controller CPU spent while it was being scraped
    while True:
        peak = max(peak, rss_kib(controller.proc.pid))
        if status_writes(env) >= args.leases:
            seen_at = time.monotonic() - t0
            scraped_from = cpu_seconds(controller.proc.pid)
            before = {"controller": scraped_from - probing, "kube_emulator": cpu_seconds(kube_pid),
                      "controller_by_thread": cpu_seconds_by_thread(controller.proc.pid)}
            counted = claims(env, controller)
            probing += cpu_seconds(controller.proc.pid) - scraped_from
            if counted == target:
                phases = [i.get("status", {}).get("phase") for i in get(leases_url)["items"]]
                if (phases.count("Held"), phases.count("Pending")) == target:
                    return seen_at, max(peak, rss_kib(controller.proc.pid)), before
        if time.monotonic() - t0 > timeout:
            return None, peak, None
        time.sleep(0.5)  # a scrape reads every waiting Lease and its pod: not too often


def fast_cold_start(args):
    """The cold start with a client rate limit high enough to show the controller rather
    than the limit."""
    with Environment(args.bin, args.source) as env:
        seeded = seed(env, args)
        env.es("POST", "/_emulator/stats/reset")
        kube_pid = next(p.proc.pid for p in env.processes if p.name == "kube-emulator")
        kube_cpu_before = cpu_seconds(kube_pid)
        writes_before = kube_writes(env.kube_url)
        t0 = time.monotonic()
        controller = env.start_controller("--kube-api-qps", "5000", "--kube-api-burst", "10000", "--workers", "8")
        converged, peak, cpu_then = converge(env, args, controller, t0, args.fast_timeout)
        if converged is None:
            raise SystemExit("did not converge in %g s: (Held, Pending) = %s" % (args.fast_timeout,
                                                                                 claims(env, controller)))
        # Where the time went: the two processes share the machine's cores.
        cpu = {"controller": round(cpu_then["controller"], 2),
               "kube_emulator": round(cpu_then["kube_emulator"] - kube_cpu_before, 2),
               # Which work grew: the workers and informers grow with the Leases, the session
               # keeper with the held locks times the length of the cold start, and the
               # metrics server's threads ("http-serve") with this benchmark's own scrapes.
               "controller_by_thread": {name: round(seconds, 2) for name, seconds in
                                        sorted(cpu_then["controller_by_thread"].items())}}
        writes = writes_between(writes_before, kube_writes(env.kube_url))
        stats = env.es("GET", "/_emulator/stats")
        return {"benchmark": "scale_cold_start", "leases": args.leases, "locks": args.locks,
                "pods": args.pods, "seed_seconds": round(seeded, 1),
                "converge_seconds": round(converged, 2), "controller_peak_rss_mib": round(peak / 1024, 1),
                "cpu_seconds_while_converging": cpu,
                "elasticsearch_requests": stats.get("requests"), "kube_writes": writes,
                "targets": {"converge_seconds": 10, "controller_rss_mib": 64}}


def default_flags(args):
    """The cold start at the controller's default flags against its bound (its Kubernetes
    writes divided by the default --kube-api-qps), the writes per second at rest, and a
    restart over the converged Leases."""
    qps = float(controller_default(args.bin, "--kube-api-qps"))
    burst = int(controller_default(args.bin, "--kube-api-burst"))
    with Environment(args.bin, args.source) as env:
        seed(env, args)
        before = kube_writes(env.kube_url)
        t0 = time.monotonic()
        controller = env.start_controller()
        converged, peak, _ = converge(env, args, controller, t0, args.default_flags_timeout)
        writes = writes_between(before, kube_writes(env.kube_url))
        cold = {"converged": converged is not None, "kube_api_qps": qps, "kube_api_burst": burst,
                "kube_writes": writes, "bound_seconds": round(writes["total"] / qps, 2),
                # The client lets a burst through at once: the least time its limiter allows.
                "bound_less_burst_seconds": round(max(0, writes["total"] - burst) / qps, 2),
                "controller_peak_rss_mib": round(peak / 1024, 1)}
        if converged is None:
            held, pending = claims(env, controller)
            cold.update(timeout_seconds=args.default_flags_timeout, held=held, pending=pending)
            return {"cold_start": cold}
        cold.update(converge_seconds=round(converged, 2),
                    converge_over_bound=round(converged / (writes["total"] / qps), 2) if writes["total"] else None)
        time.sleep(args.settle_seconds)
        at_rest = kube_writes(env.kube_url)
        started = time.monotonic()
        time.sleep(args.steady_seconds)
        steady = writes_between(at_rest, kube_writes(env.kube_url), time.monotonic() - started)
        steady["after_seconds_converged"] = args.settle_seconds
        restarted, controller = restart(env, args, controller, sig_kill=False)
        crashed, _ = restart(env, args, controller, sig_kill=True)
        return {"cold_start": cold, "steady_state": steady, "restart": restarted, "restart_after_crash": crashed,
                "targets": {"cold_start_over_bound": 1.1, "restart_kube_writes": 100, "restart_seconds": 5}}


def restart(env, args, controller, sig_kill):
    """Stops the converged controller (SIGTERM, or SIGKILL: a crash, which releases nothing)
    and starts a new one; returns the report and the new controller. The Leases are converged
    again when every one shows the phase, holder and fencing token it showed before the stop,
    and every Held grant has been shown a validity that only the new controller can have
    published: one that ends at least a lease duration after it started."""
    cluster = Cluster(env)
    cluster.wait(lambda: len(cluster.leases) == args.leases, 120, "the watch to list every Lease")
    before = {key: shown(obj) for key, obj in cluster.leases.items()}
    ahead_of_stop = kube_writes(env.kube_url)
    code = controller.stop(sig_kill=sig_kill)
    env.es("POST", "/_emulator/stats/reset")
    stopped = kube_writes(env.kube_url)
    t0_wall, t0 = time.time(), time.monotonic()
    successor = env.start_controller()
    changed, stale = len(before), len(before)
    while time.monotonic() - t0 < args.default_flags_timeout:
        cluster.update()
        changed = sum(1 for key, was in before.items() if shown(cluster.leases.get(key)) != was)
        stale = sum(1 for ns, name, _token, until, _rule in cluster.live.held()
                    if until is None or until < t0_wall + duration(cluster.leases[(ns, name)]))
        if changed == 0 and stale == 0:
            break
        time.sleep(0.1)
    converged = time.monotonic() - t0 if changed == 0 and stale == 0 else None
    return {"stopped_with": "SIGKILL" if sig_kill else "SIGTERM", "exit_code": code, "converged": converged is not None,
            "converge_seconds": None if converged is None else round(converged, 2),
            "kube_writes_while_stopping": writes_between(ahead_of_stop, stopped)["total"],
            "kube_writes_until_converged": writes_between(stopped, kube_writes(env.kube_url)),
            "elasticsearch_requests_until_converged": env.es("GET", "/_emulator/stats").get("requests"),
            "leases_changed": changed, "held_not_yet_renewed": stale}, successor


def shown(obj):
    status = (obj or {}).get("status") or {}
    return status.get("phase"), (status.get("holder") or {}).get("podName"), status.get("fencingToken")


def duration(obj):
    return obj["spec"].get("leaseDurationSeconds") or DEFAULT_LEASE_DURATION_SECONDS


def main():
    parser = bench_arguments()
    parser.add_argument("--leases", type=int, default=10000)
    parser.add_argument("--locks", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--runs", default="fast,default-flags",
                        help="fast: --kube-api-qps 5000 --kube-api-burst 10000 --workers 8; "
                             "default-flags: the controller's defaults, the steady state and a restart")
    parser.add_argument("--steady-seconds", type=float, default=30, help="the window measured at rest")
    parser.add_argument("--settle-seconds", type=float, default=10, help="time after convergence before it")
    parser.add_argument("--default-flags-timeout", type=float, default=900)
    parser.add_argument("--fast-timeout", type=float, default=300,
                        help="the fast run's limit (longer under ESLEASE_CONTROLLER_WRAPPER, e.g. a profiler)")
    args = parser.parse_args()
    runs = set(args.runs.split(","))
    if runs - {"fast", "default-flags"}:
        parser.error("unknown run: %s" % ", ".join(sorted(runs - {"fast", "default-flags"})))
    result = fast_cold_start(args) if "fast" in runs else {"benchmark": "scale_cold_start"}
    if "default-flags" in runs:
        result["default_flags"] = default_flags(args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
