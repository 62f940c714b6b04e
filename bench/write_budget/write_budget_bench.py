"""Kubernetes API writes at rest, and the validity held grants are shown meanwhile.

LOCKS held locks spread over NAMESPACES namespaces (one holder claim each, pods Ready), the
default TTL and the controller's default flags; the controller and both emulators run as
separate processes. Converged means every Lease has been seen Held. From then on:
- the Kubernetes writes per second (create, update, patch, delete, deletecollection), read
  from the kube-emulator's /_emulator/stats, in total and by "verb resource", over the
  --seconds that follow --settle-seconds after convergence (what the cold start still
  writes once every Lease is Held is left out);
- every Held grant's published validity (bench/common/validity.py: the Lease's
  status.expireTime where the controller publishes one, else the namespace's session),
  sampled every --sample-interval from convergence to the end of that window, as a watcher
  of the API knew it then: the least validity left (validity minus the sample's time), how
  many samples showed less than the safety margin, and how many showed Held after their
  validity had ended.

Prints JSON; --png FILE draws the writes per second and the least validity left per sample.

usage: write_budget_bench.py BIN_DIR SOURCE_DIR [--locks 2000] [--namespaces 4] [--seconds 60]
                             [--settle-seconds 30] [--sample-interval 0.25] [--png FILE]
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cluster import Cluster, bench_arguments, draw_or_warn, kube_writes, writes_between  # noqa: E402
from controller_env import Environment  # noqa: E402


class ValiditySamples:
    """The least validity left over every sample of every Held grant."""

    def __init__(self, margin):
        self.margin = margin
        self.samples = 0
        self.below_margin = 0
        self.after_validity = 0
        self.unpublished = 0  # Held with no validity published at all
        self.least = None  # (seconds left, namespace/lease, sample time)
        self.least_per_sample = []  # (sample time, least seconds left then)

    def sample(self, t, model):
        least_now = None
        for ns, name, _token, until, _rule in model.held():
            self.samples += 1
            if until is None:
                self.unpublished += 1
                continue
            left = until - t
            self.below_margin += left < self.margin
            self.after_validity += left < 0
            if least_now is None or left < least_now:
                least_now = left
            if self.least is None or left < self.least[0]:
                self.least = (left, "%s/%s" % (ns, name), t)
        self.least_per_sample.append((t, least_now))

    def result(self, converged):
        least = self.least or (None, None, None)
        return {"samples": self.samples, "safety_margin_seconds": self.margin,
                "least_left_seconds": None if least[0] is None else round(least[0], 3),
                "least_left_grant": least[1],
                "least_left_at_second": None if least[2] is None else round(least[2] - converged, 2),
                "samples_below_margin": self.below_margin,
                "samples_held_after_validity_ended": self.after_validity,
                "samples_held_with_nothing_published": self.unpublished}


def draw(path, converged, window, per_second, samples):
    plt = draw_or_warn()
    if plt is None:
        return
    fig, axes = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    axes[0].step([t - converged for t, _ in per_second], [rate for _, rate in per_second], where="pre")
    axes[0].axvspan(window[0] - converged, window[1] - converged, color="#ddd", label="window at rest")
    axes[0].set_ylabel("Kubernetes writes / s")
    axes[0].set_title("after every Lease is Held: writes, and the least validity any Held grant was shown")
    axes[0].legend()
    shown = [(t - converged, left) for t, left in samples.least_per_sample if left is not None]
    axes[1].plot([t for t, _ in shown], [left for _, left in shown], color="#c62")
    axes[1].axhline(samples.margin, color="black", linestyle="--", label="safety margin")
    axes[1].set_ylabel("least validity left (s)")
    axes[1].set_xlabel("s since every Lease was Held")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path)


def writes_per_second(kube_url, until):
    """Reads the write counters about once a second until `until`: [(time, writes per second
    since the previous reading)], and the counters at the start and at the end."""
    rates, first = [], kube_writes(kube_url)
    last, last_time = first, time.time()
    while last_time < until:
        time.sleep(max(0.0, min(1.0, until - last_time)))
        now, now_time = kube_writes(kube_url), time.time()
        rates.append((now_time, sum((now - last).values()) / (now_time - last_time)))
        last, last_time = now, now_time
    return rates, first, last


def main():
    parser = bench_arguments()
    parser.add_argument("--locks", type=int, default=2000)
    parser.add_argument("--namespaces", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60, help="the window measured at rest")
    parser.add_argument("--settle-seconds", type=float, default=30,
                        help="time after every Lease is seen Held before the window opens")
    parser.add_argument("--sample-interval", type=float, default=0.25)
    parser.add_argument("--margin", type=float, default=2, help="the holders' safety margin, in seconds")
    parser.add_argument("--png")
    args = parser.parse_args()
    with Environment(args.bin, args.source) as env:
        env.start_controller()
        cluster = Cluster(env)
        spaces = ["budget-%d" % n for n in range(args.namespaces)]
        claims = {ns: [] for ns in spaces}
        for i in range(args.locks):
            claims[spaces[i % len(spaces)]].append(("claim-%d" % i, "lock-%d" % i, "pod-%d" % i))
        for ns in spaces:
            cluster.namespace(ns)
            cluster.create_pods(ns, [c[2] for c in claims[ns]])
        created = time.time()
        for ns in spaces:
            cluster.create_claims(ns, claims[ns])
        for ns in spaces:
            cluster.wait_phases(ns, [c[0] for c in claims[ns]], "Held", timeout=600)
        converged = time.time()
        settling, _, _ = writes_per_second(env.kube_url, converged + args.settle_seconds)
        window_start = time.time()
        at_rest, before, after = writes_per_second(env.kube_url, window_start + args.seconds)
        window_end = time.time()
        samples = ValiditySamples(args.margin)
        ticks = int((window_end - converged) / args.sample_interval)
        cluster.validity([converged + k * args.sample_interval for k in range(ticks + 1)], samples.sample)

        def versions(events):
            return sum(1 for seen, _, _ in events if window_start <= seen < window_end)

        result = {"benchmark": "write_budget", "locks": args.locks, "namespaces": args.namespaces,
                  "seconds_until_all_held": round(converged - created, 2),
                  "window_opens_seconds_after_all_held": round(window_start - converged, 2),
                  "kube_writes": writes_between(before, after, window_end - window_start),
                  "highest_writes_per_second": round(max(rate for _, rate in at_rest), 1),
                  "versions_seen_in_window": {"leases.eslease.io": versions(cluster.lease_watch.events),
                                              "eslease-session": versions(cluster.session_watch.events)},
                  "published_validity": dict(samples.result(converged),
                                             sampled_seconds=round(window_end - converged, 2)),
                  "targets": {"kube_writes_per_second": 1, "least_left_seconds": args.margin}}
        if args.png:
            draw(args.png, converged, (window_start, window_end), settling + at_rest, samples)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
