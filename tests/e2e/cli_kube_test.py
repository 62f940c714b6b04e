"""End-to-end: the eslease tool in Kubernetes mode with eslease-controller and both emulators
as separate processes. Each `eslease` process runs on this host as if inside a simulated pod
(POD_NAME / POD_NAMESPACE set, --kubeconfig pointing at the kube-emulator); the simulated
kubelet makes the pods Ready and ends deleted ones after a short grace period."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_env import Environment, ShowsLogsOnFailure, lease, namespace, wait_for  # noqa: E402

BIN = None
SOURCE = None
TIMEOUT = 20


class Tool:
    """One `eslease` process acting for a pod; output captured to files in the test's folder."""

    def __init__(self, env, workdir, name, args, pod=None, ns=None, extra_env=None):
        self.name = name
        self.out_path = os.path.join(workdir, name + ".out")
        self.err_path = os.path.join(workdir, name + ".err")
        process_env = {k: v for k, v in os.environ.items() if k not in ("POD_NAME", "POD_NAMESPACE", "POD_UID")}
        if pod:
            process_env["POD_NAME"] = pod
        if ns:
            process_env["POD_NAMESPACE"] = ns
        process_env.update(extra_env or {})
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([os.path.join(BIN, "eslease"), "--kubeconfig", env.kubeconfig] + list(args),
                                         stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=process_env)

    def wait(self, timeout=TIMEOUT):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("%s did not exit within %ss: %s" % (self.name, timeout, self.stderr()))

    def stdout(self):
        with open(self.out_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class ToolsInANamespace(ShowsLogsOnFailure):
    """Mixed into a TestCase: one controller and both emulators for the class, and for each
    test a namespace of its own, a folder for its files, and `eslease` processes acting for
    its pods, stopped after the test."""

    @classmethod
    def setUpClass(cls):
        cls.env = Environment(BIN, SOURCE, simulate_kubelet=True).start_with_controller()

    @classmethod
    def tearDownClass(cls):
        cls.env.stop()

    def setUp(self):
        self.ns = ("t-" + self.id().split(".")[-1].lower().replace("_", "-")[5:45]).strip("-")
        self.env.apply(namespace(self.ns))
        self.dir = os.path.join(self.env.dir, self.ns)
        os.makedirs(self.dir, exist_ok=True)
        self.tools = []

    def tearDown(self):
        for tool in self.tools:
            tool.stop()

    # --- helpers -------------------------------------------------------------------------
    def tool(self, name, *args, pod=None, extra_env=None):
        t = Tool(self.env, self.dir, name, args, pod=pod, ns=self.ns, extra_env=extra_env)
        self.tools.append(t)
        return t

    def leases(self):
        result = self.env.kubectl("get", "esl", "-n", self.ns, "-o", "json")
        return {item["metadata"]["name"]: item for item in json.loads(result.stdout)["items"]}

    def phase(self, name):
        return self.leases().get(name, {}).get("status", {}).get("phase")

    def wait_phase(self, name, phase, timeout=TIMEOUT):
        wait_for(lambda: self.phase(name) == phase, timeout, "Lease %s to be %s (now %s)" % (name, phase, self.phase(name)))


class CliKubernetesMode(ToolsInANamespace, unittest.TestCase):
    def recorder(self, label):
        """A command that records when it starts and ends (as float seconds) in files, and
        the fencing token it was given."""
        path = os.path.join(self.dir, label)
        return ["/bin/sh", "-c",
                'date +%%s.%%N > %s.start; echo "$ESLEASE_FENCING_TOKEN $ESLEASE_LOCK $ESLEASE_LEASE" > %s.env; '
                'trap "date +%%s.%%N > %s.end; exit 143" TERM; sleep "$0" & wait; date +%%s.%%N > %s.end'
                % (path, path, path, path)]

    def interval(self, label):
        path = os.path.join(self.dir, label)
        with open(path + ".start") as s, open(path + ".end") as e:
            return float(s.read()), float(e.read())

    def started(self, label):
        return os.path.exists(os.path.join(self.dir, label + ".start"))

    # --- the scenarios -------------------------------------------------------------
    def test_runs_on_one_lock_never_overlap_and_hand_over_quickly(self):
        self.env.create_ready_pods(self.ns, ["pod-a", "pod-b", "pod-c"])
        first = self.tool("run-a", "run", "nightly", "--ttl", "5s", "--", *self.recorder("a"), "1.5", pod="pod-a")
        self.wait_phase("nightly-pod-a", "Held")
        wait_for(lambda: self.started("a"), TIMEOUT, "the first command to start")
        second = self.tool("run-b", "run", "nightly", "--ttl", "5s", "--", *self.recorder("b"), "1", pod="pod-b")
        self.wait_phase("nightly-pod-b", "Pending")
        third = self.tool("run-c", "run", "nightly", "--ttl", "5s", "--", *self.recorder("c"), "1", pod="pod-c")
        self.wait_phase("nightly-pod-c", "Pending")
        for t in (first, second, third):
            self.assertEqual(t.wait(), 0, t.stderr())
        intervals = sorted(self.interval(label) for label in ("a", "b", "c"))
        for (s1, e1), (s2, e2) in zip(intervals, intervals[1:]):
            self.assertLessEqual(e1, s2, "commands overlapped: %s" % intervals)
            gap = s2 - e1
            print("hand-over gap: first command ended -> next started in %.1f ms" % (gap * 1000), file=sys.stderr)
            self.assertLess(gap, 1.0, "the next command started %.3fs after the previous ended" % gap)
        tokens = []
        for label, lease_name in (("a", "nightly-pod-a"), ("b", "nightly-pod-b"), ("c", "nightly-pod-c")):
            with open(os.path.join(self.dir, label + ".env")) as f:
                token, lock, lease_env = f.read().split()
            self.assertEqual((lock, lease_env), (self.ns + "/nightly", lease_name))
            tokens.append(int(token))
        self.assertEqual(sorted(tokens), tokens, "fencing tokens grow with every grant")
        self.assertEqual(len(set(tokens)), 3)
        wait_for(lambda: not self.leases(), TIMEOUT, "every Lease to be deleted after its command")

    def test_deleted_holder_pod_stops_its_command_and_the_waiter_runs(self):
        self.env.create_ready_pods(self.ns, ["holder", "waiter"])
        holder = self.tool("run-holder", "run", "job", "--ttl", "10s", "--", *self.recorder("holder"), "600",
                           pod="holder")
        wait_for(lambda: self.started("holder"), TIMEOUT, "the holder's command to start")
        waiter = self.tool("run-waiter", "run", "job", "--ttl", "10s", "--", *self.recorder("waiter"), "0.2",
                           pod="waiter")
        self.wait_phase("job-waiter", "Pending")
        deleted_at = time.time()
        self.env.kubectl("delete", "pod", "holder", "-n", self.ns, "--wait=false")
        # A graceful deletion is the kubelet sending SIGTERM to the pod's main process (here
        # eslease, as in the example Job); the pod object goes after the grace period.
        holder.proc.send_signal(signal.SIGTERM)
        self.assertEqual(holder.wait(), 143, holder.stderr())
        self.assertEqual(waiter.wait(), 0, waiter.stderr())
        holder_start, holder_end = self.interval("holder")
        waiter_start, _ = self.interval("waiter")
        self.assertGreater(holder_end, deleted_at)
        self.assertLessEqual(holder_end, waiter_start, "the waiter ran while the holder's command still ran")
        print("holder pod deleted -> its command stopped after %.0f ms; the waiter's started %.0f ms later"
              % ((holder_end - deleted_at) * 1000, (waiter_start - holder_end) * 1000), file=sys.stderr)
        wait_for(lambda: not self.leases(), TIMEOUT, "both Leases to be deleted")

    def test_revoked_holder_stops_its_command_before_the_waiter_runs(self):
        # The holder's pod turns NotReady but its process runs on (a failing probe, a
        # partition): the controller revokes the grant, the tool sees it, stops the command
        # and deletes its Lease, which lets the waiter in without waiting for the expiry.
        self.env.create_ready_pods(self.ns, ["holder", "waiter"])
        holder = self.tool("run-holder", "run", "job", "--ttl", "20s", "--liveness-grace", "1s", "--grace", "2s",
                           "--", *self.recorder("holder"), "600", pod="holder")
        wait_for(lambda: self.started("holder"), TIMEOUT, "the holder's command to start")
        waiter = self.tool("run-waiter", "run", "job", "--ttl", "10s", "--", *self.recorder("waiter"), "0.2",
                           pod="waiter")
        self.wait_phase("job-waiter", "Pending")
        self.env.kubelet("holder", self.ns, {"ready": False})
        self.assertEqual(holder.wait(), 4, holder.stderr())
        # The controller lists the grant in the session before it writes the Lease, so the
        # tool usually learns it there first.
        self.assertRegex(holder.stderr(), r"lock job was revoked \(session eslease-session lists Lease job-holder|"
                                          r"no longer held by Lease job-holder \(phase Pending, PodNotReady")
        self.assertEqual(waiter.wait(), 0, waiter.stderr())
        _, holder_end = self.interval("holder")
        waiter_start, _ = self.interval("waiter")
        self.assertLessEqual(holder_end, waiter_start, "the waiter ran while the holder's command still ran")
        print("revoked holder's command ended -> the waiter's started %.0f ms later (the 20 s grant had not expired)"
              % ((waiter_start - holder_end) * 1000), file=sys.stderr)
        self.assertLess(waiter_start - holder_end, 10.0)
        wait_for(lambda: not self.leases(), TIMEOUT, "both Leases to be deleted")

    def test_a_controller_killed_and_replaced_keeps_run_commands_running(self):
        # The leading controller dies without a word (SIGKILL) and another takes its place:
        # the session is renewed again before the holder's validity runs out (default 60 s
        # lease: a command rides out 28 s without renewals), so the command keeps running.
        self.env.create_ready_pods(self.ns, ["holder"])
        holder = self.tool("run-holder", "run", "job", "--", *self.recorder("holder"), "600", pod="holder")
        wait_for(lambda: self.started("holder"), TIMEOUT, "the holder's command to start")
        session_before = self.env.get("leases.coordination.k8s.io", "eslease-session", self.ns)
        old = self.env.controllers[-1]
        old.stop(sig_kill=True)
        self.env.start_controller(name="controller-replacement")
        wait_for(lambda: (self.env.get("leases.coordination.k8s.io", "eslease-session", self.ns) or {})
                 .get("spec", {}).get("renewTime", "") > session_before["spec"]["renewTime"], 30,
                 "the replacement controller to renew the session")
        self.assertIsNone(holder.proc.poll(), "the command was stopped: %s" % holder.stderr())
        self.assertFalse(os.path.exists(os.path.join(self.dir, "holder.end")))
        self.assertEqual(self.phase("job-holder"), "Held")
        holder.proc.send_signal(signal.SIGTERM)
        self.assertEqual(holder.wait(), 143, holder.stderr())
        wait_for(lambda: not self.leases(), TIMEOUT, "the Lease to be released")

    def test_a_lease_deleted_under_a_running_command_stops_it_before_the_waiter_runs(self):
        # An operator deletes the holder's Lease: the tool stops its command, then says it let
        # go, so the waiter runs at once after, never during.
        self.env.create_ready_pods(self.ns, ["holder", "waiter"])
        holder = self.tool("run-holder", "run", "job", "--grace", "2s", "--", *self.recorder("holder"), "600",
                           pod="holder")
        wait_for(lambda: self.started("holder"), TIMEOUT, "the holder's command to start")
        waiter = self.tool("run-waiter", "run", "job", "--", *self.recorder("waiter"), "0.2", pod="waiter")
        self.wait_phase("job-waiter", "Pending")
        self.env.kubectl("delete", "esl", "job-holder", "-n", self.ns, "--wait=false")
        self.assertEqual(holder.wait(), 4, holder.stderr())
        self.assertRegex(holder.stderr(), r"Lease job-holder is being deleted|lock job was revoked")
        self.assertEqual(waiter.wait(), 0, waiter.stderr())
        _, holder_end = self.interval("holder")
        waiter_start, _ = self.interval("waiter")
        self.assertLessEqual(holder_end, waiter_start, "the waiter ran while the holder's command still ran")
        self.assertLess(waiter_start - holder_end, 10.0, "the 60 s validity was not waited out")
        wait_for(lambda: not self.leases(), TIMEOUT, "both Leases to be deleted")

    def test_a_tool_that_cannot_read_its_session_refuses_to_run(self):
        self.env.create_ready_pods(self.ns, ["denied"])
        with self.env.faults(self.env.kube_url, {"verb": "get", "resource": "leases.coordination.k8s.io",
                                                 "status": 403, "count": -1}):
            t = self.tool("no-session", "run", "job", "--", "/bin/sh", "-c", "touch %s/ran" % self.dir,
                          pod="denied")
            self.assertEqual(t.wait(), 1, t.stderr())
        self.assertIn("get and watch on leases.coordination.k8s.io named eslease-session", t.stderr())
        self.assertFalse(os.path.exists(os.path.join(self.dir, "ran")))
        wait_for(lambda: not self.leases(), TIMEOUT, "the claim to be released")

    def test_version(self):
        t = self.tool("version", "--version")
        self.assertEqual(t.wait(), 0, t.stderr())
        self.assertRegex(t.stdout(), r"^eslease \d+\.\d+\.\d+\n$")

    def test_a_lease_acquire_created_goes_with_its_pod(self):
        """The Lease `eslease acquire --pod` creates is owned by the pod: deleting the pod has
        the garbage collector delete the Lease, and the lock is free for the next claim."""
        self.env.create_ready_pods(self.ns, ["gc-holder", "gc-other", "gc-next"])
        holder = self.tool("gc-holder", "acquire", "nightly", "--pod", "gc-holder")
        other = self.tool("gc-other", "acquire", "weekly", "--pod", "gc-other")
        self.assertEqual(holder.wait(), 0, holder.stderr())
        self.assertEqual(other.wait(), 0, other.stderr())
        pod_uid = self.env.get("pod", "gc-holder", self.ns)["metadata"]["uid"]
        owners = self.leases()["nightly-gc-holder"]["metadata"]["ownerReferences"]
        self.assertEqual([(o["kind"], o["name"], o["uid"]) for o in owners], [("Pod", "gc-holder", pod_uid)])
        self.env.kubectl("delete", "pod", "gc-holder", "-n", self.ns, "--grace-period=0", "--force")
        wait_for(lambda: "nightly-gc-holder" not in self.leases(), TIMEOUT,
                 "the garbage collector to delete the Lease of the deleted pod")
        self.assertEqual(self.phase("weekly-gc-other"), "Held", "a Lease of another pod stays")
        following = self.tool("gc-next", "acquire", "nightly", "--pod", "gc-next", "--wait", "10s")
        self.assertEqual(following.wait(), 0, following.stderr())

    def test_acquire_wait_times_out_cleanly_and_leaves_no_lease(self):
        self.env.create_ready_pods(self.ns, ["owner", "late"])
        owner = self.tool("acquire-owner", "acquire", "report", pod="owner")
        self.assertEqual(owner.wait(), 0, owner.stderr())
        self.assertTrue(int(owner.stdout().strip()) > 0)
        late = self.tool("acquire-late", "acquire", "report", "--wait", "2s", pod="late")
        self.assertEqual(late.wait(), 3, late.stderr())
        self.assertEqual(late.stdout(), "")
        self.assertRegex(late.stderr(), r"gave up after 2s|timed the claim out")
        self.assertIn("deleted Lease report-late", late.stderr())
        self.assertEqual(sorted(self.leases()), ["report-owner"])
        release = self.tool("release", "release", "report-owner", pod="owner")
        self.assertEqual(release.wait(), 0, release.stderr())
        self.assertEqual(self.leases(), {})
        doc_id = (self.ns + "/report").replace("/", "%2F")
        self.assertEqual(self.env.http_status(self.env.es_url + "/eslease-locks/_doc/" + doc_id), 404,
                         "release waits until the controller has deleted the lock document")

    def test_a_wait_lasts_at_least_what_was_asked(self):
        # The controller counts acquireTimeoutSeconds from the Lease's creationTimestamp, which
        # has whole seconds: `--wait 3s` gave up after 2.0 to 2.7 s.
        self.env.create_ready_pods(self.ns, ["owner", "late"])
        owner = self.tool("wait-owner", "acquire", "report", pod="owner")
        self.assertEqual(owner.wait(), 0, owner.stderr())
        started = time.monotonic()
        late = self.tool("wait-late", "acquire", "report", "--wait", "3s", pod="late")
        self.assertEqual(late.wait(), 3, late.stderr())
        waited = time.monotonic() - started
        print("--wait 3s gave up after %.2f s" % waited, file=sys.stderr)
        self.assertGreaterEqual(waited, 3.0, late.stderr())

    def test_release_from_outside_the_holder_revokes_and_hands_over_after_the_validity(self):
        # The holder pod runs on, Ready; a shell with no pod identity releases its Lease. The
        # holder may still be working, so the next claim waits until the validity published
        # to it has ended (the lock moved 0.3 s later before).
        self.env.create_ready_pods(self.ns, ["holder", "next"])
        holder = self.tool("acquire-holder", "acquire", "report", "--ttl", "10s", pod="holder")
        self.assertEqual(holder.wait(), 0, holder.stderr())
        waiter = self.tool("acquire-next", "acquire", "report", "--wait", "60s", pod="next")
        self.wait_phase("report-next", "Pending")
        released_at = time.monotonic()
        release = self.tool("release-outside", "release", "report-holder", "--podinfo-dir",
                            os.path.join(self.dir, "no-podinfo"))
        wait_for(lambda: "revokes the grant" in release.stderr(), TIMEOUT, "release to say it revokes")
        # The window in which the hand-over used to happen, and well beyond.
        while time.monotonic() - released_at < 3.0:
            self.assertNotEqual(self.phase("report-next"), "Held", "handed over while the holder still ran")
            time.sleep(0.05)
        self.assertEqual(waiter.wait(timeout=30), 0, waiter.stderr())
        handed_over = time.monotonic() - released_at
        print("release from outside: the next claim was Held %.1f s later (lease duration 10 s)" % handed_over,
              file=sys.stderr)
        # The validity published to the holder ends between 2/3 of the duration and all of it
        # after the release.
        self.assertGreaterEqual(handed_over, 5.0)
        self.assertEqual(release.wait(timeout=30), 0, release.stderr())
        self.assertIn("this tool has no pod identity", release.stderr())

    def test_release_with_force_from_outside_hands_over_at_once(self):
        self.env.create_ready_pods(self.ns, ["holder", "next"])
        holder = self.tool("acquire-holder", "acquire", "report", "--ttl", "30s", pod="holder")
        self.assertEqual(holder.wait(), 0, holder.stderr())
        waiter = self.tool("acquire-next", "acquire", "report", "--wait", "60s", pod="next")
        self.wait_phase("report-next", "Pending")
        released_at = time.monotonic()
        release = self.tool("release-force", "release", "report-holder", "--force", "--podinfo-dir",
                            os.path.join(self.dir, "no-podinfo"))
        self.assertEqual(release.wait(), 0, release.stderr())
        self.assertIn("warning: --force", release.stderr())
        self.assertEqual(waiter.wait(), 0, waiter.stderr())
        self.assertLess(time.monotonic() - released_at, 10.0, "a 30 s grant's validity was waited out")

    def test_release_takes_a_lock_name_for_this_pods_claim(self):
        self.env.create_ready_pods(self.ns, ["worker-1", "worker-2"])
        held = self.tool("acquire-w1", "acquire", "jobs-lock", "--lease", "jobs-lock-worker-1", pod="worker-1")
        self.assertEqual(held.wait(), 0, held.stderr())
        other = self.tool("release-w2", "release", "jobs-lock", pod="worker-2")
        self.assertEqual(other.wait(), 1, other.stderr())
        self.assertIn("claimed through Lease jobs-lock-worker-1 (pod worker-1, Held)", other.stderr())
        self.assertEqual(self.phase("jobs-lock-worker-1"), "Held")
        mine = self.tool("release-w1", "release", "jobs-lock", pod="worker-1")
        self.assertEqual(mine.wait(), 0, mine.stderr())
        self.assertIn("releasing Lease jobs-lock-worker-1, this pod's claim on lock jobs-lock", mine.stderr())
        self.assertEqual(self.leases(), {})

    def test_status_shows_the_queue_in_the_order_it_is_served(self):
        pods = ["h", "bg-1", "fg-1", "bg-2", "fg-2"]
        self.env.create_ready_pods(self.ns, pods)
        holder = self.tool("acquire-h", "acquire", "batch", pod="h")
        self.assertEqual(holder.wait(), 0, holder.stderr())
        for p in pods[1:]:
            priority = "Background" if p.startswith("bg") else "Foreground"
            self.env.apply(lease("claim-" + p, self.ns, "batch", p, priority=priority))
            self.wait_phase("claim-" + p, "Pending")
        wait_for(lambda: all(self.leases()["claim-" + p].get("status", {}).get("queuePosition") is not None
                             for p in pods[1:]), TIMEOUT, "queue positions")
        status = self.tool("status-json", "status", "batch", "-o", "json", pod="h")
        self.assertEqual(status.wait(), 0, status.stderr())
        report = json.loads(status.stdout())
        self.assertEqual(len(report["locks"]), 1)
        lock = report["locks"][0]
        self.assertEqual([h["pod"] for h in lock["holders"]], ["h"])
        self.assertEqual([q["pod"] for q in lock["queue"]], ["fg-1", "fg-2", "bg-1", "bg-2"])
        self.assertEqual([q["priority"] for q in lock["queue"]], ["Foreground"] * 2 + ["Background"] * 2)
        self.assertTrue(all(q["waitingSeconds"] is not None for q in lock["queue"]))
        table = self.tool("status-table", "status", pod="h")
        self.assertEqual(table.wait(), 0, table.stderr())
        lines = table.stdout().splitlines()
        self.assertEqual(lines[0].split()[:3], ["LOCK", "QUEUE", "LEASE"])
        # The QUEUE column is each claim's queuePosition: how many claims are ahead, 0 = next.
        self.assertEqual([line.split()[1] for line in lines[1:]], ["held", "0", "1", "2", "3"])
        self.assertEqual([q["queuePosition"] for q in lock["queue"]], [0, 1, 2, 3])
        self.assertEqual([line.split()[3] for line in lines[1:]], ["h", "fg-1", "fg-2", "bg-1", "bg-2"])
        print(table.stdout(), file=sys.stderr)
        every = self.tool("status-all", "status", "-A", "-o", "json")
        self.assertEqual(every.wait(), 0, every.stderr())
        self.assertIn(self.ns, [lock["namespace"] for lock in json.loads(every.stdout())["locks"]])

    # --- bad input -------------------------------------------------------------------------
    def test_no_pod_identity_is_a_usage_error(self):
        t = self.tool("no-identity", "acquire", "report", "--podinfo-dir", os.path.join(self.dir, "missing"))
        self.assertEqual(t.wait(), 2, t.stderr())
        self.assertIn("no pod to hold the lock", t.stderr())
        self.assertIn("--pod", t.stderr())
        self.assertEqual(self.leases(), {})

    def test_a_taken_lease_name_is_refused_and_left_alone(self):
        self.env.create_ready_pods(self.ns, ["other", "me"])
        self.env.apply(lease("taken", self.ns, "report", "other"))
        self.wait_phase("taken", "Held")
        before = self.leases()["taken"]
        t = self.tool("taken", "acquire", "report", "--lease", "taken", "--wait", "5s", pod="me")
        self.assertEqual(t.wait(), 1, t.stderr())
        self.assertIn("Lease taken already exists", t.stderr())
        self.assertIn("pod other", t.stderr())
        after = self.leases()
        self.assertEqual(sorted(after), ["taken"])
        self.assertEqual(after["taken"]["metadata"]["uid"], before["metadata"]["uid"])
        self.assertEqual(after["taken"]["status"]["phase"], "Held")

    def test_rbac_denied_says_what_is_missing_and_leaves_nothing(self):
        self.env.create_ready_pods(self.ns, ["denied"])
        with self.env.faults(self.env.kube_url, {"verb": "create", "resource": "leases", "status": 403, "count": 1}):
            t = self.tool("denied-create", "acquire", "report", "--wait", "5s", pod="denied")
            self.assertEqual(t.wait(), 1, t.stderr())
        self.assertIn("Access denied (403)", t.stderr())
        self.assertIn("create", t.stderr())
        self.assertEqual(self.leases(), {})
        # Allowed to create but not to watch: the claim it made is deleted again.
        with self.env.faults(self.env.kube_url, {"verb": "watch", "resource": "leases", "status": 403, "count": 1}):
            t = self.tool("denied-watch", "acquire", "report", "--wait", "5s", pod="denied")
            self.assertEqual(t.wait(), 1, t.stderr())
        self.assertIn("cannot watch Lease report-denied", t.stderr())
        self.assertIn("Access denied (403)", t.stderr())
        wait_for(lambda: self.leases() == {}, TIMEOUT, "the claim to be deleted")

    def test_bad_names_and_flags_exit_two_and_create_nothing(self):
        for args in (["acquire", "Bad_Lock!"], ["acquire", "ok", "--lease", "UPPER"], ["acquire", "ok", "--ttl", "1500ms"],
                     ["renew", "ok"], ["acquire", "ok", "--holder", "x"], ["release"]):
            t = self.tool("bad-" + str(len(self.tools)), *args, pod="whoever")
            self.assertEqual(t.wait(), 2, "%s: %s" % (args, t.stderr()))
            self.assertTrue(t.stderr().startswith("eslease: "), t.stderr())
        self.assertEqual(self.leases(), {})


class CliWithoutController(unittest.TestCase):
    """No controller runs: a claim never gets a status."""

    @classmethod
    def setUpClass(cls):
        cls.env = Environment(BIN, SOURCE, simulate_kubelet=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.env.stop()

    def test_acquire_waits_and_says_why_when_wait_runs_out(self):
        ns = "no-controller"
        self.env.apply(namespace(ns))
        self.env.create_ready_pods(ns, ["lonely"])
        tool = Tool(self.env, self.env.dir, "lonely", ["acquire", "report", "--wait", "2s"], pod="lonely", ns=ns)
        started = time.monotonic()
        code = tool.wait()
        self.assertEqual(code, 3, tool.stderr())
        self.assertGreaterEqual(time.monotonic() - started, 2.0)
        self.assertIn("no eslease-controller picked it up", tool.stderr())
        self.assertIn("deleted Lease report-lonely", tool.stderr())
        result = self.env.kubectl("get", "esl", "-n", ns, "-o", "json")
        self.assertEqual(json.loads(result.stdout)["items"], [])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: %s <bin dir> <source dir> [unittest args]" % sys.argv[0])
    BIN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
