"""Failover: every failure a cluster meets, measured at the controller's default settings.

For each row (a kind of failure) and each path (the liveness takeover, and the TTL path of
`--liveness-takeover=false`), trials: a lock held by `eslease run` in one pod (the holder),
with a second pod's `eslease run` waiting on it (the successor), both at the tool's defaults,
their commands journalling their critical sections (bench/chaos/critical_section.py). Two
controller replicas run with `--leader-elect` at the default flags, as the Helm chart runs
them, each reaching the API server through a route of an API proxy, as every holder does, so
either can be cut off alone. The failure is injected; measured are the time from it to the
successor's Lease first shown Held, as a watcher of the API sees it, and to the successor's
command starting.

Rows:
  pod-deleted          DELETE of the holder pod; the kubelet's part is played as a real one
                       plays it: SIGTERM to the tool, and the pod's final removal once it exited.
  pod-force-deleted    the holder's container killed (SIGKILL) and its pod force-deleted
                       (`kubectl delete --force --grace-period=0`).
  crash-loop           the holder's container crashes (SIGKILL) and keeps failing: its pod
                       stays Running but not Ready (CrashLoopBackOff).
  node-powered-off     the holder's node loses power: its kubelet's heartbeats stop and its
                       containers with them; nothing more is heard (kube-emulator's power off).
  node-partitioned     the holder's node is cut off from the API server: its heartbeats stop,
                       and the holder keeps running cut off (its route through the proxy is
                       cut); it must stop itself before its validity ends.
  controller-killed    the leading controller SIGKILLed and not restarted; at that moment the
                       holder is confirmed dead (container killed, pod force-deleted).
  controller-restarted the same, and the killed replica's container starts again at once,
                       with its pod's identity (the chart's: the pod name), so it takes its
                       own leader lease back without waiting for it to expire.
  es-unreachable       Elasticsearch drops every connection for 30 s; the holder is confirmed
                       dead as it begins.
  api-unreachable      the controllers' and holders' routes to the API server are cut for 30 s;
                       the holder is confirmed dead as it begins (the pod's deletion reaches
                       the API server, which cannot tell the controllers yet).

Per-pod rows run their trials side by side, each failure `--spacing` seconds after the last
(or as soon as the last trial is done); node rows give each trial its own node. The shared
rows (controllers, Elasticsearch, the API server) fail `--repetitions` times in turn, each
time under `--locks-per-failure` trials at once. Two bystander locks, held throughout on a
node that never fails, show whether any running holder lost its lock (its tool exits 4).

Every run is checked: the API's history replayed by the chaos checker (no two holders of a
lock, nothing granted before the validity published to its previous holder ended:
bench/chaos/safety.py), the commands' journals (no two critical sections of a lock
overlapping) and the fenced writes they made. Prints JSON; exits 1 on a violation.

usage: failover_bench.py BIN_DIR SOURCE_DIR [--rows ROW,...] [--repetitions N]
                         [--locks-per-failure N] [--spacing S] [--timeout S] [--ttl-timeout S]
                         [--no-ttl] [--logs DIR]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from api_proxy import ApiProxy  # noqa: E402
from controller_env import Environment, namespace, pod, wait_for  # noqa: E402
from convergence import default_lease_name  # noqa: E402
from figures import Trial, first_start_after, row_figures, stopped_before  # noqa: E402
from holders import kubeconfig_through, signal_session  # noqa: E402
from recorder import Recorder, call  # noqa: E402
from safety import check  # noqa: E402
from validity import parse_time  # noqa: E402
from workload_check import HolderProfile, check_fencing, check_sections, read_journals  # noqa: E402

NS = "failover"
PROTECTED_INDEX = "failover-protected"
CRITICAL_SECTION = os.path.join(HERE, "..", "chaos", "critical_section.py")
LEADER_LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/eslease-controller"
SESSION_LEASE = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/eslease-session" % NS
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
# The tool's defaults (`eslease run` without timing flags): the CRD's lease duration and the
# safety margin the tool takes from it. Its grace only matters to the checker for paused
# holders, and none is paused here.
TOOL_TTL_SECONDS, TOOL_MARGIN_SECONDS = 16, 2.0
OUTAGE_SECONDS = 30
MIN_GAP_SECONDS = 1.0  # between two failures of a per-pod row, once the earlier trial is done
BYSTANDERS = 2
PER_POD_ROWS = ("pod-deleted", "pod-force-deleted", "crash-loop", "node-powered-off", "node-partitioned")
SHARED_ROWS = ("controller-killed", "controller-restarted", "es-unreachable", "api-unreachable")
NODE_ROWS = ("node-powered-off", "node-partitioned")


class Tool:
    """One pod's `eslease run LOCK --pod POD -- critical_section.py`, reaching the API server
    through its own route of the proxy. Runs in a session of its own, so a kill takes its
    command too, as a container's end does."""

    def __init__(self, run, pod_name, lock):
        self.run = run
        self.pod = pod_name
        self.lock = lock
        self.name = "%s/%s" % (NS, pod_name)  # as its journal names it
        self.route = "holder-" + pod_name
        self.kubeconfig = kubeconfig_through(run.env, run.proxy.add_route(self.route), pod_name)
        self.proc = None
        self.kills = []

    def start(self, pod_uid):
        journal = os.path.join(self.run.journals, self.pod + ".jsonl")
        # The moment the tool starts the command, noted before Python's own start-up.
        started = os.path.join(self.run.journals, self.pod + ".started")
        command = ["/bin/bash", "-c", 'echo "$EPOCHREALTIME" >> "$0" && exec "$@"', started,
                   "/usr/bin/python3", CRITICAL_SECTION, journal, self.run.env.es_url, PROTECTED_INDEX, self.name,
                   "86400"]
        argv = [os.path.join(self.run.env.bin, "eslease"), "run", self.lock, "--pod", self.pod, "-n", NS,
                "--kubeconfig", self.kubeconfig, "--"] + command
        env = dict(os.environ, POD_NAME=self.pod, POD_NAMESPACE=NS, POD_UID=pod_uid)
        log = open(os.path.join(self.run.env.dir, "tool-%s.log" % self.pod), "ab")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                                     start_new_session=True)
        log.close()

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def terminate(self):
        """SIGTERM, as a kubelet stops a container first: the tool stops its command and lets go."""
        if self.running():
            os.kill(self.proc.pid, signal.SIGTERM)

    def kill(self):
        """SIGKILL of the tool and its command; returns once neither can act any more."""
        if self.proc is None:
            return
        deadline = time.monotonic() + 10
        while signal_session(self.proc.pid, signal.SIGKILL) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.proc.wait(timeout=30)
        self.kills.append(time.time())

    def exit_code(self):
        return None if self.proc is None else self.proc.poll()


class Run:
    """One row on one path: the emulators, the proxy, two controllers, the record of the API,
    and the trials' pods and tools."""

    def __init__(self, args, row, liveness):
        self.args = args
        self.row = row
        self.liveness = liveness
        self.trials_per_failure = args.locks_per_failure if row in SHARED_ROWS else 1
        count = self.trials_per_failure * args.repetitions if row in SHARED_ROWS else args.repetitions
        # Node rows: a node per trial's holder; the successors and bystanders on the last one.
        self.nodes = (count if row in NODE_ROWS else 1) + 1
        # The kubelet's own grace is not scaled: the bench removes a deleted pod once its
        # container has stopped, as a kubelet does.
        self.env = Environment(args.bin, args.source,
                               kube_args=["--kubelet-grace-scale", "1", "--kubelet-nodes", str(self.nodes)])
        self.count = count
        self.controllers = []  # running replicas (controller_env.Process)
        self.controller_seq = 0
        self.tools = {}  # pod -> Tool
        self.trials = []
        self.bystanders = []

    # --- the cluster ---------------------------------------------------------------------
    def __enter__(self):
        self.env.start()
        try:
            self.journals = os.path.join(self.env.dir, "journals")
            os.makedirs(self.journals)
            self.proxy = ApiProxy(urllib.parse.urlparse(self.env.kube_url).netloc)
            self.env.apply(namespace(NS))
            call("PUT", "%s/%s" % (self.env.es_url, PROTECTED_INDEX), {"settings": {"number_of_shards": 1}})
            self.recorder = Recorder(self.env.kube_url, NS)
            for _ in range(2):
                self.start_controller()
            self.wait_for_leader()
        except Exception:
            self.env.stop()
            raise
        return self

    def __exit__(self, *exc):
        for tool in self.tools.values():
            tool.kill()
        self.recorder.stop()
        self.proxy.stop()
        if self.args.logs:
            shutil.copytree(self.env.dir, os.path.join(self.args.logs, "%s-%s" % (self.row, self.path())),
                            dirs_exist_ok=True)
        self.env.stop()
        return False

    def path(self):
        return "liveness" if self.liveness else "ttl"

    def start_controller(self, identity=None):
        """A replica; with `identity`, the container of that replica's pod started again."""
        name = "controller-%d" % self.controller_seq
        self.controller_seq += 1
        kubeconfig = kubeconfig_through(self.env, self.proxy.add_route(name), name)
        flags = ["--leader-elect", "--leader-election-namespace", "default"]
        if not self.liveness:
            flags.append("--liveness-takeover=false")
        controller = self.env.start_controller(*flags, name=name, kubeconfig=kubeconfig, identity=identity)
        controller.identity = identity or name
        self.controllers.append(controller)
        return controller

    def leader(self):
        """The running replica the leader election Lease names, or None."""
        held = call("GET", self.env.kube_url + LEADER_LEASE) or {}
        identity = (held.get("spec") or {}).get("holderIdentity")
        return next((c for c in self.controllers if c.identity == identity and c.proc.poll() is None), None)

    def wait_for_leader(self, timeout=120):
        return wait_for(self.leader, timeout, "a controller to lead", interval=0.1)

    def wait_for_rest(self, since, timeout=120):
        """Waits for two running replicas and a session renewed after `since` (epoch seconds,
        the last failure; None: any renewal) by the replica that leads now."""
        def at_rest():
            session = (call("GET", self.env.kube_url + SESSION_LEASE) or {}).get("spec") or {}
            renewed = parse_time(session.get("renewTime"))
            leader = self.leader()
            running = sum(1 for c in self.controllers if c.proc.poll() is None)
            return (running == 2 and leader is not None and session.get("holderIdentity") == leader.identity
                    and renewed is not None and (since is None or renewed > since))
        return wait_for(at_rest, timeout, "the leader to renew the sessions", interval=0.1)

    def supervise(self):
        """A replica that exited (it gives up when it cannot keep its leadership) is started
        again, as its container would be."""
        for controller in list(self.controllers):
            if controller.proc.poll() is not None:
                self.controllers.remove(controller)
                self.start_controller()

    def node(self, i):
        return "node-%d" % i

    def create_pod(self, name, node):
        obj = pod(name, NS)
        obj["spec"]["nodeName"] = node
        call("POST", "%s/api/v1/namespaces/%s/pods" % (self.env.kube_url, NS), obj)

    def pod_uid(self, name, timeout=60):
        """The pod's uid once it is Ready."""
        def ready():
            obj = self.recorder.snapshot("pod").get(name)
            conditions = ((obj or {}).get("status") or {}).get("conditions") or []
            ok = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            return obj["metadata"]["uid"] if ok else None
        return wait_for(ready, timeout, "pod %s to be Ready" % name, interval=0.05)

    def phase(self, lease):
        return ((self.recorder.snapshot("lease").get(lease) or {}).get("status") or {}).get("phase")

    def claim(self, pod_name, node, lock, phase):
        """A pod on `node` whose tool claims `lock`; waits until its Lease shows `phase`."""
        self.create_pod(pod_name, node)
        uid = self.pod_uid(pod_name)
        tool = self.tools[pod_name] = Tool(self, pod_name, lock)
        tool.start(uid)
        lease = default_lease_name([lock], pod_name)
        wait_for(lambda: self.phase(lease) == phase, 60, "Lease %s to be %s" % (lease, phase), interval=0.05)
        return lease

    def add_trial(self, holder_node):
        index = len(self.trials)
        lock = "lock-%03d" % index
        holder, successor = "h-%03d" % index, "s-%03d" % index
        successor_node = self.node(self.nodes)
        holder_lease = self.claim(holder, holder_node, lock, "Held")
        wait_for(lambda: self.command_started(holder), 60, "the command of %s to start" % holder, interval=0.05)
        successor_lease = self.claim(successor, successor_node, lock, "Pending")
        trial = Trial(index, lock, holder, successor, holder_lease, successor_lease, holder_node, successor_node)
        self.trials.append(trial)
        return trial

    def add_bystanders(self):
        for i in range(BYSTANDERS):
            name = "b-%d" % i
            self.claim(name, self.node(self.nodes), "bystander-%d" % i, "Held")
            self.bystanders.append(name)

    def command_started(self, pod_name):
        path = os.path.join(self.journals, pod_name + ".jsonl")
        return os.path.exists(path) and '"start"' in open(path).read()

    def successor_held(self, trial):
        return self.phase(trial.successor_lease) == "Held" and self.command_started(trial.successor)

    # --- the failures --------------------------------------------------------------------
    def kubelet_pod(self, name, change):
        call("POST", "%s/_emulator/kubelet/pods/%s/%s" % (self.env.kube_url, NS, name), change)

    def kubelet_node(self, node, change):
        if call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), change) is None:
            raise AssertionError("kube-emulator refused %s for %s" % (change, node))

    def pod_url(self, name, query=""):
        return "%s/api/v1/namespaces/%s/pods/%s%s" % (self.env.kube_url, NS, name, query)

    def confirmed_death(self, trial, timed=False):
        """The holder's container killed and its pod force-deleted: Kubernetes says it is gone.
        `timed`: the failure is the deletion, timed from when it is sent."""
        self.tools[trial.holder].kill()
        if timed:
            trial.failed_at = time.time()
        call("DELETE", self.pod_url(trial.holder, "?gracePeriodSeconds=0"))

    def fail(self, trial):
        """Injects the row's failure into one trial (per-pod rows); returns when it is done."""
        holder = self.tools[trial.holder]
        if self.row in NODE_ROWS:
            lease = call("GET", self.env.kube_url + NODE_LEASES + trial.holder_node) or {}
            trial.last_heartbeat = parse_time((lease.get("spec") or {}).get("renewTime"))
        trial.failed_at = time.time()
        if self.row == "pod-deleted":
            call("DELETE", self.pod_url(trial.holder))
            holder.terminate()
        elif self.row == "pod-force-deleted":
            self.confirmed_death(trial, timed=True)
        elif self.row == "crash-loop":
            holder.kill()
            self.kubelet_pod(trial.holder, {"ready": False})
        elif self.row == "node-powered-off":
            self.kubelet_node(trial.holder_node, {"power": "off"})
            holder.kill()
        elif self.row == "node-partitioned":
            self.kubelet_node(trial.holder_node, {"network": "partitioned"})
            self.proxy.cut(holder.route)

    def follow_up(self, trial):
        """What the failure leaves for later, once it has played out (per-pod rows): a deleted
        pod's final removal by its kubelet once its container stopped; a healed node."""
        holder = self.tools[trial.holder]
        if self.row == "pod-deleted" and not holder.running() and not trial.recovered:
            call("DELETE", self.pod_url(trial.holder, "?gracePeriodSeconds=0"))
            trial.recovered = True
        # A cut-off holder stops by itself within its validity; the partition heals after that
        # (or, should it not stop, once it surely should have).
        stopped = not holder.running() or time.time() - trial.failed_at > self.timeout() + 2 * TOOL_TTL_SECONDS
        if self.row == "node-partitioned" and trial.done and stopped and not trial.recovered:
            self.proxy.restore(holder.route)
            self.kubelet_node(trial.holder_node, {"network": "connected"})
            trial.recovered = True
        if self.row == "node-powered-off" and trial.done and not trial.recovered:
            self.kubelet_node(trial.holder_node, {"power": "on"})
            trial.recovered = True

    def fail_shared(self, trials):
        """Injects the row's failure once, for `trials` (shared rows); returns what ends it."""
        now = time.time()
        for trial in trials:
            trial.failed_at = now
        if self.row in ("controller-killed", "controller-restarted"):
            leader = self.leader() or self.wait_for_leader()
            leader.stop(sig_kill=True)
            self.controllers.remove(leader)
            for trial in trials:
                self.confirmed_death(trial)
            if self.row == "controller-restarted":
                self.start_controller(identity=leader.identity)
            return lambda: None
        if self.row == "es-unreachable":
            call("POST", self.env.es_url + "/_emulator/faults", {"op": "*", "drop": True, "count": -1})
            for trial in trials:
                self.confirmed_death(trial)
            return lambda: call("DELETE", self.env.es_url + "/_emulator/faults")
        routes = [c.name for c in self.controllers] + [t.route for t in self.tools.values()]
        for route in routes:
            self.proxy.cut(route)
        for trial in trials:
            self.confirmed_death(trial)

        def heal():
            for route in routes:
                self.proxy.restore(route)
        return heal

    # --- the row -------------------------------------------------------------------------
    def measure(self):
        self.add_bystanders()
        if self.row in SHARED_ROWS:
            self.measure_shared()
        else:
            self.measure_per_pod()

    def timeout(self):
        return self.args.timeout if self.liveness else self.args.ttl_timeout

    def settle(self, trial):
        """Marks a trial done once its successor runs, or when it waited too long."""
        if not trial.done and trial.failed_at is not None:
            trial.done = self.successor_held(trial) or time.time() - trial.failed_at > self.timeout()

    def measure_per_pod(self):
        for i in range(self.count):
            self.add_trial(self.node(i + 1) if self.row in NODE_ROWS else self.node(1))
        last = None
        for trial in self.trials:
            # The next failure once the last trial is done, or `--spacing` after it.
            while last is not None and time.time() - last.failed_at < (MIN_GAP_SECONDS if last.done
                                                                       else self.args.spacing):
                self.tick()
            self.fail(trial)
            last = trial
        while not all(t.done and (t.recovered or self.row not in NODE_ROWS) for t in self.trials):
            self.tick()

    def tick(self):
        for trial in self.trials:
            self.settle(trial)
            if trial.failed_at is not None:
                self.follow_up(trial)
        self.supervise()
        time.sleep(0.02)

    def measure_shared(self):
        failed_at = None
        for _ in range(self.args.repetitions):
            trials = [self.add_trial(self.node(1)) for _ in range(self.trials_per_failure)]
            self.wait_for_leader()
            # Each failure strikes a cluster at rest, as a single failover does: two replicas, and
            # the sessions renewed by the leader in place (a leader killed before it renewed them
            # would be a second failover in a row).
            self.wait_for_rest(failed_at)
            failed_at = time.time()
            end = self.fail_shared(trials)
            ends_at = time.time() + (OUTAGE_SECONDS if self.row in ("es-unreachable", "api-unreachable") else 0)
            ended = False
            while not all(t.done for t in trials) or not ended:
                if not ended and time.time() >= ends_at:
                    end()
                    ended = True
                for trial in trials:
                    self.settle(trial)
                if ended:
                    self.supervise()
                time.sleep(0.02)
            # A replica killed for good is replaced, as its Deployment would replace it elsewhere.
            while len(self.controllers) < 2:
                self.start_controller()

    # --- the findings --------------------------------------------------------------------
    def findings(self):
        events = self.recorder.history()
        lines = [line for name in sorted(os.listdir(self.journals)) if name.endswith(".jsonl")
                 for line in open(os.path.join(self.journals, name))]
        starts = [("%s/%s" % (NS, name[:-len(".started")]), float(line))
                  for name in os.listdir(self.journals) if name.endswith(".started")
                  for line in open(os.path.join(self.journals, name)) if line.strip()]
        sections, writes = read_journals(lines)
        safety = check(events)
        profiles = {t.name: HolderProfile("kubernetes", TOOL_TTL_SECONDS, TOOL_MARGIN_SECONDS, 0.0)
                    for t in self.tools.values()}

        def published(section):
            return safety.validity.published_until(NS, section.lease, section.token)[0]

        kills = {t.name: list(t.kills) for t in self.tools.values()}
        sections_report = check_sections(sections, profiles, {}, published, kills)
        locks = {w.lock for w in writes}
        found = call("POST", "%s/%s/_mget" % (self.env.es_url, PROTECTED_INDEX), {"ids": sorted(locks)}) or {}
        versions = {d["_id"]: d.get("_version") if d.get("found") else None for d in found.get("docs", [])}
        fencing = check_fencing(writes, versions)
        out = row_figures(self.trials, events, starts, lambda p: "%s/%s" % (NS, p))
        violations = safety.violations + sections_report.violations + fencing.violations
        out["safety"] = {"grants_checked": safety.grants, "critical_sections_checked": sections_report.checked,
                         "min_after_validity_slack_ms": None if safety.min_validity_slack is None
                         else round(safety.min_validity_slack * 1000, 1),
                         "fenced_writes": fencing.summary(), "violations": len(violations),
                         "violation_details": violations[:10]}
        lost = [name for name in self.bystanders if not self.tools[name].running()]
        out["bystanders_lost_lock"] = len(lost)
        if self.row == "node-partitioned":
            out.update(self.cut_off_holders(sections, starts, published))
        return out, violations

    def cut_off_holders(self, sections, starts, published):
        """How long before the end of its published validity, and before its successor's
        command started, each cut-off holder's command stopped (the least of each, in ms)."""
        before_end, before_successor = [], []
        for trial in self.trials:
            holder = self.tools[trial.holder].name
            for s in [s for s in sections if s.holder == holder]:
                successor = first_start_after(starts, "%s/%s" % (NS, trial.successor), s.start)
                for gaps, moment in ((before_end, published(s)), (before_successor, successor)):
                    gap = stopped_before(sections, holder, s.token, moment)
                    if gap is not None:
                        gaps.append(gap)

        def least(gaps):
            return {"min_ms": round(min(gaps) * 1000, 1) if gaps else None, "count": len(gaps)}
        return {"cut_off_holder_stopped_before_validity_end": least(before_end),
                "cut_off_holder_stopped_before_successor_started": least(before_successor)}


def run_row(args, row, liveness):
    with Run(args, row, liveness) as run:
        run.measure()
        return run.findings()


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("source")
    parser.add_argument("--rows", default=",".join(PER_POD_ROWS + SHARED_ROWS),
                        help="comma-separated rows to run (default: all): " + ", ".join(PER_POD_ROWS + SHARED_ROWS))
    parser.add_argument("--repetitions", type=int, default=5,
                        help="trials of a per-pod row; failures of a shared row")
    parser.add_argument("--locks-per-failure", type=int, default=3, help="trials under each failure of a shared row")
    parser.add_argument("--spacing", type=float, default=5.0,
                        help="seconds between two failures of a per-pod row whose trials are still in progress")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a trial waits for its successor")
    parser.add_argument("--ttl-timeout", type=float, default=120.0,
                        help="the same on the TTL path (which never hands over from a holder Kubernetes only "
                             "presumes dead)")
    parser.add_argument("--no-ttl", dest="ttl", action="store_false", help="leave out the TTL path")
    parser.add_argument("--logs", help="copy every process's output and the journals into this directory")
    args = parser.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = [r for r in rows if r not in PER_POD_ROWS + SHARED_ROWS]
    if unknown:
        parser.error("unknown rows: %s" % ", ".join(unknown))
    args.row_list = rows
    return args


def main():
    args = parse_args()
    result = {"benchmark": "failover", "repetitions": args.repetitions, "locks_per_failure": args.locks_per_failure,
              "settings": {"controller": "defaults, two replicas with --leader-elect (leader election 3s/2s/500ms, node heartbeat grace 12s)",
                           "tool": "eslease run defaults: leaseDurationSeconds %d, livenessGraceSeconds 10, "
                                   "safety margin %ds" % (TOOL_TTL_SECONDS, TOOL_MARGIN_SECONDS),
                           "nodes": "kube-emulator defaults: node Lease renewed every 10s, "
                                    "node-monitor-grace-period 50s, node-monitor-period 5s",
                           "outage_seconds": OUTAGE_SECONDS},
              "rows": {}}
    failed = False
    for row in args.row_list:
        result["rows"][row] = {}
        for liveness in ([True, False] if args.ttl else [True]):
            started = time.monotonic()
            figures, violations = run_row(args, row, liveness)
            figures["seconds"] = round(time.monotonic() - started, 1)
            result["rows"][row]["liveness" if liveness else "ttl"] = figures
            failed = failed or bool(violations) or figures["bystanders_lost_lock"] > 0
            print("failover-bench: %s (%s) done in %.0fs" % (row, "liveness" if liveness else "ttl",
                                                             figures["seconds"]), file=sys.stderr)
    result["violations"] = sum(r[p]["safety"]["violations"] for r in result["rows"].values() for p in r)
    print(json.dumps(result, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
