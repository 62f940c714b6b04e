"""Hand-overs in bulk, at the controller's default flags unless a scenario says otherwise. The
controller and both emulators run as separate processes; what is measured is what a watcher
of the API sees.

- drain: LOCKS locks, each with a holder claim and a waiting claim; every holder pod is
  deleted at once, in one DeleteCollection request (a node drain, a rollout). From that
  request, when the successors' Leases were first shown Held (the first, p50, the last), and
  how long the request itself took; run at the default flags and again with
  --kube-api-qps 2000.
- not-ready: a node with HOLDERS holders goes NotReady beside BYSTANDERS other held locks.
  For each of its locks, the successor's Held time minus the moment the validity published
  to its predecessor ended (bench/common/validity.py reads it from the Lease status or from
  the namespace's session, whichever the controller publishes), and how many hand-overs
  came earlier than that (the design allows none); also when each predecessor was seen
  revoked (its Lease no longer Held with its token) and listed in the session, if it was.
- queue: one lock with QUEUE waiting claims; its holder pod is deleted, and the Kubernetes
  writes the hand-over costs are counted (the kube-emulator's counters, from the deletion
  until the writes stop).

Prints JSON; --png FILE draws the drain's successors over time and the not-ready hand-overs.

usage: mass_takeover_bench.py BIN_DIR SOURCE_DIR [--locks 1000] [--holders 100] [--bystanders 1000]
                              [--queue 300] [--scenarios drain,not-ready,queue] [--png FILE]
"""

import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cluster import (Cluster, bench_arguments, call, draw_or_warn, in_parallel, kube_writes,  # noqa: E402
                     percentile, summary_ms, writes_between)
from controller_env import Environment  # noqa: E402
from validity import revoked_grants  # noqa: E402

NS = "bench"
NODE = "node-1"  # the node that goes NotReady; the simulated kubelet runs node-1 .. node-3
OTHER_NODES = ("node-2", "node-3")


def names(prefix, count):
    return ["%s-%d" % (prefix, i) for i in range(count)]


def delete_pod(env, name):
    """Deletes a pod at once (grace 0: confirmed dead when the call returns); returns when."""
    call("DELETE", "%s/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (env.kube_url, NS, name))
    return time.time()


def one_claim_per_lock(cluster, prefix, locks, pods, phase):
    """Claims `<prefix>-i` on locks[i] by pods[i]; waits until all show `phase`."""
    leases = names(prefix, len(pods))
    cluster.create_claims(NS, list(zip(leases, locks, pods)))
    cluster.wait_phases(NS, leases, phase)
    return leases


def settle(seconds):
    """Leaves the controller time for the writes that follow the last status (annotations,
    events) before the measured moment."""
    time.sleep(seconds)


# --- drain ------------------------------------------------------------------------------
def drain(args, flags):
    with Environment(args.bin, args.source) as env:
        env.start_controller(*flags)
        cluster = Cluster(env)
        cluster.namespace(NS)
        holders, waiters = names("holder", args.locks), names("waiter", args.locks)
        cluster.create_pods(NS, holders, labels={"app": "worker", "role": "holder"})
        cluster.create_pods(NS, waiters)
        locks = names("lock", args.locks)
        one_claim_per_lock(cluster, "a", locks, holders, "Held")
        successors = one_claim_per_lock(cluster, "b", locks, waiters, "Pending")
        settle(args.settle_seconds)
        before = kube_writes(env.kube_url)
        started = time.time()
        # Every holder at once, in one request (grace 0: confirmed dead when it returns), as a
        # DeleteCollection does: the client's own pace of 1,000 single deletions (1.3 to 1.8 s
        # here) would be measured otherwise.
        call("DELETE", "%s/api/v1/namespaces/%s/pods?labelSelector=role%%3Dholder&gracePeriodSeconds=0"
             % (env.kube_url, NS))
        deleted = time.time()
        cluster.wait(lambda: all(cluster.phase(NS, b) == "Held" for b in successors), args.timeout,
                     "every successor to be Held")
        after = kube_writes(env.kube_url)
        held = [cluster.first_held[(NS, b, cluster.token(NS, b))] for b in successors]
        since_start = [t - started for t in held]
        return {"flags": flags, "locks": args.locks,
                "deletions_seconds": round(deleted - started, 3),
                "since_drain_began": {"first_ms": round(min(since_start) * 1000, 1),
                                      "p50_ms": round(percentile(since_start, 50) * 1000, 1),
                                      "last_ms": round(max(since_start) * 1000, 1)},
                "kube_writes_until_last_held": writes_between(before, after, own={"deletecollection pods": 1}),
                "_since_start": since_start}


# --- a node goes NotReady ---------------------------------------------------------------
def not_ready(args):
    with Environment(args.bin, args.source) as env:
        env.start_controller()
        cluster = Cluster(env)
        cluster.namespace(NS)
        holders, waiters, others = names("nr-holder", args.holders), names("nr-waiter", args.holders), \
            names("other-holder", args.bystanders)
        cluster.create_pods(NS, holders, node=NODE)
        for i, node in enumerate(OTHER_NODES):
            cluster.create_pods(NS, waiters[i::2] + others[i::2], node=node)
        locks = names("nr-lock", args.holders)
        predecessors = one_claim_per_lock(cluster, "nr-a", locks, holders, "Held")
        bystanders = one_claim_per_lock(cluster, "other", names("other-lock", args.bystanders), others, "Held")
        successors = one_claim_per_lock(cluster, "nr-b", locks, waiters, "Pending")
        settle(args.settle_seconds)
        grants = {a: int(cluster.token(NS, a)) for a in predecessors + bystanders}
        went_not_ready = time.time()
        env.node_ready(NODE, "False")
        cluster.wait(lambda: all(cluster.phase(NS, b) == "Held" for b in successors), args.timeout,
                     "every successor of the NotReady node's holders to be Held")
        model = cluster.validity()
        after_validity, rules, revoked, listed = [], collections.Counter(), [], []
        for a, b in zip(predecessors, successors):
            until, rule = model.published_until(NS, a, grants[a])
            rules[rule or "nothing published"] += 1
            revoked.append(first_seen_without(cluster, a, grants[a], went_not_ready) - went_not_ready)
            seen_listed = first_seen_listed(cluster, a, grants[a])
            if seen_listed is not None:
                listed.append(seen_listed - went_not_ready)
            if until is not None:
                after_validity.append(cluster.first_held[(NS, b, cluster.token(NS, b))] - until)
        lost = sum(1 for a in bystanders if model.shown(NS, a) is None or model.shown(NS, a)[0] != grants[a])
        return {"holders": args.holders, "bystanders": args.bystanders,
                "successor_held_after_predecessor_validity": summary_ms(after_validity),
                "handed_over_before_validity_ended": sum(1 for x in after_validity if x < 0),
                "revoked_after_node_not_ready": summary_ms(revoked),
                "listed_in_session_after_node_not_ready": summary_ms(listed),
                "validity_published_by": dict(rules),
                "bystander_grants_lost": lost,
                "_after_validity": after_validity}


def first_seen_without(cluster, name, token, since):
    """When the watch first showed Lease `name` no longer Held with `token` after `since`."""
    for seen, event_type, obj in cluster.lease_watch.events:
        if seen < since or obj["metadata"]["name"] != name:
            continue
        status = obj.get("status") or {}
        if event_type == "DELETED" or status.get("phase") != "Held" or status.get("fencingToken") != str(token):
            return seen
    raise AssertionError("Lease %s was never seen revoked" % name)


def first_seen_listed(cluster, name, token):
    """When the watch first showed the namespace's session listing the grant as revoked."""
    for seen, event_type, obj in cluster.session_watch.events:
        if event_type != "DELETED" and obj["metadata"].get("namespace") == NS and (name, token) in revoked_grants(obj):
            return seen
    return None


# --- one hand-over behind a long queue ------------------------------------------------------
def quiet_writes(kube_url, quiet_seconds, timeout):
    """Polls the write counters until they have not moved for `quiet_seconds`; returns the
    counters as of their last change."""
    last, since = kube_writes(kube_url), time.monotonic()
    deadline = since + timeout
    while time.monotonic() - since < quiet_seconds:
        if time.monotonic() > deadline:
            raise AssertionError("Kubernetes writes did not stop within %d s" % timeout)
        time.sleep(0.1)
        now = kube_writes(kube_url)
        if now != last:
            last, since = now, time.monotonic()
    return last


def periodic_session_renewals(events, since):
    """Updates of the namespace's session seen after `since` that listed nothing new."""
    renewals, listed = 0, None
    for seen, event_type, obj in events:
        if event_type == "DELETED" or obj["metadata"].get("namespace") != NS:
            continue
        now_listed = revoked_grants(obj)
        if seen > since and event_type == "MODIFIED" and now_listed == listed:
            renewals += 1
        listed = now_listed
    return renewals


def queue(args):
    with Environment(args.bin, args.source) as env:
        env.start_controller()
        cluster = Cluster(env)
        cluster.namespace(NS)
        waiters = names("q-waiter", args.queue)
        cluster.create_pods(NS, ["q-holder"] + waiters)
        cluster.create_claims(NS, [("q-a", "queue-lock", "q-holder")])
        cluster.wait_phases(NS, ["q-a"], "Held")
        claims = names("q-b", args.queue)
        # One at a time: the queue's order is the order the claims were made.
        cluster.create_claims(NS, [(c, "queue-lock", w) for c, w in zip(claims, waiters)], threads=1)
        cluster.wait_phases(NS, claims, "Pending")
        before = quiet_writes(env.kube_url, args.quiet_seconds, args.timeout)
        window_opened = time.time()
        deleted = delete_pod(env, "q-holder")
        cluster.wait(lambda: any(cluster.phase(NS, c) == "Held" for c in claims), args.timeout, "a successor")
        after = quiet_writes(env.kube_url, args.quiet_seconds, args.timeout)
        cluster.update()
        # The session's renewal every quarter of the lease duration happens with or without a
        # hand-over (write-budget-bench counts it): a renewal in the window that changed
        # nothing but renewTime is not the hand-over's.
        renewals = periodic_session_renewals(cluster.session_watch.events, window_opened)
        successor = next(c for c in claims if cluster.phase(NS, c) == "Held")
        return {"waiting_claims": args.queue, "successor": successor,
                "successor_held_ms": round((cluster.first_held[(NS, successor, cluster.token(NS, successor))]
                                            - deleted) * 1000, 1),
                "writes_stopped_for_seconds": args.quiet_seconds,
                "periodic_session_renewals_left_out": renewals,
                "kube_writes": writes_between(before, after, own=collections.Counter(
                    {"delete pods": 1, "update leases.coordination.k8s.io": renewals}))}


def draw(path, drains, not_ready_result):
    plt = draw_or_warn()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, result in drains.items():
        times = sorted(result["_since_start"])
        axes[0].plot(times, range(1, len(times) + 1), label=label)
    axes[0].set_title("drain: successors Held since the deletions began")
    axes[0].set_xlabel("s")
    axes[0].set_ylabel("locks handed over")
    axes[0].legend()
    if not_ready_result:
        axes[1].hist([x * 1000 for x in not_ready_result["_after_validity"]], bins=30, color="#c62")
        axes[1].axvline(0, color="black")
    axes[1].set_title("node NotReady: successor Held - predecessor's validity end")
    axes[1].set_xlabel("ms")
    fig.tight_layout()
    fig.savefig(path)


def main():
    parser = bench_arguments()
    parser.add_argument("--locks", type=int, default=1000, help="drain: locks, each with a holder and a waiter")
    parser.add_argument("--holders", type=int, default=100, help="not-ready: holders on the node")
    parser.add_argument("--bystanders", type=int, default=1000, help="not-ready: other held locks")
    parser.add_argument("--queue", type=int, default=300, help="queue: waiting claims behind the holder")
    parser.add_argument("--scenarios", default="drain,not-ready,queue")
    parser.add_argument("--settle-seconds", type=float, default=5)
    parser.add_argument("--quiet-seconds", type=float, default=2,
                        help="queue: writes have stopped when the counters stay still this long")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--png")
    args = parser.parse_args()
    scenarios = set(args.scenarios.split(","))
    unknown = scenarios - {"drain", "not-ready", "queue"}
    if unknown:
        parser.error("unknown scenario: %s" % ", ".join(sorted(unknown)))
    result = {"benchmark": "mass_takeover"}
    drains = {}
    if "drain" in scenarios:
        drains = {"default_flags": drain(args, []), "kube_api_qps_2000": drain(args, ["--kube-api-qps", "2000"])}
        result["drain"] = drains
    nr = not_ready(args) if "not-ready" in scenarios else None
    if nr:
        result["node_not_ready"] = nr
    if "queue" in scenarios:
        result["queue_handover"] = queue(args)
    result["targets"] = {"drain_default_flags": {"last_ms": 4000, "p50_ms": 2000},
                         "drain_kube_api_qps_2000": {"last_ms": 1000},
                         "node_not_ready": {"p99_ms_after_validity": 250, "handed_over_before_validity_ended": 0},
                         "queue_handover_kube_writes": 15}
    if args.png:
        draw(args.png, drains, nr)
    for part in list(drains.values()) + [nr or {}]:
        for key in [k for k in part if k.startswith("_")]:
            del part[key]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
