"""End-to-end: what holders learn and how they hold, with eslease-controller and both emulators
as separate processes (Kubernetes mode) and with es-emulator alone (direct mode).

- `eslease sidecar` beside a pod: /holds/LOCK answers 200 once the pod's Lease is Held and 503
  once it is not, in claim and election mode, keeps a file, runs hooks, and stops reporting a
  grant before its published validity ends when no renewal comes;
- `--wait 0`: a try-lock the controller decides (exit 3 at once on a busy lock, no Lease left);
- `run --hold-at-least`: once per period across replicas;
- `run` stops what its command left running before it lets go of the lock, when the command
  ends on its own and when the lock is lost, in both modes.

Each `eslease` process runs on this host as if inside a simulated pod (POD_NAME and
POD_NAMESPACE set, --kubeconfig pointing at the kube-emulator)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_kube_test  # noqa: E402
from controller_env import Process, ValidityRecorder, WithEsEmulator, lease, wait_for  # noqa: E402

BIN = None
SOURCE = None
TIMEOUT = 30

# A background worker its command leaves running: it records when it started and when it was
# asked to stop, and takes a moment to stop, so whoever waits for it can be seen waiting.
WORKER = 'trap \'echo "stopping $(date +%s.%N)" >> "$1"; sleep 0.5; echo "end $(date +%s.%N)" >> "$1"; ' \
         'exit 0\' TERM; echo "start $(date +%s.%N)" >> "$1"; sleep 600 & wait'


def timestamps(path, label):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [float(line.split()[1]) for line in f if line.startswith(label + " ")]


def read_json(path):
    with open(path) as f:
        return json.load(f)


def get(url):
    """(status, body as JSON or text) of a GET; (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            status, body = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


class Timed:
    """A command run through /bin/sh that records, in a file, when the command exited and with
    what code: an ordering that does not depend on when the test gets to look."""

    def __init__(self, workdir, name, argv, env=None):
        self.stamp = os.path.join(workdir, name + ".exit")
        script = '"$@"; code=$?; echo "$code $(date +%s.%N)" > "' + self.stamp + '"; exit $code'
        self.process = Process(name, ["/bin/sh", "-c", script, "timed"] + argv, workdir, env)

    def wait(self, timeout=TIMEOUT):
        code = self.process.proc.wait(timeout=timeout)
        with open(self.stamp) as f:
            recorded, at = f.read().split()
        assert int(recorded) == code
        self.exited_at = float(at)
        return code

    def text(self):
        return self.process.text()

    def stop(self):
        self.process.stop(sig_kill=True)


class LeftRunning:
    """What a command leaves running: a worker started in the background, waited for until it
    says it started (so a loaded machine cannot stop it before it began), then the command
    either exits at once or runs on."""

    def __init__(self, workdir, label):
        self.record = os.path.join(workdir, label + ".record")
        self.script = os.path.join(workdir, label + "-worker.sh")
        with open(self.script, "w") as f:
            f.write(WORKER + "\n")

    def command(self, then):
        return ["/bin/sh", "-c", 'sh "$0" "$1" & while [ ! -s "$1" ]; do sleep 0.05; done; ' + then,
                self.script, self.record]

    def started(self):
        return timestamps(self.record, "start")

    def ended(self):
        return timestamps(self.record, "end")


class KubernetesHolders(cli_kube_test.ToolsInANamespace, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cli_kube_test.BIN, cli_kube_test.SOURCE = BIN, SOURCE
        super().setUpClass()

    def timed(self, name, *args, pod):
        env = {k: v for k, v in os.environ.items() if k not in ("POD_NAME", "POD_UID")}
        env.update({"POD_NAME": pod, "POD_NAMESPACE": self.ns})
        t = Timed(self.dir, name, [os.path.join(BIN, "eslease"), "--kubeconfig", self.env.kubeconfig] + list(args),
                  env)
        self.tools.append(t)
        return t

    def sidecar(self, name, pod, *args):
        hooks = os.path.join(self.dir, name + ".hooks")
        record = ('echo "$ESLEASE_EVENT $ESLEASE_FENCING_TOKEN $ESLEASE_LOCK $ESLEASE_LEASE '
                  '$ESLEASE_VALID_UNTIL" >> ' + hooks)
        t = self.tool(name, "sidecar", "--listen", "127.0.0.1:0", "--on-grant", record,
                      "--on-loss", record + '; echo "why $ESLEASE_LOSS_REASON" >> ' + hooks, *args, pod=pod)
        address = wait_for(lambda: re.search(r"serving /holds on (\S+)", t.stderr()), TIMEOUT,
                           "the sidecar of %s to listen" % pod).group(1)
        t.url = "http://" + address
        t.hooks = hooks
        wait_for(lambda: get(t.url + "/healthz")[0] == 200, TIMEOUT, "the sidecar of %s to be healthy" % pod)
        return t

    def hooks(self, sidecar):
        if not os.path.exists(sidecar.hooks):
            return []
        with open(sidecar.hooks) as f:
            return [line.split() for line in f if not line.startswith("why ")]

    def status(self, name):
        return self.leases().get(name, {}).get("status", {})

    def held_token(self, name):
        self.wait_phase(name, "Held")
        return self.status(name)["fencingToken"]

    # --- the sidecar -----------------------------------------------------------------------
    def test_the_sidecar_answers_while_its_pod_holds_the_lock_and_tells_the_file_and_hooks(self):
        self.env.create_ready_pods(self.ns, ["worker"])
        holds_file = os.path.join(self.dir, "holds.json")
        side = self.sidecar("sidecar", "worker", "--file", holds_file)
        self.assertEqual(get(side.url + "/holds/nightly"), (503, {"lock": "nightly", "held": False}))
        self.assertEqual(get(side.url + "/holds"), (200, {"holds": []}))
        self.assertEqual(read_json(holds_file), {"holds": []})
        self.env.apply(lease("nightly-worker", self.ns, "nightly", "worker"))
        token = self.held_token("nightly-worker")
        status, grant = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(get(side.url + "/holds/nightly")),
                                 TIMEOUT, "/holds/nightly to answer 200")
        self.assertEqual((grant["lease"], grant["lock"], grant["token"]), ("nightly-worker", "nightly", token))
        self.assertEqual(get(side.url + "/holds")[1], {"holds": [grant]})
        self.assertEqual(get(side.url + "/holds/other")[0], 503)
        wait_for(lambda: read_json(holds_file) == {"holds": [grant]}, TIMEOUT, "the file to show the grant")
        wait_for(lambda: any(h[:4] == ["grant", token, self.ns + "/nightly", "nightly-worker"]
                             and h[4].endswith("Z") for h in self.hooks(side)), TIMEOUT,
                 "--on-grant to run with the grant")

        # An operator deletes the Lease: the grant is over for the pod before anyone else gets it.
        self.env.kubectl("delete", "esl", "nightly-worker", "-n", self.ns, "--wait=false")
        wait_for(lambda: get(side.url + "/holds/nightly")[0] == 503, TIMEOUT, "/holds/nightly to answer 503")
        wait_for(lambda: any(h[:2] == ["loss", token] for h in self.hooks(side)), TIMEOUT, "--on-loss to run")
        wait_for(lambda: read_json(holds_file) == {"holds": []}, TIMEOUT, "the file to be empty again")
        side.proc.send_signal(signal.SIGTERM)
        self.assertEqual(side.wait(), 0, side.stderr())

    def test_sidecars_follow_an_election_hand_over(self):
        self.env.create_ready_pods(self.ns, ["web-a", "web-b"], labels={"app": "web"})
        sidecars = {pod: self.sidecar("sidecar-" + pod, pod) for pod in ("web-a", "web-b")}
        self.env.apply(lease("web-leader", self.ns, "leader", selector={"app": "web"}, livenessGraceSeconds=1))
        first = self.held_token("web-leader")
        leader = self.status("web-leader")["holder"]["podName"]
        follower = "web-b" if leader == "web-a" else "web-a"
        wait_for(lambda: get(sidecars[leader].url + "/holds/leader")[0] == 200, TIMEOUT, "the leader's sidecar")
        self.assertEqual(get(sidecars[follower].url + "/holds/leader")[0], 503)
        self.assertEqual(get(sidecars[leader].url + "/holds/leader")[1]["token"], first)
        sidecars[leader].proc.send_signal(signal.SIGTERM)
        self.assertEqual(sidecars[leader].wait(), 0)
        self.env.kubectl("delete", "pod", leader, "-n", self.ns, "--grace-period=0", "--force")
        wait_for(lambda: get(sidecars[follower].url + "/holds/leader")[0] == 200, TIMEOUT,
                 "the new leader's sidecar to answer 200")
        second = get(sidecars[follower].url + "/holds/leader")[1]["token"]
        self.assertGreater(int(second), int(first))
        self.assertEqual(second, self.status("web-leader")["fencingToken"])

    def test_the_sidecar_stops_reporting_before_the_published_validity_ends_without_renewals(self):
        # The controller stops renewing (paused): the sidecar must stop reporting a safety
        # margin before the validity the session last published, and never report that grant
        # again, even when renewals resume.
        self.env.create_ready_pods(self.ns, ["worker"])
        recorder = ValidityRecorder(self.env.kube_url, self.ns)
        side = self.sidecar("sidecar", "worker", "--safety-margin", "2s")
        self.env.apply(lease("job-worker", self.ns, "job", "worker", leaseDurationSeconds=6))
        token = self.held_token("job-worker")
        wait_for(lambda: get(side.url + "/holds/job")[0] == 200, TIMEOUT, "the sidecar to report the grant")
        controller = self.env.controllers[-1]
        controller.proc.send_signal(signal.SIGSTOP)
        answers = []  # (when the request was sent, its status)
        try:
            deadline = time.time() + TIMEOUT
            published = None
            # Until well past the validity last published: each answer is judged by when it was
            # asked for, so a slow poll cannot blame the sidecar.
            while published is None or time.time() < published + 1:
                self.assertLess(time.time(), deadline, "answers so far: %s" % answers[-5:])
                asked = time.time()
                answers.append((asked, get(side.url + "/holds/job")[0]))
                published = recorder.published_until("job-worker", token)
                time.sleep(0.02)
        finally:
            controller.proc.send_signal(signal.SIGCONT)
        late = [(asked, status) for asked, status in answers if asked >= published and status != 503]
        self.assertEqual(late, [], "reported after the validity published to it ended at %.3f" % published)
        last_reported = max(asked for asked, status in answers if status == 200)
        print("sidecar: last reported %.2f s before the published validity ended (margin 2 s)"
              % (published - last_reported), file=sys.stderr)
        wait_for(lambda: self.status("job-worker").get("phase") == "Held"
                 and (recorder.published_until("job-worker", self.status("job-worker")["fencingToken"]) or 0)
                 > time.time() + 2, TIMEOUT, "the controller to publish validity again")
        if self.status("job-worker")["fencingToken"] == token:
            self.assertEqual(get(side.url + "/holds/job")[0], 503, "a grant withdrawn for good came back")
        else:  # the controller could not renew in time and granted anew: a new grant is reported
            wait_for(lambda: get(side.url + "/holds/job")[0] == 200, TIMEOUT, "the new grant to be reported")
        recorder.close()

    # --- try-lock --------------------------------------------------------------------------
    def test_wait_zero_on_a_held_lock_exits_three_at_once_and_leaves_no_lease(self):
        self.env.create_ready_pods(self.ns, ["owner", "late"])
        owner = self.tool("acquire-owner", "acquire", "report", pod="owner")
        self.assertEqual(owner.wait(), 0, owner.stderr())
        late = self.tool("try-late", "acquire", "report", "--wait", "0", pod="late")
        self.assertEqual(late.wait(), 3, late.stderr())
        self.assertEqual(late.stdout(), "")
        self.assertIn("not granted at once (--wait 0): lock report is held by owner", late.stderr())
        self.assertIn("deleted Lease report-late", late.stderr())
        self.assertEqual(sorted(self.leases()), ["report-owner"])

    def test_wait_zero_on_a_free_lock_is_granted(self):
        self.env.create_ready_pods(self.ns, ["first"])
        first = self.tool("try-first", "acquire", "report", "--wait", "0", pod="first")
        self.assertEqual(first.wait(), 0, first.stderr())
        self.assertEqual(first.stdout().strip(), self.held_token("report-first"))
        self.assertEqual(self.leases()["report-first"]["spec"]["acquireTimeoutSeconds"], 0)

    # --- once per period ---------------------------------------------------------------------
    def test_run_wait_zero_with_hold_at_least_runs_once_per_period_across_replicas(self):
        self.env.create_ready_pods(self.ns, ["replica-1", "replica-2", "replica-3"])
        runs = os.path.join(self.dir, "runs")
        job = ["/bin/sh", "-c", 'echo "$ESLEASE_FENCING_TOKEN" >> ' + runs]
        # A period far longer than the other replica can take to be turned away.
        first = self.tool("run-1", "run", "nightly", "--wait", "0", "--hold-at-least", "10m", "--", *job,
                          pod="replica-1")
        wait_for(lambda: "--hold-at-least" in first.stderr(), TIMEOUT, "the first replica to keep its grant")
        # Its job is done, but the period is not over: the next replica skips.
        second = self.tool("run-2", "run", "nightly", "--wait", "0", "--hold-at-least", "10m", "--", *job,
                           pod="replica-2")
        self.assertEqual(second.wait(), 3, second.stderr())
        self.assertIn("is held by replica-1", second.stderr())
        self.assertIsNone(first.proc.poll(), "the first replica let go before the period ended")
        # A signal lets go at once, with the job's own exit code.
        first.proc.send_signal(signal.SIGTERM)
        self.assertEqual(first.wait(), 0, first.stderr())
        wait_for(lambda: not self.leases(), TIMEOUT, "the first replica's Lease to go")
        # The next period: the lock is free again, and kept at least as long as asked.
        started = time.monotonic()
        third = self.tool("run-3", "run", "nightly", "--wait", "0", "--hold-at-least", "2s", "--", *job,
                          pod="replica-3")
        self.assertEqual(third.wait(), 0, third.stderr())
        self.assertGreaterEqual(time.monotonic() - started, 2.0)
        with open(runs) as f:
            self.assertEqual(len(f.read().split()), 2, "the job ran once per period")

    # --- what the command leaves running -------------------------------------------------------
    def test_run_stops_what_its_command_left_running_before_it_lets_go(self):
        self.env.create_ready_pods(self.ns, ["holder", "next"])
        left = LeftRunning(self.dir, "leftovers")
        holder = self.timed("run-holder", "run", "leftovers", "--grace", "2s", "--", *left.command("exit 0"),
                            pod="holder")
        wait_for(left.started, TIMEOUT, "the background worker to start")
        next_record = os.path.join(self.dir, "next.record")
        waiter = self.tool("run-next", "run", "leftovers", "--", "/bin/sh", "-c",
                           'echo "start $(date +%s.%N)" >> ' + next_record, pod="next")
        self.assertEqual(holder.wait(), 0, holder.text())
        self.assertIn("processes it started still run", holder.text())
        self.assertEqual(waiter.wait(), 0, waiter.stderr())
        self.assertEqual(len(left.ended()), 1, "the worker was asked to stop, and did")
        self.assertLessEqual(left.ended()[0], holder.exited_at)
        self.assertGreaterEqual(timestamps(next_record, "start")[0], left.ended()[0],
                                "the next holder ran beside the worker")

    def test_a_lost_lock_stops_what_the_command_left_running_too(self):
        self.env.create_ready_pods(self.ns, ["holder"])
        left = LeftRunning(self.dir, "lost")
        holder = self.timed("run-holder", "run", "lost", "--grace", "3s", "--", *left.command("exec sleep 600"),
                            pod="holder")
        wait_for(left.started, TIMEOUT, "the background worker to start")
        self.env.kubectl("delete", "esl", "lost-holder", "-n", self.ns, "--wait=false")
        self.assertEqual(holder.wait(), 4, holder.text())
        self.assertEqual(len(left.ended()), 1, "the worker was stopped with the command")
        self.assertLessEqual(left.ended()[0], holder.exited_at, "eslease exited before the worker had stopped")


class DirectHolders(WithEsEmulator, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_es_emulator(BIN, "eslease-holders-")

    def eslease(self, *args):
        return subprocess.run([os.path.join(BIN, "eslease"), "--es", self.url] + list(args),
                              capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)

    def timed(self, name, *args):
        t = Timed(self.dir.name, name, [os.path.join(BIN, "eslease"), "--es", self.url] + list(args))
        self.addCleanup(t.stop)
        return t

    def test_wait_zero_is_one_attempt(self):
        held = self.eslease("acquire", "try", "--holder", "a", "--ttl", "30s")
        self.assertEqual(held.returncode, 0, held.stderr)
        busy = self.eslease("acquire", "try", "--holder", "b", "--wait", "0")
        self.assertEqual(busy.returncode, 3, busy.stderr)
        self.assertIn("held by a", busy.stderr.decode())
        free = self.eslease("acquire", "try-free", "--holder", "b", "--wait", "0")
        self.assertEqual(free.returncode, 0, free.stderr)
        for lock, holder in (("try", "a"), ("try-free", "b")):
            self.assertEqual(self.eslease("release", lock, "--holder", holder).returncode, 0)

    def test_run_hold_at_least_keeps_the_lock_after_the_command(self):
        holder = Process("hold", [os.path.join(BIN, "eslease"), "--es", self.url, "run", "period", "--holder",
                                  "first", "--wait", "0", "--hold-at-least", "10m", "--", "true"], self.dir.name)
        self.addCleanup(holder.stop)
        wait_for(lambda: "--hold-at-least" in holder.text(), TIMEOUT, "the command to end and the grant be kept")
        busy = self.eslease("run", "period", "--holder", "second", "--wait", "0", "--", "true")
        self.assertEqual(busy.returncode, 3, busy.stderr)
        holder.proc.send_signal(signal.SIGTERM)  # lets go at once
        self.assertEqual(holder.proc.wait(timeout=TIMEOUT), 0, holder.text())
        started = time.monotonic()
        kept = self.eslease("run", "period", "--holder", "third", "--wait", "0", "--hold-at-least", "2s", "--", "true")
        self.assertEqual(kept.returncode, 0, kept.stderr)
        self.assertGreaterEqual(time.monotonic() - started, 2.0)
        free = self.eslease("acquire", "period", "--holder", "fourth", "--wait", "0")
        self.assertEqual(free.returncode, 0, free.stderr)
        self.assertEqual(self.eslease("release", "period", "--holder", "fourth").returncode, 0)

    def test_run_stops_what_its_command_left_running_before_it_lets_go(self):
        left = LeftRunning(self.dir.name, "direct-leftovers")
        holder = self.timed("leaver", "run", "leftovers", "--holder", "h", "--ttl", "6s", "--grace", "1s", "--",
                            *left.command("exit 0"))
        wait_for(left.started, TIMEOUT, "the background worker to start")
        next_record = os.path.join(self.dir.name, "direct-next.record")
        waiter = self.timed("next", "run", "leftovers", "--holder", "n", "--wait", "60s", "--", "/bin/sh", "-c",
                            'echo "start $(date +%s.%N)" >> ' + next_record)
        self.assertEqual(holder.wait(), 0, holder.text())
        self.assertIn("processes it started still run", holder.text())
        self.assertEqual(waiter.wait(), 0, waiter.text())
        self.assertEqual(len(left.ended()), 1, "the worker was asked to stop, and did")
        self.assertLessEqual(left.ended()[0], holder.exited_at)
        self.assertGreaterEqual(timestamps(next_record, "start")[0], left.ended()[0],
                                "the next holder ran beside the worker")

    def test_a_lost_lock_stops_what_the_command_left_running_too(self):
        left = LeftRunning(self.dir.name, "direct-lost")
        holder = self.timed("lost", "run", "lost", "--holder", "h", "--ttl", "3s", "--grace", "1s", "--",
                            *left.command("exec sleep 600"))
        wait_for(left.started, TIMEOUT, "the background worker to start")
        # Someone else's doing: the lock document goes, so the next renewal finds it lost.
        deleted = urllib.request.Request(self.url + "/eslease-locks/_doc/default%2Flost", method="DELETE")
        urllib.request.urlopen(deleted, timeout=10).read()
        self.assertEqual(holder.wait(), 4, holder.text())
        self.assertEqual(len(left.ended()), 1, "the worker was stopped with the command")
        self.assertLessEqual(left.ended()[0], holder.exited_at, "eslease exited before the worker had stopped")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: %s <bin dir> <source dir> [unittest args]" % sys.argv[0])
    BIN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
