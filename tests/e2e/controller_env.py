"""Runs the controller and both emulators as separate processes on loopback, as users run
them, for the end-to-end tests, the benchmarks and the demo. Everything started is stopped."""

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "common"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engines"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backend as es_backend  # noqa: E402
from sanitizer_reports import MARKERS as SANITIZER_MARKERS, install  # noqa: E402
from validity import PublishedValidity  # noqa: E402

KUBECTL = "/usr/bin/kubectl"
# A command that runs each controller, for profiling: e.g. "valgrind --tool=callgrind".
# Its start-up is then given ten times as long.
CONTROLLER_WRAPPER = shlex.split(os.environ.get("ESLEASE_CONTROLLER_WRAPPER", ""))
# Every process the script starts (the tool too) writes its sanitizer reports there.
SANITIZER_REPORTS = install()


def wait_for(condition, timeout, what, interval=0.01):
    """Polls `condition` until it returns a true value, or fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


class ValidityRecorder:
    """Watches a namespace's eslease Leases and its session (`eslease-session`) from the moment
    it starts, and answers, by the rule of bench/common/validity.py, the latest validity a
    grant was ever shown. Both streams are replayed in resourceVersion order (the API server
    has one counter), so the answer is what a holder watching both could have seen."""

    def __init__(self, kube_url, ns):
        self.ns = ns
        self._events = []
        self._lock = threading.Lock()
        self._closed = False
        for path, kind in (("/apis/eslease.io/v1alpha1/namespaces/%s/leases?watch=1&timeoutSeconds=120" % ns,
                            "lease"),
                           ("/apis/coordination.k8s.io/v1/namespaces/%s/leases?watch=1&timeoutSeconds=120"
                            "&fieldSelector=metadata.name%%3Deslease-session" % ns, "session")):
            response = urllib.request.urlopen(kube_url + path, timeout=600)
            threading.Thread(target=self._follow, args=(response, kind), daemon=True).start()

    def _follow(self, response, kind):
        try:
            for line in response:
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    rv = int(event["object"]["metadata"]["resourceVersion"])
                    with self._lock:
                        if self._closed:
                            return
                        self._events.append((rv, kind, event["type"], event["object"]))
        except Exception:  # closed by close(), or the emulator stopped
            pass

    def published_until(self, lease_name, token):
        """Epoch seconds of the latest validity shown to the grant, or None."""
        replay = PublishedValidity()
        with self._lock:
            events = sorted(self._events, key=lambda e: e[0])
        for _, kind, event_type, obj in events:
            (replay.apply_lease if kind == "lease" else replay.apply_session)(event_type, obj)
        return replay.published_until(self.ns, lease_name, int(token))[0]

    def close(self):
        """Stops recording. The streams are not closed from here (closing a response another
        thread is reading from blocks on its buffer's lock); the threads end with the
        server's timeoutSeconds or when the emulator stops."""
        with self._lock:
            self._closed = True


class ShowsLogsOnFailure:
    """Mixed into a TestCase with an `env` (and usually an `ns`): when a test fails, what the
    controllers logged about its namespace is printed, so a failure explains itself in CI."""

    LOG_LINES = 60

    def run(self, result=None):
        failed_before = len(result.failures) + len(result.errors) if result else 0
        outcome = super().run(result)
        result = result or outcome
        env = getattr(self, "env", None)
        if result is not None and env is not None and len(result.failures) + len(result.errors) > failed_before:
            ns = getattr(self, "ns", None)
            for name, text in sorted(env.logs().items()):
                if not name.startswith("controller"):
                    continue
                lines = [line for line in text.splitlines() if not ns or ns in line]
                sys.stderr.write("--- %s, %s (last %d lines) ---\n" % (
                    name, "lines naming " + ns if ns else "output", min(len(lines), self.LOG_LINES)))
                sys.stderr.write("\n".join(lines[-self.LOG_LINES:]) + "\n")
        return outcome


class WithOneController(ShowsLogsOnFailure):
    """For a TestCase class whose tests each add objects of their own namespace: one
    Environment with one controller (cls.env, cls.controller) for them all."""

    @classmethod
    def start_controller(cls, bin_dir, source):
        cls.env = Environment(bin_dir, source).start_with_controller()
        cls.controller = cls.env.controllers[0]

    @classmethod
    def tearDownClass(cls):
        cls.env.stop()


class Process:
    """A child process whose stdout/stderr go to files; `announced(regex)` waits for a line."""

    def __init__(self, name, argv, workdir, env=None):
        self.name = name
        self.out_path = os.path.join(workdir, name + ".out")
        self.err_path = os.path.join(workdir, name + ".err")
        self._out = open(self.out_path, "wb")
        self._err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._out, stderr=self._err, stdin=subprocess.DEVNULL,
                                     env=env)

    def text(self):
        chunks = []
        for path in (self.out_path, self.err_path):
            with open(path, "rb") as f:
                chunks.append(f.read().decode("utf-8", "replace"))
        return "\n".join(chunks)

    def announced(self, pattern, timeout=30):
        regex = re.compile(pattern)

        def found():
            match = regex.search(self.text())
            if match:
                return match
            if self.proc.poll() is not None:
                raise AssertionError("%s exited with %s: %s" % (self.name, self.proc.returncode, self.text()[-3000:]))
            return None

        return wait_for(found, timeout, "%s to print %s" % (self.name, pattern))

    def stop(self, sig_kill=False):
        if self.proc.poll() is None:
            if sig_kill:
                self.proc.kill()
            else:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._out.close()
        self._err.close()
        return self.proc.returncode


class WithEsEmulator:
    """For a TestCase class: one Elasticsearch on loopback (cls.url; the backend of
    ESLEASE_TEST_BACKEND, see tests/engines/backend.py) and a directory (cls.dir) for its
    output and the tests' own files, stopped after the last test."""

    @classmethod
    def start_es_emulator(cls, bin_dir, prefix):
        cls.dir = tempfile.TemporaryDirectory(prefix=prefix)
        cls.es_processes = []

        def spawn(name, argv):
            cls.es_processes.append(Process(name, argv, cls.dir.name))
            return cls.es_processes[-1]

        try:
            cls.url = es_backend.start(spawn, bin_dir).url
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for process in reversed(cls.es_processes):
            process.stop()
        cls.dir.cleanup()


class Environment:
    """Elasticsearch (the backend of ESLEASE_TEST_BACKEND, or `backend`; a real engine behind
    the fault proxy unless `fault_proxy` is False) + kube-emulator (kubelet simulated) + CRD,
    and controllers on demand. `kube_args` go to the kube-emulator after the usual ones (a
    later flag wins)."""

    def __init__(self, bin_dir, source_dir, simulate_kubelet=True, backend=None, fault_proxy=True, kube_args=()):
        self.bin = bin_dir
        self.backend = backend
        self.fault_proxy = fault_proxy
        self.simulate_kubelet = simulate_kubelet
        self.kube_args = list(kube_args)
        self.source = source_dir
        self.dir = tempfile.mkdtemp(prefix="eslease-ctl-")
        self.processes = []
        self.controllers = []
        self.stopped_logs = {}  # process name -> its output, kept when the processes stop

    # --- lifecycle ---------------------------------------------------------------------
    def start(self):
        try:
            self.elasticsearch = es_backend.start(self._spawn, self.bin, self.backend, self.fault_proxy)
            self.es_url = self.elasticsearch.url
            self.kubeconfig = os.path.join(self.dir, "kubeconfig")
            argv = [os.path.join(self.bin, "kube-emulator"), "--listen", "127.0.0.1:0",
                    "--kubeconfig-out", self.kubeconfig]
            if self.simulate_kubelet:
                # Pods run and become Ready by themselves; a graceful deletion's 30 s default
                # grace period lasts 300 ms.
                argv += ["--simulate-kubelet", "--kubelet-grace-scale", "0.01"]
            kube = self._spawn("kube-emulator", argv + self.kube_args)
            self.kube_url = kube.announced(r"kube-emulator listening on (\S+)").group(1)
            self.kubectl("apply", "-f", os.path.join(self.source, "crds"))
            self.kubectl("wait", "--for=condition=Established", "crd/leases.eslease.io", "--timeout=30s")
        except Exception:
            self.stop(keep_logs=True)
            raise
        return self

    def start_with_controller(self):
        """Starts the emulators and one controller (`self.controllers[0]`); stops everything
        started when either fails."""
        self.start()
        try:
            self.start_controller()
        except Exception:
            self.stop(keep_logs=True)
            raise
        return self

    def stop(self, keep_logs=False):
        """Stops every process; their directory goes, or stays (`keep_logs`) with their logs."""
        reports = []
        for p in reversed(self.processes):
            p.stop()
            text = p.text()
            self.stopped_logs[p.name] = text
            for marker in SANITIZER_MARKERS:
                at = text.find(marker)
                if at >= 0:
                    reports.append("%s: %s" % (p.name, text[at:at + 3000]))
        self.processes = []
        if keep_logs:
            print("environment kept, with its processes' logs: %s" % self.dir, file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        # A sanitizer build of any process (ESLEASE_SANITIZE) fails the test that ran it.
        if reports:
            raise AssertionError("sanitizer report:\n" + "\n".join(reports))
        SANITIZER_REPORTS.check()

    def logs(self):
        """Every process's output so far, by process name (also after `stop`)."""
        out = dict(self.stopped_logs)
        out.update({p.name: p.text() for p in self.processes})
        return out

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        # A run that failed keeps its processes' logs for whoever reads the failure.
        self.stop(keep_logs=exc_type is not None)
        return False

    def _spawn(self, name, argv, env=None):
        p = Process(name, argv, self.dir, env)
        self.processes.append(p)
        return p

    def start_controller(self, *extra, name=None, kubeconfig=None, identity=None):
        """A controller named `name` (its --identity too, unless `identity` is given: a
        restarted container keeps its pod's), reaching the API server through `kubeconfig`
        (default: the emulator's own)."""
        name = name or "controller-%d" % len(self.controllers)
        argv = CONTROLLER_WRAPPER + [
            os.path.join(self.bin, "eslease-controller"), "--kubeconfig", kubeconfig or self.kubeconfig,
            "--es", self.es_url,
            "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
            "--identity", identity or name] + list(extra)
        timeout = 300 if CONTROLLER_WRAPPER else 30
        p = self._spawn(name, argv)
        p.metrics_url = "http://" + p.announced(r"endpoint=metrics address=(\S+)", timeout).group(1) + "/metrics"
        p.health_url = "http://" + p.announced(r"endpoint=health address=(\S+)", timeout).group(1)
        self.controllers.append(p)
        wait_for(lambda: self.http_status(p.health_url + "/readyz") == 200, timeout, "the controller to be ready")
        return p

    # --- clients -----------------------------------------------------------------------
    def kubectl(self, *args, input_text=None, check=True):
        result = subprocess.run([KUBECTL, "--kubeconfig", self.kubeconfig] + list(args), input=input_text,
                                capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise AssertionError("kubectl %s failed: %s" % (" ".join(args), result.stderr))
        return result

    def apply(self, *objects):
        self.kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(objects))

    def get(self, kind, name, namespace):
        result = self.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    def http(self, method, url, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def http_status(self, url):
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return 0

    def metrics(self, controller):
        with urllib.request.urlopen(controller.metrics_url, timeout=5) as response:
            return response.read().decode()

    def es(self, method, path, body=None):
        return self.http(method, self.es_url + path, body)

    @contextlib.contextmanager
    def faults(self, emulator_url, *rules):
        """Injects fault rules into an emulator (`es_url` or `kube_url`; see each emulator's
        README for the rule fields) for the `with` block, and ends them all afterwards."""
        try:
            for rule in rules:
                self.http("POST", emulator_url + "/_emulator/faults", rule)
            yield
        finally:
            self.http("DELETE", emulator_url + "/_emulator/faults")

    def kubelet(self, name, ns, change):
        """Changes a pod as its kubelet would: {"ready": False}, {"phase": "Failed"}, ..."""
        return self.http("POST", "%s/_emulator/kubelet/pods/%s/%s" % (self.kube_url, ns, name), change)

    def node_ready(self, node, status):
        """Sets a node's Ready condition ("True", "False", "Unknown"); its pods follow."""
        return self.http("POST", "%s/_emulator/kubelet/nodes/%s" % (self.kube_url, node), {"ready": status})

    def pod_ready(self, name, ns):
        obj = self.get("pod", name, ns) or {}
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in obj.get("status", {}).get("conditions", []))

    def create_ready_pods(self, ns, names, labels=None, node=None):
        """Creates pods (on `node`, else wherever the scheduler puts them) and waits until the
        simulated kubelet reports them Ready."""
        objects = [pod(n, ns, labels) for n in names]
        if node:
            for obj in objects:
                obj["spec"]["nodeName"] = node
        self.apply(*objects)
        for n in names:
            wait_for(lambda n=n: self.pod_ready(n, ns), 20, "pod %s/%s to be Ready" % (ns, n))


def pod(name, namespace, labels=None):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "worker"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def lease(name, namespace, lock, pod_name=None, selector=None, **spec):
    """A claim on `lock`, a lock name, or a list of names for a lock set (spec.lockNames)."""
    holder = {"podName": pod_name} if pod_name else {"podSelector": {"matchLabels": selector}}
    body = {"lockNames" if isinstance(lock, list) else "lockName": lock, "holder": holder}
    body.update(spec)
    return {"apiVersion": "eslease.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


def condition(obj, kind):
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c.get("type") == kind:
            return c
    return None
