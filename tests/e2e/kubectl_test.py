"""Drives the real /usr/bin/kubectl against kube-emulator: CRD, examples, printer columns,
defaults, watch, patches, status subresource, finalizers and schema errors; with
--simulate-kubelet, pods that become Ready and graceful and forced `kubectl delete pod`; and,
with eslease-controller running (tests/e2e/controller_env.py), `kubectl wait` for a grant."""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_env import Environment, ShowsLogsOnFailure, condition, lease, namespace  # noqa: E402
from emulator_process import KubeEmulator, parse_arguments  # noqa: E402

KUBECTL = "/usr/bin/kubectl"
EMULATOR = None
SOURCE_DIR = None
COMMAND_TIMEOUT = 60
DEMO_NS = "eslease-demo"


def lease_manifest(name, spec, namespace=DEMO_NS, metadata_extra=None):
    metadata = {"name": name, "namespace": namespace}
    metadata.update(metadata_extra or {})
    return json.dumps({"apiVersion": "eslease.io/v1alpha1", "kind": "Lease", "metadata": metadata, "spec": spec})


@unittest.skipUnless(os.path.exists(KUBECTL), "kubectl is not installed at /usr/bin/kubectl")
class KubectlAgainstEmulator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emulator = KubeEmulator(EMULATOR).start()
        cls.cache_dir = tempfile.TemporaryDirectory(prefix="eslease-kubectl-cache-")
        try:
            cls.kubectl_ok("apply", "-f", os.path.join(SOURCE_DIR, "crds"))
            cls.kubectl_ok("wait", "--for=condition=Established", "crd/leases.eslease.io", "--timeout=30s")
            cls.applied_examples = cls.kubectl_ok("apply", "-f", os.path.join(SOURCE_DIR, "examples"))
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.emulator.stop()
        cls.cache_dir.cleanup()

    @classmethod
    def command(cls, *args):
        return [KUBECTL, "--kubeconfig", cls.emulator.kubeconfig, "--cache-dir", cls.cache_dir.name,
                "--request-timeout=30s"] + list(args)

    @classmethod
    def kubectl(cls, *args, stdin=None):
        return subprocess.run(cls.command(*args), input=stdin, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT)

    @classmethod
    def kubectl_ok(cls, *args, stdin=None):
        result = cls.kubectl(*args, stdin=stdin)
        if result.returncode != 0:
            raise AssertionError("kubectl %s failed (%d): %s\nemulator stderr:\n%s" % (
                " ".join(args), result.returncode, result.stderr, cls.emulator.stderr()))
        return result.stdout

    def get_json(self, *args):
        return json.loads(self.kubectl_ok("get", *args, "-o", "json"))

    def test_examples_were_created(self):
        for line in ("namespace/eslease-demo created", "pod/report-a created",
                     "lease.eslease.io/nightly-report-a created", "lease.eslease.io/nightly-report-b created",
                     "lease.eslease.io/reporter-leader created", "lease.eslease.io/merge-2 created"):
            self.assertIn(line, self.applied_examples)

    def test_workload_examples_are_accepted(self):
        # Jobs and Deployments under `eslease run` with their RBAC, an election-mode Deployment,
        # and a Service that selects the holder label.
        applied = self.kubectl_ok("apply", "-f", os.path.join(SOURCE_DIR, "examples", "workloads"))
        for line in ("job.batch/", "role.rbac.authorization.k8s.io/", "rolebinding.rbac.authorization.k8s.io/",
                     "serviceaccount/", "deployment.apps/", "lease.eslease.io/", "service/"):
            self.assertIn(line, applied)
        job = self.get_json("jobs", "-n", "eslease-jobs")["items"][0]
        self.assertIn("eslease", " ".join(job["spec"]["template"]["spec"]["containers"][0].get("command", []) +
                                          job["spec"]["template"]["spec"]["containers"][0].get("args", [])))

    def test_get_by_short_name_prints_the_crd_columns(self):
        lines = self.kubectl_ok("get", "esl", "-n", DEMO_NS).splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "LOCK", "HOLDER", "PHASE", "PRIORITY", "TOKEN", "AGE"])
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        self.assertIn("nightly-report-a", rows)
        self.assertIn("nightly-report-b", rows)
        # Lock (the lock or set a controller has seen claimed), holder, phase and token are
        # status, empty until a controller writes it; none runs here.
        self.assertEqual(rows["nightly-report-a"][1:2], ["Foreground"])
        self.assertEqual(rows["nightly-report-b"][1:2], ["Background"])

    def test_a_lease_with_a_lock_shape_is_accepted_and_shown_wide(self):
        self.kubectl_ok("apply", "-f", "-", stdin=lease_manifest("shaped-set", {
            "lockNames": ["reports", "archive"], "holder": {"podName": "report-a"}, "capacity": 3,
            "access": "Shared"}))
        spec = self.get_json("esl", "shaped-set", "-n", DEMO_NS)["spec"]
        self.assertEqual((spec["lockNames"], spec["capacity"], spec["access"]), (["reports", "archive"], 3, "Shared"))
        lines = self.kubectl_ok("get", "esl", "shaped-set", "nightly-report-a", "-n", DEMO_NS, "-o", "wide").splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "LOCK", "LOCKS", "HOLDER", "PHASE", "PRIORITY", "CAPACITY",
                                            "ACCESS", "TOKEN", "AGE"])
        rows = {line.split()[0]: line for line in lines[1:]}
        # A set shows as the server's jsonpath prints a list; the Lock cell, holder, phase and token
        # (status: no controller runs here) are empty.
        self.assertRegex(rows["shaped-set"], r"^shaped-set\s+\[reports archive\]\s+Foreground\s+3\s+Shared\s")
        self.assertRegex(rows["nightly-report-a"], r"^nightly-report-a\s+Foreground\s+1\s+Shared\s")

    def test_get_yaml_shows_schema_defaults(self):
        lease = self.get_json("eslease", "reporter-leader", "-n", "eslease-election")
        self.assertEqual(lease["spec"]["priority"], "Foreground")
        self.assertEqual((lease["spec"]["capacity"], lease["spec"]["access"]), (1, "Shared"))
        self.assertEqual(lease["spec"]["leaseDurationSeconds"], 16)
        self.assertEqual(lease["spec"]["livenessGraceSeconds"], 10)
        claim = self.get_json("lease.eslease.io", "nightly-report-b", "-n", DEMO_NS)
        self.assertEqual(claim["spec"]["leaseDurationSeconds"], 16)
        text = self.kubectl_ok("get", "esl", "nightly-report-b", "-n", DEMO_NS, "-o", "yaml")
        self.assertIn("leaseDurationSeconds: 16", text)
        self.assertIn("priority: Background", text)

    def test_watch_receives_a_change_made_by_another_kubectl(self):
        self.kubectl_ok("apply", "-f", "-", stdin=lease_manifest("watched", {
            "lockName": "watched", "holder": {"podName": "report-a"}, "leaseDurationSeconds": 20}))
        watcher = subprocess.Popen(
            self.command("get", "esl", "-n", DEMO_NS, "--watch", "-o",
                         "jsonpath={.metadata.name}={.spec.leaseDurationSeconds}{\"\\n\"}"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l.strip()) for l in watcher.stdout], daemon=True).start()
        try:
            self.wait_for_line(lines, "watched=20")
            self.kubectl_ok("patch", "esl", "watched", "-n", DEMO_NS, "--type=merge",
                            "-p", '{"spec":{"leaseDurationSeconds":21}}')
            self.wait_for_line(lines, "watched=21")
        finally:
            watcher.kill()
            watcher.wait(timeout=10)
            watcher.stdout.close()
            watcher.stderr.close()

    def wait_for_line(self, lines, expected, timeout=20):
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen.append(line)
            if line == expected:
                return
        self.fail("watch never printed %r; saw %r" % (expected, seen))

    def test_merge_and_json_patches(self):
        self.kubectl_ok("apply", "-f", "-", stdin=lease_manifest("patched", {
            "lockName": "patched", "holder": {"podName": "report-a"}}))
        self.kubectl_ok("patch", "esl", "patched", "-n", DEMO_NS, "--type=merge",
                        "-p", '{"spec":{"leaseDurationSeconds":45}}')
        self.kubectl_ok("patch", "esl", "patched", "-n", DEMO_NS, "--type=json",
                        "-p", '[{"op":"replace","path":"/spec/priority","value":"Background"}]')
        lease = self.get_json("esl", "patched", "-n", DEMO_NS)
        self.assertEqual(lease["spec"]["leaseDurationSeconds"], 45)
        self.assertEqual(lease["spec"]["priority"], "Background")
        self.assertEqual(lease["metadata"]["generation"], 3)
        rejected = self.kubectl("patch", "esl", "patched", "-n", DEMO_NS, "--type=merge",
                                "-p", '{"spec":{"priority":"Urgent"}}')
        self.assertNotEqual(rejected.returncode, 0)
        self.assertIn('spec.priority: Unsupported value: "Urgent"', rejected.stderr)

    def test_status_subresource_and_wait_for_jsonpath(self):
        self.kubectl_ok("apply", "-f", "-", stdin=lease_manifest("held", {
            "lockName": "held", "holder": {"podName": "report-a"}}))
        self.kubectl_ok("patch", "esl", "held", "-n", DEMO_NS, "--subresource=status", "--type=merge",
                        "-p", '{"status":{"phase":"Held","lock":"held","fencingToken":"4294967311",'
                        '"holder":{"podName":"report-a"}},'
                        '"spec":{"priority":"Background"}}')
        self.kubectl_ok("wait", "--for=jsonpath={.status.phase}=Held", "esl/held", "-n", DEMO_NS, "--timeout=20s")
        lease = self.get_json("esl", "held", "-n", DEMO_NS)
        self.assertEqual(lease["status"]["fencingToken"], "4294967311")
        self.assertEqual(lease["spec"]["priority"], "Foreground", "the status subresource ignores spec changes")
        self.assertEqual(lease["metadata"]["generation"], 1, "status writes do not bump generation")
        header, row = self.kubectl_ok("get", "esl", "held", "-n", DEMO_NS).splitlines()[:2]
        self.assertEqual(row.split()[:6], ["held", "held", "report-a", "Held", "Foreground", "4294967311"])

    def test_finalizer_keeps_a_deleted_lease_until_removed(self):
        self.kubectl_ok("apply", "-f", "-", stdin=lease_manifest(
            "final", {"lockName": "final", "holder": {"podName": "report-a"}},
            metadata_extra={"finalizers": ["eslease.io/release"]}))
        self.kubectl_ok("delete", "esl", "final", "-n", DEMO_NS, "--wait=false")
        lease = self.get_json("esl", "final", "-n", DEMO_NS)
        self.assertTrue(lease["metadata"].get("deletionTimestamp"), "deletion is pending on the finalizer")
        self.assertEqual(lease["metadata"]["finalizers"], ["eslease.io/release"])
        self.kubectl_ok("patch", "esl", "final", "-n", DEMO_NS, "--type=json",
                        "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
        self.kubectl_ok("wait", "--for=delete", "esl/final", "-n", DEMO_NS, "--timeout=20s")
        gone = self.kubectl("get", "esl", "final", "-n", DEMO_NS)
        self.assertNotEqual(gone.returncode, 0)
        self.assertIn('leases.eslease.io "final" not found', gone.stderr)

    def test_invalid_leases_are_rejected_with_the_schema_error(self):
        cases = {
            "bad-priority": ({"lockName": "x", "holder": {"podName": "p"}, "priority": "Urgent"},
                             'spec.priority: Unsupported value: "Urgent": supported values: "Foreground", '
                             '"Background"'),
            "both-holders": ({"lockName": "x", "holder": {"podName": "p", "podSelector": {"matchLabels": {"a": "b"}}}},
                             '"spec.holder" must validate one and only one schema (oneOf). Found 2 valid '
                             'alternatives'),
            "no-lock-name": ({"holder": {"podName": "p"}}, "spec.lockName: Required value"),
            "both-lock-forms": ({"lockName": "x", "lockNames": ["a", "b"], "holder": {"podName": "p"}},
                                '"spec" must validate one and only one schema (oneOf). Found 2 valid alternatives'),
            "one-lock-set": ({"lockNames": ["a"], "holder": {"podName": "p"}},
                             "spec.lockNames: Invalid value: 1: spec.lockNames in body should have at least 2 items"),
            "repeated-lock": ({"lockNames": ["a", "b", "a"], "holder": {"podName": "p"}},
                              'spec.lockNames[2]: Duplicate value: "a"'),
            "big-capacity": ({"lockName": "x", "holder": {"podName": "p"}, "capacity": 1001},
                             "spec.capacity: Invalid value: 1001: spec.capacity in body should be less than or "
                             "equal to 1000"),
            "bad-access": ({"lockName": "x", "holder": {"podName": "p"}, "access": "Read"},
                           'spec.access: Unsupported value: "Read": supported values: "Exclusive", "Shared"'),
            "bad-lock-name": ({"lockName": "Bad Name", "holder": {"podName": "p"}},
                              'spec.lockName: Invalid value: "Bad Name": spec.lockName in body should match '
                              "'^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$'"),
            "zero-duration": ({"lockName": "x", "holder": {"podName": "p"}, "leaseDurationSeconds": 0},
                              "spec.leaseDurationSeconds: Invalid value: 0: spec.leaseDurationSeconds in body "
                              "should be greater than or equal to 1"),
        }
        for name, (spec, message) in cases.items():
            with self.subTest(name):
                result = self.kubectl("apply", "-f", "-", stdin=lease_manifest(name, spec))
                self.assertNotEqual(result.returncode, 0, result.stdout)
                self.assertIn('The Lease "%s" is invalid' % name, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertNotEqual(self.kubectl("get", "esl", name, "-n", DEMO_NS).returncode, 0)

    def test_unknown_fields_are_refused_by_strict_field_validation(self):
        result = self.kubectl("apply", "-f", "-", stdin=lease_manifest(
            "unknown-field", {"lockName": "x", "holder": {"podName": "p"}, "colour": "blue"}))
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn('strict decoding error: unknown field "spec.colour"', result.stderr)
        pruned = self.kubectl_ok("apply", "--validate=false", "-f", "-", stdin=lease_manifest(
            "pruned-field", {"lockName": "x", "holder": {"podName": "p"}, "colour": "blue"}))
        self.assertIn("lease.eslease.io/pruned-field created", pruned)
        self.assertNotIn("colour", self.get_json("esl", "pruned-field", "-n", DEMO_NS)["spec"])

    def test_explain_reads_the_published_schema(self):
        text = self.kubectl_ok("explain", "esl.spec")
        self.assertIn("KIND:       Lease", text)
        self.assertIn("lockName\t<string>\n", text)
        self.assertIn("lockNames\t<[]string>\n", text)
        self.assertIn("enum: Exclusive, Shared", text)
        self.assertIn("enum: Foreground, Background", text)


class EmulatorHelp(unittest.TestCase):
    def test_help_prints_the_usage_and_exits_0(self):
        result = subprocess.run([EMULATOR, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("usage: kube-emulator --listen HOST:PORT --kubeconfig-out FILE", result.stdout)
        self.assertIn("--simulate-kubelet", result.stdout)
        for flag in ("--node-lease-renew-interval", "--node-monitor-grace-period", "--node-monitor-period"):
            self.assertIn(flag, result.stdout)
        zero = subprocess.run([EMULATOR, "--listen", "127.0.0.1:0", "--kubeconfig-out", "/dev/null",
                               "--simulate-kubelet", "--node-monitor-period", "0s"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(zero.returncode, 2)
        self.assertIn("--node-monitor-period: must be longer than 0", zero.stderr)
        unknown = subprocess.run([EMULATOR, "--colour"], capture_output=True, text=True, timeout=30)
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("unknown flag --colour", unknown.stderr)


def deployment_manifest(name, replicas):
    labels = {"app": name}
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                                "template": {"metadata": {"labels": labels},
                                             "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}})


def pod_manifest(name, grace=None):
    spec = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                       "spec": spec})


class SimulatedKubeletClient(unittest.TestCase):
    """kubectl against `kube-emulator --simulate-kubelet EXTRA_ARGS`, and the emulator's admin API."""

    EXTRA_ARGS = []

    @classmethod
    def setUpClass(cls):
        cls.emulator = KubeEmulator(EMULATOR, extra_args=["--simulate-kubelet"] + cls.EXTRA_ARGS).start()
        cls.cache_dir = tempfile.TemporaryDirectory(prefix="eslease-kubectl-cache-")

    @classmethod
    def tearDownClass(cls):
        cls.emulator.stop()
        cls.cache_dir.cleanup()

    def kubectl(self, *args, stdin=None):
        command = [KUBECTL, "--kubeconfig", self.emulator.kubeconfig, "--cache-dir", self.cache_dir.name,
                   "--request-timeout=30s"] + list(args)
        return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)

    def kubectl_ok(self, *args, stdin=None):
        result = self.kubectl(*args, stdin=stdin)
        if result.returncode != 0:
            self.fail("kubectl %s failed (%d): %s\nemulator stderr:\n%s" % (
                " ".join(args), result.returncode, result.stderr, self.emulator.stderr()))
        return result.stdout

    def get_pod(self, name):
        return json.loads(self.kubectl_ok("get", "pod", name, "-o", "json"))

    def running_pod(self, name, grace=None):
        self.kubectl_ok("apply", "-f", "-", stdin=pod_manifest(name, grace))
        self.kubectl_ok("wait", "--for=condition=Ready", "pod/" + name, "--timeout=20s")
        return self.get_pod(name)

    def admin(self, path, body):
        request = urllib.request.Request(self.emulator.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())



@unittest.skipUnless(os.path.exists(KUBECTL), "kubectl is not installed at /usr/bin/kubectl")
class KubectlWithSimulatedKubelet(SimulatedKubeletClient):
    """Grace periods are scaled by 0.05 and capped at 2 s, so a 20 s grace period lasts 1 s."""

    EXTRA_ARGS = ["--kubelet-grace-scale", "0.05", "--kubelet-max-grace", "2s"]

    def test_created_pod_is_scheduled_and_becomes_ready(self):
        pod = self.running_pod("ready-pod")
        self.assertEqual(pod["status"]["phase"], "Running")
        self.assertIn(pod["spec"]["nodeName"], ("node-1", "node-2", "node-3"))
        self.assertTrue(pod["status"]["podIP"])
        nodes = self.kubectl_ok("get", "nodes", "-o", "name").split()
        self.assertEqual(nodes, ["node/node-1", "node/node-2", "node/node-3"])

    def test_get_prints_the_columns_a_real_server_prints(self):
        self.running_pod("columns-pod")
        pods = self.kubectl_ok("get", "pods", "columns-pod").splitlines()
        self.assertEqual(pods[0].split(), ["NAME", "READY", "STATUS", "RESTARTS", "AGE"])
        self.assertEqual(pods[1].split()[:4], ["columns-pod", "1/1", "Running", "0"])
        wide = self.kubectl_ok("get", "pods", "columns-pod", "-o", "wide").splitlines()
        self.assertEqual(wide[0].split()[:7], ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"])
        nodes = self.kubectl_ok("get", "nodes").splitlines()
        self.assertEqual(nodes[0].split(), ["NAME", "STATUS", "ROLES", "AGE", "VERSION"])
        self.assertEqual(nodes[1].split()[1], "Ready")
        self.kubectl_ok("create", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "columns-pod.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "columns-pod", "namespace": "default"},
            "reason": "Acquired", "message": "lock nightly granted", "type": "Normal",
            "lastTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
        events = self.kubectl_ok("get", "events", "--field-selector", "involvedObject.name=columns-pod").splitlines()
        self.assertEqual(events[0].split(), ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"])
        self.assertEqual(events[1].split()[1:], ["Normal", "Acquired", "pod/columns-pod", "lock", "nightly", "granted"])
        self.kubectl_ok("apply", "-f", "-", stdin=deployment_manifest("columns-web", 2))
        deployments = self.kubectl_ok("get", "deployments", "columns-web").splitlines()
        self.assertEqual(deployments[0].split(), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"])
        self.assertEqual(deployments[1].split()[:2], ["columns-web", "0/2"])

    def test_scale_deployment(self):
        self.kubectl_ok("apply", "-f", "-", stdin=deployment_manifest("scaled", 1))
        self.assertIn("deployment.apps/scaled scaled", self.kubectl_ok("scale", "deployment", "scaled", "--replicas=3"))
        deployment = json.loads(self.kubectl_ok("get", "deployment", "scaled", "-o", "json"))
        self.assertEqual(deployment["spec"]["replicas"], 3)
        stale = self.kubectl("scale", "deployment", "scaled", "--replicas=5", "--current-replicas=1")
        self.assertNotEqual(stale.returncode, 0)
        self.assertIn("Expected replicas to be 1, was 3", stale.stderr)
        self.assertEqual(json.loads(self.kubectl_ok("get", "deployment", "scaled", "-o", "json"))["spec"]["replicas"], 3)
        missing = self.kubectl("scale", "deployment", "nothing", "--replicas=1")
        self.assertIn('deployments.apps "nothing" not found', missing.stderr)

    def test_force_delete_removes_the_pod_at_once(self):
        self.running_pod("forced", grace=600)
        result = self.kubectl_ok("delete", "pod", "forced", "--grace-period=0", "--force")
        self.assertIn('pod "forced" force deleted', result)
        gone = self.kubectl("get", "pod", "forced")
        self.assertNotEqual(gone.returncode, 0)
        self.assertIn('pods "forced" not found', gone.stderr)

    def test_plain_delete_waits_for_the_grace_period(self):
        self.running_pod("graceful", grace=20)
        self.kubectl_ok("delete", "pod", "graceful", "--wait=false")
        pod = self.get_pod("graceful")
        self.assertTrue(pod["metadata"].get("deletionTimestamp"), "the pod is terminating, not gone")
        self.assertEqual(pod["metadata"]["deletionGracePeriodSeconds"], 20)
        self.kubectl_ok("wait", "--for=delete", "pod/graceful", "--timeout=20s")
        self.assertNotEqual(self.kubectl("get", "pod", "graceful").returncode, 0)
        # kubectl's own wait after a plain delete ends once the kubelet removed the pod.
        self.running_pod("waited", grace=20)
        self.assertIn('pod "waited" deleted', self.kubectl_ok("delete", "pod", "waited", "--timeout=20s"))
        self.assertNotEqual(self.kubectl("get", "pod", "waited").returncode, 0)

    def test_admin_endpoints_change_readiness_and_phase(self):
        pod = self.running_pod("flaky")
        self.admin("/_emulator/kubelet/pods/default/flaky", {"ready": False})
        self.kubectl_ok("wait", "--for=condition=Ready=false", "pod/flaky", "--timeout=20s")
        self.admin("/_emulator/kubelet/pods/default/flaky", {"ready": True})
        self.kubectl_ok("wait", "--for=condition=Ready", "pod/flaky", "--timeout=20s")
        node = pod["spec"]["nodeName"]
        self.admin("/_emulator/kubelet/nodes/" + node, {"ready": "Unknown"})
        self.kubectl_ok("wait", "--for=condition=Ready=false", "pod/flaky", "--timeout=20s")
        self.admin("/_emulator/kubelet/nodes/" + node, {"ready": "True"})
        self.kubectl_ok("wait", "--for=condition=Ready", "pod/flaky", "--timeout=20s")
        self.admin("/_emulator/kubelet/pods/default/flaky", {"phase": "Failed"})
        self.kubectl_ok("wait", "--for=jsonpath={.status.phase}=Failed", "pod/flaky", "--timeout=20s")


@unittest.skipUnless(os.path.exists(KUBECTL), "kubectl is not installed at /usr/bin/kubectl")
class KubectlSeesNodeHeartbeats(SimulatedKubeletClient):
    """Node Leases and the node lifecycle controller as kubectl shows them, with the heartbeat
    shortened: renewed every 200 ms, a node silent for 3 s marked Unknown."""

    EXTRA_ARGS = ["--node-lease-renew-interval", "200ms", "--node-monitor-grace-period", "3s",
                  "--node-monitor-period", "200ms"]

    def node_ready(self, name):
        return self.kubectl_ok("get", "node", name, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")

    def running_pod_on(self, name, node):
        self.kubectl_ok("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx:1.27"}]}}))
        self.kubectl_ok("wait", "--for=condition=Ready", "pod/" + name, "--timeout=20s")

    def test_every_node_has_a_lease_its_kubelet_renews(self):
        leases = self.kubectl_ok("get", "lease", "-n", "kube-node-lease").splitlines()
        self.assertEqual(leases[0].split(), ["NAME", "HOLDER", "AGE"])
        self.assertEqual([line.split()[:2] for line in leases[1:]],
                         [["node-1", "node-1"], ["node-2", "node-2"], ["node-3", "node-3"]])
        lease = json.loads(self.kubectl_ok("get", "lease", "node-2", "-n", "kube-node-lease", "-o", "json"))
        self.assertEqual(lease["spec"]["leaseDurationSeconds"], 40)
        self.assertEqual(lease["metadata"]["ownerReferences"][0]["kind"], "Node")
        deadline = time.monotonic() + 20
        renewed = lease["spec"]["renewTime"]
        while renewed == lease["spec"]["renewTime"] and time.monotonic() < deadline:
            time.sleep(0.1)
            renewed = self.kubectl_ok("get", "lease", "node-2", "-n", "kube-node-lease", "-o",
                                      "jsonpath={.spec.renewTime}")
        self.assertGreater(renewed, lease["spec"]["renewTime"])

    def test_a_partitioned_node_goes_not_ready_and_comes_back(self):
        self.running_pod_on("far", "node-1")
        self.admin("/_emulator/kubelet/nodes/node-1", {"network": "partitioned"})
        self.kubectl_ok("wait", "--for=condition=Ready=Unknown", "node/node-1", "--timeout=30s")
        nodes = {line.split()[0]: line.split()[1] for line in self.kubectl_ok("get", "nodes").splitlines()[1:]}
        self.assertEqual(nodes, {"node-1": "NotReady", "node-2": "Ready", "node-3": "Ready"})
        taints = self.kubectl_ok("get", "node", "node-1", "-o", "jsonpath={.spec.taints[*].key}").split()
        self.assertEqual(taints, ["node.kubernetes.io/unreachable"] * 2)
        self.kubectl_ok("wait", "--for=condition=Ready=false", "pod/far", "--timeout=20s")
        self.assertIn("Running", self.kubectl_ok("get", "pod", "far"))
        self.admin("/_emulator/kubelet/nodes/node-1", {"network": "connected"})
        self.kubectl_ok("wait", "--for=condition=Ready", "node/node-1", "--timeout=20s")
        self.kubectl_ok("wait", "--for=condition=Ready", "pod/far", "--timeout=20s")

    def test_a_node_powered_off_and_on_restarts_its_containers(self):
        self.running_pod_on("rebooted", "node-3")
        self.admin("/_emulator/kubelet/nodes/node-3", {"power": "off"})
        self.kubectl_ok("wait", "--for=condition=Ready=Unknown", "node/node-3", "--timeout=30s")
        self.admin("/_emulator/kubelet/nodes/node-3", {"power": "on"})
        self.kubectl_ok("wait", "--for=condition=Ready", "node/node-3", "--timeout=20s")
        self.kubectl_ok("wait", "--for=condition=Ready", "pod/rebooted", "--timeout=20s")
        self.assertEqual(self.kubectl_ok("get", "pod", "rebooted").splitlines()[1].split()[1:4],
                         ["1/1", "Running", "1"])


@unittest.skipUnless(os.path.exists(KUBECTL), "kubectl is not installed at /usr/bin/kubectl")
class KubectlWaitsForTheController(ShowsLogsOnFailure, unittest.TestCase):
    """`kubectl wait --for=condition=Held`, as a script waits for a grant, against a running
    eslease-controller with both emulators (the binaries next to kube-emulator)."""

    ns = "waiting"

    @classmethod
    def setUpClass(cls):
        cls.env = Environment(os.path.dirname(os.path.abspath(EMULATOR)), SOURCE_DIR).start_with_controller()
        cls.env.apply(namespace(cls.ns))

    @classmethod
    def tearDownClass(cls):
        cls.env.stop()

    def wait(self, condition, resource):
        result = self.env.kubectl("wait", "--for=condition=" + condition, resource, "-n", self.ns, "--timeout=30s",
                                  check=False)
        self.assertEqual(result.returncode, 0, "kubectl wait --for=condition=%s %s: %s" % (
            condition, resource, result.stderr))
        return result.stdout

    def test_wait_for_the_held_condition_follows_the_lock(self):
        self.env.create_ready_pods(self.ns, ["first", "second"])
        self.env.apply(lease("first", self.ns, "report", "first"))
        self.assertIn("lease.eslease.io/first condition met", self.wait("Held", "lease.eslease.io/first"))
        self.env.apply(lease("second", self.ns, "report", "second"))
        self.assertIn("condition met", self.wait("Held=false", "esl/second"))
        second = self.env.get("esl", "second", self.ns)
        self.assertEqual(second["status"]["phase"], "Pending")

        # The holder's pod goes: the lock moves, and both waits see it.
        self.env.kubectl("delete", "pod", "first", "-n", self.ns, "--grace-period=0", "--force")
        self.assertIn("condition met", self.wait("Held", "lease.eslease.io/second"))
        self.assertIn("condition met", self.wait("Held=false", "lease.eslease.io/first"))

    def test_a_lock_set_is_held_whole_and_handed_over_when_its_pod_goes(self):
        self.env.create_ready_pods(self.ns, ["merger", "single"])
        body = lease("merger", self.ns, "orders", "merger")
        del body["spec"]["lockName"]
        body["spec"]["lockNames"] = ["orders", "customers"]
        self.env.apply(body)
        self.assertIn("condition met", self.wait("Held", "esl/merger"))
        self.env.apply(lease("single", self.ns, "customers", "single"))
        self.assertIn("condition met", self.wait("Held=false", "esl/single"))
        self.assertEqual(self.env.get("esl", "single", self.ns)["status"]["queuePosition"], 0)
        wide = self.env.kubectl("get", "esl", "merger", "-n", self.ns, "-o", "wide").stdout.splitlines()
        self.assertIn("[orders customers]", wide[1], wide)

        self.env.kubectl("delete", "pod", "merger", "-n", self.ns, "--grace-period=0", "--force")
        self.assertIn("condition met", self.wait("Held", "esl/single"))
        merger = self.env.get("esl", "merger", self.ns)
        single = self.env.get("esl", "single", self.ns)
        self.assertGreater(int(single["status"]["fencingToken"]), int(merger["status"].get("fencingToken", "0")))
        self.assertEqual(single["status"].get("lastTakeover", {}).get("fromPod"), "merger", (merger, single))

    def test_a_semaphore_holds_up_to_its_capacity(self):
        self.env.create_ready_pods(self.ns, ["r1", "r2", "r3"])
        # Served by creation, then (within one second) by name: r1 and r2 first either way.
        for name in ("r1", "r2", "r3"):
            self.env.apply(lease(name, self.ns, "pool", name, capacity=2, access="Shared"))
        self.assertIn("condition met", self.wait("Held", "esl/r1"))
        self.assertIn("condition met", self.wait("Held", "esl/r2"))
        self.assertIn("condition met", self.wait("Held=false", "esl/r3"))
        self.assertEqual(self.env.get("esl", "r3", self.ns)["status"]["queuePosition"], 0)
        wide = self.env.kubectl("get", "esl", "-n", self.ns, "-o", "wide").stdout.splitlines()
        self.assertIn("CAPACITY", wide[0].split())
        rows = [line.split() for line in wide[1:] if line.split()[0] in ("r1", "r2", "r3")]
        self.assertEqual(len(rows), 3, wide)
        self.assertTrue(all("Shared" in row and "2" in row for row in rows), wide)

    def test_plain_lease_names_the_coordination_lease(self):
        # Why the docs write lease.eslease.io/NAME or esl/NAME: kubectl resolves "lease" to
        # Kubernetes' own coordination.k8s.io Lease.
        self.env.create_ready_pods(self.ns, ["only"])
        self.env.apply(lease("only", self.ns, "only", "only"))
        self.wait("Held", "esl/only")
        plain = self.env.kubectl("get", "lease", "only", "-n", self.ns, check=False)
        self.assertNotEqual(plain.returncode, 0)
        self.assertIn('leases.coordination.k8s.io "only" not found', plain.stderr)


if __name__ == "__main__":
    EMULATOR, SOURCE_DIR, unittest_argv = parse_arguments(sys.argv)
    unittest.main(argv=unittest_argv, verbosity=2)
