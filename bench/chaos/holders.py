"""The workloads of a chaos run: real `eslease run` processes holding locks while a command
(critical_section.py) works under them.

- A pod holder is the container of one claimant pod: `eslease run LOCK [LOCK...] --pod POD
  [--capacity N] [--exclusive] -- CMD` in Kubernetes mode (a plain lock, a semaphore, a reader
  or writer, or a lock set), with POD_NAME/POD_UID as the downward API would set them and
  its own kubeconfig pointing at its route through the API proxy (so it can be cut off
  alone). It runs while its pod runs and is started again after it exits, as a kubelet
  restarts a container.
- A direct holder is a process outside Kubernetes: `eslease --es URL run LOCK [LOCK...]
  [--capacity N] [--exclusive] -- CMD` on locks of the same index: a plain lock, a semaphore's
  slot, a reader or writer of a read-write lock, or a lock set.
- Some holders run with their clock skewed (Debian's libfaketime preloaded into the tool,
  monotonic time left true); their command runs on the true clock, so every journal reads
  one clock.
- A holder can be paused (SIGSTOP of the tool's and the command's process groups, SIGCONT
  later) and stopped as a kubelet stops a container (SIGTERM, SIGKILL after a grace); the
  chaos removes a pod only once its containers are stopped.
"""

import glob
import json
import os
import signal
import subprocess
import time

import yaml

from convergence import default_lease_name

HERE = os.path.dirname(os.path.abspath(__file__))
CRITICAL_SECTION = os.path.join(HERE, "critical_section.py")


def libfaketime():
    """Debian's multi-threaded libfaketime (package faketime). It is preloaded into the tool
    itself: the `faketime` wrapper would stay the tool's parent, between it and its signals."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:
        raise SystemExit("libfaketime is missing: install Debian's faketime (scripts/install-deps.sh)")
    return found[0]


class Timings:
    """The tool's timings every holder runs with (seconds)."""

    def __init__(self, ttl, grace, liveness_grace, es_timeout):
        self.ttl = ttl
        self.grace = grace
        self.liveness_grace = liveness_grace
        self.es_timeout = es_timeout
        self.margin = min(2.0, ttl / 5.0)  # the tool's default --safety-margin


class Holder:
    """One holder: its configuration, its current process and its history."""

    def __init__(self, name, mode, lock, skew=0.0, pod=None, priority="Foreground", shape=None):
        self.name = name  # "<namespace>/<pod>" or "direct/<holder>"
        self.mode = mode  # "kubernetes" or "direct"
        self.lock = lock
        # Its claim's shape: (lock names, capacity, shared); None: `lock` alone, plain.
        self.shape = shape
        self.skew = skew
        self.pod = pod
        self.priority = priority
        self.proc = None
        self.pod_uid = None  # the pod incarnation the process belongs to
        self.next_start = 0.0
        self.paused_since = None
        self.pauses = []  # [began, ended]
        self.kills = []  # when each SIGKILL had left no process of it alive (wall clock)
        self.exits = {}  # exit code -> count
        self.log_offset = 0  # where the current run's output starts in the holder's log
        self.started = 0.0  # when the current run started (wall clock)
        self.stopping = False  # asked to stop (SIGTERM): not started again until killed
        self.failures = 0  # runs in a row that failed (exit 1)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def claim(self):
        """(lock names, capacity, shared) of the holder's claim."""
        return self.shape or ([self.lock], 1, False)

    def lease_name(self):
        """The Lease a pod holder's tool names its claim by."""
        return default_lease_name(self.claim()[0], self.pod)

    def shape_flags(self):
        """The tool's flags for the capacity and access of its claim."""
        _, capacity, shared = self.claim()
        return ["--capacity", str(capacity), "--exclusive" if not shared else "--shared"] if capacity > 1 else []


def _session(sid):
    """Every live process of the session the tool leads (it was started in a session of its
    own). Its command runs in a process group of its own but stays in the session, also once
    the tool is gone, so this finds a command forked a moment before the tool was signalled."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry))
    return members


def kubeconfig_through(env, port, name):
    """A copy of the environment's kubeconfig whose server is the API proxy's route on `port`
    (ApiProxy.add_route), written beside the run's logs as kubeconfig-NAME; returns its path."""
    with open(env.kubeconfig) as f:
        config = yaml.safe_load(f)
    for cluster in config.get("clusters", []):
        cluster["cluster"]["server"] = "http://127.0.0.1:%d" % port
    path = os.path.join(env.dir, "kubeconfig-%s" % name)
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


def signal_session(sid, sig):
    """Sends `sig` to every process of the session until a pass finds none it has not
    signalled (a process forked meanwhile is signalled in the next pass)."""
    done = set()
    while True:
        todo = [pid for pid in _session(sid) if pid not in done]
        if not todo:
            return done
        for pid in todo:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            done.add(pid)


class Holders:
    def __init__(self, env, proxy, rng, timings, namespace, protected_index, journal_dir):
        self.env = env
        self.proxy = proxy
        self.rng = rng
        self.timings = timings
        self.ns = namespace
        self.protected_index = protected_index
        self.journal_dir = journal_dir
        os.makedirs(journal_dir, exist_ok=True)
        self.holders = {}  # name -> Holder
        self.runs_started = 0
        # Pod holders whose last run found their pod's claim already there (a run killed
        # before it could delete it) and exited: the claim waits to be cleaned up.
        self.left_behind = []
        # Once the chaos is over, every command works until it is stopped, so the locks
        # settle instead of changing hands whenever a command finishes.
        self.work_until_stopped = False
        self._kubeconfigs = {}

    # --- the cast ------------------------------------------------------------------------
    def add(self, holder):
        self.holders[holder.name] = holder
        if holder.mode == "kubernetes":
            port = self.proxy.add_route(holder.name)
            self._kubeconfigs[holder.name] = kubeconfig_through(self.env, port, holder.pod)
        return holder

    def journal_paths(self):
        return [os.path.join(self.journal_dir, f) for f in sorted(os.listdir(self.journal_dir))]

    def _journal(self, holder):
        return os.path.join(self.journal_dir, holder.name.replace("/", "_") + ".jsonl")

    def in_critical_section(self, holder):
        """Whether the holder's command is in its critical section now: it runs, and the last
        record of its journal is not a stop."""
        if not holder.running():
            return False
        try:
            with open(self._journal(holder), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return False
        for line in reversed(lines):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            return record["event"] != "stop" and record["t"] >= holder.started
        return False

    def by_pod(self, pod):
        return next((h for h in self.holders.values() if h.pod == pod), None)

    # --- processes -----------------------------------------------------------------------
    def tick(self, pods, powered_off=()):
        """Starts every holder that should run and does not: a pod holder while its pod is
        Running (pods: name -> object) on a node that is not powered off, a direct holder
        always."""
        now = time.monotonic()
        for holder in self.holders.values():
            if holder.proc is not None and holder.proc.poll() is not None:
                self._exited(holder, now)
            if holder.stopping:
                continue
            if holder.mode == "direct":
                if not holder.running() and now >= holder.next_start:
                    self._start(holder, None)
                continue
            pod = pods.get(holder.pod)
            uid = (pod or {}).get("metadata", {}).get("uid")
            off = (pod or {}).get("spec", {}).get("nodeName") in powered_off
            if holder.running() and (uid != holder.pod_uid or off):
                self.kill(holder)  # a container never outlives its pod, nor its node's power
            status = (pod or {}).get("status") or {}
            runs = pod and status.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp") and not off
            if runs and not holder.running() and now >= holder.next_start:
                self._start(holder, uid)

    def _exited(self, holder, now):
        code = holder.proc.returncode
        holder.exits[code] = holder.exits.get(code, 0) + 1
        holder.proc = None
        if code == 1 and "already exists" in self._run_output(holder):
            self.left_behind.append(holder)
        self._close_pause(holder)
        # A kubelet restarts a container after a back-off that doubles while it keeps failing
        # (CrashLoopBackOff, here from 0.5 s up to 8 s); a direct process likewise. A shaped
        # claimant rests longer between runs, so writers and sets find their locks free at times.
        holder.failures = holder.failures + 1 if code == 1 else 0
        rest = (1.0, 3.0) if holder.shape else (0.2, 1.0)
        holder.next_start = now + (min(8.0, 0.5 * 2 ** (holder.failures - 1)) if holder.failures
                                   else self.rng.uniform(*rest))

    def _start(self, holder, pod_uid):
        t = self.timings
        # Commands that finish by themselves release their lock through the tool: a hand-over
        # at once. A holder skewed beyond the margin works long, so a partition finds it at work.
        if self.work_until_stopped:
            work_seconds = 86400.0
        elif holder.skew < -t.margin:
            work_seconds = self.rng.uniform(10.0, 20.0)
        else:
            mean = 2.5 if holder.shape else 4.0
            work_seconds = min(12.0, max(0.5, self.rng.expovariate(1 / mean)))
        journal = self._journal(holder)
        command = ["/usr/bin/env", "-u", "LD_PRELOAD", "-u", "FAKETIME", "/usr/bin/python3", CRITICAL_SECTION,
                   journal, self.env.es_url, self.protected_index, holder.name, "%.2f" % work_seconds]
        eslease = os.path.join(self.env.bin, "eslease")
        timing_flags = ["--ttl", "%ds" % t.ttl, "--grace", "%dms" % (t.grace * 1000)]
        env = dict(os.environ)
        if holder.mode == "kubernetes":
            argv = [eslease, "run"] + list(holder.claim()[0]) + ["--pod", holder.pod, "-n", self.ns,
                    "--kubeconfig", self._kubeconfigs[holder.name], "--priority", holder.priority,
                    "--liveness-grace", "%ds" % t.liveness_grace] + timing_flags + holder.shape_flags()
            env.update(POD_NAME=holder.pod, POD_NAMESPACE=self.ns, POD_UID=pod_uid)
        else:
            argv = [eslease, "--es", self.env.es_url, "--es-timeout", "%dms" % (t.es_timeout * 1000), "run"]
            argv += list(holder.claim()[0]) + ["--namespace", "direct", "--holder", holder.name.split("/", 1)[1],
                                               "--wait", "1h"] + timing_flags + holder.shape_flags()
        if holder.skew:
            env.update(LD_PRELOAD=libfaketime(), FAKETIME="%+.3f" % holder.skew, FAKETIME_DONT_FAKE_MONOTONIC="1")
            # A tool built with AddressSanitizer refuses a library preloaded ahead of its
            # runtime; libfaketime only wraps the clock calls, so let it through.
            asan = env.get("ASAN_OPTIONS", "")
            env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        log = open(self._log_path(holder), "ab")
        holder.log_offset = log.tell()
        holder.proc = subprocess.Popen(argv + ["--"] + command, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                       env=env, start_new_session=True)
        log.close()
        holder.pod_uid = pod_uid
        holder.started = time.time()
        self.runs_started += 1

    def _log_path(self, holder):
        return os.path.join(self.env.dir, "holder-%s.log" % holder.name.replace("/", "_"))

    def _run_output(self, holder):
        """What the holder's last run wrote (the log holds every run)."""
        with open(self._log_path(holder), "rb") as f:
            f.seek(holder.log_offset)
            return f.read().decode("utf-8", "replace")

    # --- pauses --------------------------------------------------------------------------
    def pause(self, holder):
        if holder.paused_since is not None or not holder.running():
            return False
        signal_session(holder.proc.pid, signal.SIGSTOP)
        holder.paused_since = time.time()
        return True

    def resume(self, holder):
        if holder.paused_since is None:
            return
        self._close_pause(holder)
        if holder.running():
            signal_session(holder.proc.pid, signal.SIGCONT)

    def _close_pause(self, holder):
        if holder.paused_since is not None:
            holder.pauses.append((holder.paused_since, time.time()))
            holder.paused_since = None

    def kills(self):
        """holder name -> [when a SIGKILL of it had left no process alive]."""
        return {h.name: list(h.kills) for h in self.holders.values()}

    def pauses(self):
        """holder name -> [(began, ended)], a pause still on ending now."""
        now = time.time()
        return {h.name: h.pauses + ([(h.paused_since, now)] if h.paused_since is not None else [])
                for h in self.holders.values()}

    # --- stopping ------------------------------------------------------------------------
    def terminate(self, holder):
        """Asks the tool to stop, as a kubelet does first (SIGTERM: it stops its command and
        lets go of its lock); `kill` ends what is left after the grace. A paused tool only
        gets it once continued, as with a kubelet. The holder is not started again meanwhile."""
        holder.stopping = True
        if holder.running() and holder.paused_since is None:
            try:
                os.kill(holder.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def kill(self, holder):
        """SIGKILL of the tool and its command; returns once neither can act any more."""
        holder.stopping = False
        if holder.proc is None:
            return
        deadline = time.monotonic() + 10
        while signal_session(holder.proc.pid, signal.SIGKILL) and time.monotonic() < deadline:
            time.sleep(0.01)  # until no process of the session is left alive
        holder.proc.wait(timeout=30)
        holder.kills.append(time.time())
        self._exited(holder, time.monotonic())

    def stop_all(self):
        for holder in self.holders.values():
            self.resume(holder)
        for holder in self.holders.values():
            self.kill(holder)
