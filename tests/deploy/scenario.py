"""An end-to-end scenario that exercises every metric family of eslease-controller, run
with the end-to-end harness (tests/e2e/controller_env.py): two replicas with leader
election, contention between Foreground and Background claims, a takeover when the
holder's pod is deleted, a lock held by a process outside Kubernetes (the controller's
create meets a 409, then takes the lock over when it expires), dropped watches, and a
claim that gives up waiting (TimedOut)."""

import collections
import json
import os
import subprocess
import sys

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
from controller_env import Environment, lease, namespace, wait_for  # noqa: E402,F401

NAMESPACE = "shop"  # where the scenario's Leases live
CONTROLLER_NAMESPACE = "eslease-system"  # where the controllers "run" (leader election)
TIMEOUT = 30
LEADER_FLAGS = ["--leader-elect", "--leader-election-namespace", CONTROLLER_NAMESPACE,
                "--leader-election-id", "eslease", "--leader-election-lease-duration", "3s",
                "--leader-election-renew-deadline", "2s", "--leader-election-retry-period", "500ms"]


def phase(env, name, ns=NAMESPACE):
    obj = env.get("esl", name, ns)
    return (obj or {}).get("status", {}).get("phase")


def wait_phase(env, name, wanted, timeout=TIMEOUT):
    wait_for(lambda: phase(env, name) == wanted, timeout, "Lease %s to be %s (now %s)" % (name, wanted, phase(env, name)))


def claim_counts(env):
    """What `eslease_claims` and `eslease_lock_waiters` must say, read from the API: every
    Lease by (phase, priority), a Lease without a status yet counting as Pending (as the
    controller counts it), and how many of them wait (phase Pending) with a live pod that
    could take the lock (the scenario's pods are Ready until they are deleted or finish)."""
    items = json.loads(env.kubectl("get", "esl", "--all-namespaces", "-o", "json").stdout)["items"]
    pods = json.loads(env.kubectl("get", "pods", "--all-namespaces", "-o", "json").stdout)["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp") and
            p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]

    def servable(claim):
        ns, holder = claim["metadata"]["namespace"], claim["spec"]["holder"]
        wanted = holder.get("podSelector", {}).get("matchLabels")
        return any(p["metadata"]["namespace"] == ns and
                   (p["metadata"]["name"] == holder.get("podName") if wanted is None else
                    all(p["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items()))
                   for p in live)

    claims = collections.Counter((i.get("status", {}).get("phase") or "Pending", i["spec"].get("priority", "Foreground"))
                                 for i in items)
    waiting = [i for i in items if (i.get("status", {}).get("phase") or "Pending") == "Pending"
               and not i["metadata"].get("deletionTimestamp")]
    return {"claims": dict(claims), "waiters": sum(1 for i in waiting if servable(i))}


def start_controllers(env, count=2):
    """`count` replicas with leader election; returns them once one leads."""
    env.apply(namespace(CONTROLLER_NAMESPACE))
    replicas = [env.start_controller(*LEADER_FLAGS, name="eslease-%d" % i) for i in range(count)]
    leader_of(env, replicas)
    return replicas


def leader_of(env, replicas):
    def leaders():
        return [c for c in replicas if c.proc.poll() is None and "eslease_leader 1" in env.metrics(c).splitlines()]
    return wait_for(lambda: leaders()[0] if len(leaders()) == 1 else None, TIMEOUT, "exactly one leader")


def run(env, bin_dir, log=print, before_timeouts=None):
    """The scenario, step by step; each step waits for what it causes. `before_timeouts`, when
    given, is called before the first claim times out."""
    ns = NAMESPACE
    env.apply(namespace(ns))
    log("contention: three claims on lock 'report', one Background")
    env.create_ready_pods(ns, ["report-a", "report-b", "report-c", "sync-a"])
    env.apply(lease("report-a", ns, "report", "report-a"))
    wait_phase(env, "report-a", "Held")
    env.apply(lease("report-b", ns, "report", "report-b", priority="Background"),
              lease("report-c", ns, "report", "report-c"))
    wait_phase(env, "report-b", "Pending")
    wait_phase(env, "report-c", "Pending")

    log("takeover: the holder's pod is deleted; the Foreground waiter gets the lock")
    env.kubectl("delete", "pod", "report-a", "-n", ns, "--grace-period=0", "--force")
    wait_phase(env, "report-c", "Held")

    log("the next holder finishes; the Background claim gets the lock")
    env.kubelet("report-c", ns, {"phase": "Succeeded"})
    wait_phase(env, "report-b", "Held")

    log("a process outside Kubernetes holds lock 'sync' for 3s; the claim waits, then takes it over")
    direct = subprocess.run([os.path.join(bin_dir, "eslease"), "--es", env.es_url, "acquire", "sync",
                             "--namespace", ns, "--holder", "cron-host", "--ttl", "3s"],
                            capture_output=True, text=True, timeout=30)
    if direct.returncode != 0:
        raise AssertionError("eslease acquire failed: " + direct.stderr)
    env.apply(lease("sync-a", ns, "sync", "sync-a"))
    wait_phase(env, "sync-a", "Pending")
    # The outside holder renews once: the controller's takeover of the version it saw expire
    # meets a 409 (contention), it re-reads, and takes the lock over when the renewal expires.
    renew = subprocess.run([os.path.join(bin_dir, "eslease"), "--es", env.es_url, "renew", "sync",
                            "--namespace", ns, "--holder", "cron-host", "--ttl", "3s"],
                           capture_output=True, text=True, timeout=30)
    if renew.returncode != 0:
        raise AssertionError("eslease renew failed: " + renew.stderr)
    wait_phase(env, "sync-a", "Held", timeout=20)

    log("the API server drops every watch; the informers restart")
    env.http("POST", env.kube_url + "/_emulator/watches/drop")
    env.create_ready_pods(ns, ["late", "late-2"])
    env.apply(lease("late", ns, "late", "late"))
    wait_phase(env, "late", "Held")
    env.apply(lease("late-2", ns, "late", "late-2", priority="Background"))
    wait_phase(env, "late-2", "Pending")

    log("a second takeover, now that the counters exist: the holder of 'late' is deleted")
    env.kubectl("delete", "pod", "late", "-n", ns, "--grace-period=0", "--force")
    wait_phase(env, "late-2", "Held")

    if before_timeouts:
        before_timeouts()
    log("a Background claim on the held lock 'late' gives up after 1s: TimedOut")
    env.create_ready_pods(ns, ["impatient"])
    env.apply(lease("impatient", ns, "late", "impatient", priority="Background", acquireTimeoutSeconds=1))
    wait_phase(env, "impatient", "TimedOut")


# Metric families the scenario must have made every replica (or the leader) export.
EXPECTED_FAMILIES = [
    "eslease_claims", "eslease_lock_waiters", "eslease_acquire_wait_seconds", "eslease_backend_conflicts_total",
    "eslease_takeovers_total", "eslease_takeover_latency_seconds", "eslease_claim_timeouts_total", "eslease_grants_total", "eslease_releases_total",
    "eslease_expirations_total", "eslease_renewal_failures_total", "eslease_backend_request_duration_seconds",
    "eslease_kube_request_duration_seconds", "eslease_reconcile_total", "eslease_reconcile_duration_seconds",
    "eslease_workqueue_depth", "eslease_watch_restarts_total", "eslease_leader", "eslease_build_info",
]
