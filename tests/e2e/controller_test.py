"""End-to-end: eslease-controller with the Elasticsearch and Kubernetes emulators as separate
processes on loopback, checked the way a user checks it: kubectl, the Lease status, pod
annotations, the lock document and /metrics."""

import json
import os
import random
import re
import subprocess
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_env import (Environment, ShowsLogsOnFailure, ValidityRecorder, WithOneController,  # noqa: E402
                            condition, lease, namespace, pod, wait_for)
from validity import parse_time  # noqa: E402

BIN = None
SOURCE = None
TIMEOUT = 20


class ControllerEndToEnd(WithOneController, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_controller(BIN, SOURCE)

    # --- helpers -------------------------------------------------------------------------
    def setUp(self):
        self.ns = ("t-" + self.id().split(".")[-1].lower().replace("_", "-")[:50]).rstrip("-")
        self.env.apply(namespace(self.ns))

    def status(self, name):
        obj = self.env.get("esl", name, self.ns)
        return (obj or {}).get("status", {})

    def wait_phase(self, name, phase, timeout=TIMEOUT):
        return wait_for(lambda: self.status(name) if self.status(name).get("phase") == phase else None, timeout,
                        "Lease %s to be %s (now %s)" % (name, phase, self.status(name)))

    def create_pods(self, *names, labels=None):
        self.env.create_ready_pods(self.ns, names, labels)

    def document(self, lock):
        doc_id = (self.ns + "/" + lock).replace("/", "%2F")
        try:
            return self.env.es("GET", "/eslease-locks/_doc/" + doc_id)
        except Exception:
            return None

    def annotation(self, pod_name):
        obj = self.env.get("pod", pod_name, self.ns) or {}
        return obj.get("metadata", {}).get("annotations", {}).get("eslease.io/holds")

    # --- tests ---------------------------------------------------------------------------
    def test_the_start_up_check_names_the_engine_and_its_version(self):
        found = wait_for(lambda: re.search(r"connected to Elasticsearch engine=(\S+) version=(\S+)",
                                           self.controller.text()), TIMEOUT, "the start-up check's log line")
        es = self.env.elasticsearch
        self.assertEqual(found.group(1), "opensearch" if es.backend == "opensearch" else "elasticsearch")
        self.assertEqual(found.group(2), es.version or "8.11.1")

    def test_grant_writes_document_status_and_annotation(self):
        self.create_pods("worker-a")
        self.env.apply(lease("claim-a", self.ns, "report", "worker-a"))
        status = self.wait_phase("claim-a", "Held")
        self.assertEqual(status["holder"]["podName"], "worker-a")
        token = status["fencingToken"]
        self.assertTrue(int(token) > 0)
        self.assertIn("acquireTime", status)
        for field in ("renewTime", "expireTime"):
            self.assertNotIn(field, status, "renewals do not write the Lease")
        session = wait_for(lambda: self.env.get("leases.coordination.k8s.io", "eslease-session", self.ns),
                           TIMEOUT, "the namespace's session")
        self.assertTrue(session["spec"].get("renewTime"))
        self.assertEqual(condition({"status": status}, "Held")["status"], "True")
        doc = self.document("report")
        self.assertTrue(doc["found"])
        self.assertEqual(doc["_source"]["lease"], self.ns + "/claim-a")
        wait_for(lambda: self.annotation("worker-a") == "claim-a=" + token, TIMEOUT, "the holds annotation")
        obj = self.env.get("esl", "claim-a", self.ns)
        self.assertIn("eslease.io/release", obj["metadata"].get("finalizers", []))

    def test_status_and_annotation_written_by_someone_else_are_put_right(self):
        # Another writer (a second replica that also believes it leads, a hand edit) is
        # corrected from the lock document, the single source of truth.
        self.create_pods("worker-a", "worker-b")
        self.env.apply(lease("claim-a", self.ns, "report", "worker-a"), lease("claim-b", self.ns, "report", "worker-b"))
        token = self.wait_phase("claim-a", "Held")["fencingToken"]
        self.wait_phase("claim-b", "Pending")
        wait_for(lambda: self.annotation("worker-a") == "claim-a=" + token, TIMEOUT, "the holds annotation")
        self.env.kubectl("patch", "esl", "claim-a", "-n", self.ns, "--subresource=status", "--type=merge",
                         "-p", '{"status": {"phase": "Pending", "fencingToken": "1"}}')
        self.env.kubectl("patch", "esl", "claim-b", "-n", self.ns, "--subresource=status", "--type=merge",
                         "-p", '{"status": {"phase": "Held", "fencingToken": "999999999999"}}')
        self.env.kubectl("annotate", "pod", "worker-a", "-n", self.ns, "--overwrite", "eslease.io/holds=claim-a=1")
        # A pod the controller never saw holding anything (as after a leader change): its
        # entries are checked too, and one naming a Lease that does not exist goes.
        self.env.kubectl("annotate", "pod", "worker-b", "-n", self.ns, "--overwrite",
                         "eslease.io/holds=claim-b=999999999999,ghost=3,garbage")
        restored = self.wait_phase("claim-a", "Held")
        self.assertEqual(restored["fencingToken"], token)
        self.assertNotIn("fencingToken", self.wait_phase("claim-b", "Pending"))
        wait_for(lambda: self.annotation("worker-a") == "claim-a=" + token, TIMEOUT, "the annotation put right")
        wait_for(lambda: self.annotation("worker-b") is None, TIMEOUT, "the waiting pod's annotation removed")

    def test_contention_orders_foreground_first_then_first_come(self):
        self.create_pods("h", "bg", "fg1", "fg2")
        self.env.apply(lease("holder", self.ns, "lock", "h"))
        self.wait_phase("holder", "Held")
        self.env.apply(lease("background", self.ns, "lock", "bg", priority="Background"))
        self.wait_phase("background", "Pending")
        self.env.apply(lease("foreground-1", self.ns, "lock", "fg1"))
        self.wait_phase("foreground-1", "Pending")
        self.env.apply(lease("foreground-2", self.ns, "lock", "fg2"))
        wait_for(lambda: [self.status(n).get("queuePosition") for n in ("foreground-1", "foreground-2", "background")]
                 == [0, 1, 2], TIMEOUT, "queue positions 0, 1, 2")
        printed = self.env.kubectl("get", "esl", "-n", self.ns).stdout
        self.assertIn("Held", printed)
        self.assertIn("Pending", printed)
        self.env.kubectl("delete", "pod", "h", "-n", self.ns, "--grace-period=0", "--force")
        status = self.wait_phase("foreground-1", "Held")
        self.assertEqual(status["lastTakeover"]["reason"], "PodDeleted")
        self.assertEqual(status["lastTakeover"]["fromPod"], "h")

    def test_takeover_for_each_confirmed_death(self):
        cases = [("deleted", "PodDeleted"), ("failed", "PodFailed"), ("succeeded", "PodSucceeded")]
        for suffix, reason in cases:
            holder, waiter, lock = "holder-" + suffix, "waiter-" + suffix, "lock-" + suffix
            self.create_pods(holder, waiter)
            self.env.apply(lease(holder, self.ns, lock, holder))
            first = self.wait_phase(holder, "Held")
            self.env.apply(lease(waiter, self.ns, lock, waiter))
            self.wait_phase(waiter, "Pending")
            if suffix == "deleted":
                self.env.kubectl("delete", "pod", holder, "-n", self.ns, "--grace-period=0", "--force")
            else:
                self.env.kubelet(holder, self.ns, {"phase": suffix.capitalize()})
            taken = self.wait_phase(waiter, "Held")
            self.assertEqual(taken["lastTakeover"]["reason"], reason)
            self.assertGreater(int(taken["fencingToken"]), int(first["fencingToken"]))
            if suffix == "deleted":
                self.wait_phase(holder, "Pending")
            else:
                self.wait_phase(holder, "Released")

    def test_replaced_pod_is_taken_over(self):
        self.create_pods("worker")
        self.env.apply(lease("claim", self.ns, "replaced", "worker"))
        first = self.wait_phase("claim", "Held")
        self.env.kubectl("delete", "pod", "worker", "-n", self.ns, "--grace-period=0", "--force")
        self.create_pods("worker")  # a new pod, same name, new UID
        second = wait_for(lambda: self.status("claim") if self.status("claim").get("phase") == "Held" and
                          self.status("claim").get("fencingToken") != first["fencingToken"] else None,
                          TIMEOUT, "a new grant to the new pod")
        self.assertNotEqual(second["holder"]["podUID"], first["holder"]["podUID"])

    def test_not_ready_holder_is_handed_over_only_after_its_expiry(self):
        self.create_pods("slow", "next")
        recorder = ValidityRecorder(self.env.kube_url, self.ns)
        self.addCleanup(recorder.close)
        self.env.apply(lease("slow", self.ns, "nr", "slow", leaseDurationSeconds=3, livenessGraceSeconds=1))
        held = self.wait_phase("slow", "Held")
        self.env.apply(lease("next", self.ns, "nr", "next"))
        self.wait_phase("next", "Pending")
        self.env.kubelet("slow", self.ns, {"ready": False})
        revoked = self.wait_phase("slow", "Pending", timeout=10)
        self.assertEqual(condition({"status": revoked}, "Held")["reason"], "PodNotReady")
        self.assertIsNone(self.annotation("slow"))
        taken = self.wait_phase("next", "Held", timeout=15)
        self.assertEqual(taken["lastTakeover"]["reason"], "PodNotReady")
        # The successor's grant starts no earlier than the validity last published to the holder.
        shown = recorder.published_until("slow", held["fencingToken"])
        self.assertIsNotNone(shown)
        self.assertGreaterEqual(parse_time(taken["acquireTime"]), shown)

    def test_holder_on_an_unreachable_node_is_handed_over_only_after_its_expiry(self):
        # The node's kubelet stops reporting: its pods may still run, so they are presumed
        # dead, not confirmed dead.
        self.env.create_ready_pods(self.ns, ["far"], node="node-1")
        self.env.create_ready_pods(self.ns, ["near"], node="node-2")
        recorder = ValidityRecorder(self.env.kube_url, self.ns)
        self.addCleanup(recorder.close)
        self.env.apply(lease("far", self.ns, "partition", "far", leaseDurationSeconds=3, livenessGraceSeconds=1))
        held = self.wait_phase("far", "Held")
        self.env.apply(lease("near", self.ns, "partition", "near"))
        self.wait_phase("near", "Pending")
        self.env.node_ready("node-1", "Unknown")
        try:
            taken = self.wait_phase("near", "Held", timeout=15)
            self.assertEqual(taken["lastTakeover"]["reason"], "PodNotReady")
            self.assertEqual(taken["lastTakeover"]["fromPod"], "far")
            shown = recorder.published_until("far", held["fencingToken"])
            self.assertIsNotNone(shown)
            self.assertGreaterEqual(parse_time(taken["acquireTime"]), shown)
            self.assertGreater(int(taken["fencingToken"]), int(held["fencingToken"]))
        finally:
            self.env.node_ready("node-1", "True")

    def test_terminating_holder_keeps_the_lock_until_its_pod_is_gone(self):
        self.create_pods("w")
        holder = pod("h", self.ns)
        holder["spec"]["terminationGracePeriodSeconds"] = 200  # 2 s with the emulator's scaled grace
        self.env.apply(holder)
        wait_for(lambda: self.env.pod_ready("h", self.ns), TIMEOUT, "pod h to be Ready")
        self.env.apply(lease("h", self.ns, "graceful", "h"))
        first = self.wait_phase("h", "Held")
        self.env.apply(lease("w", self.ns, "graceful", "w"))
        self.wait_phase("w", "Pending")
        self.env.kubectl("delete", "pod", "h", "-n", self.ns, "--wait=false")
        terminating = wait_for(lambda: (self.env.get("pod", "h", self.ns) or {}).get("metadata", {})
                               .get("deletionTimestamp"), TIMEOUT, "pod h to be Terminating")
        self.assertTrue(terminating)
        # While the pod object exists its containers may still be working under the lock.
        # The phases are read before the pod: if it still exists afterwards, it existed when
        # they were read.
        while True:
            phases = (self.status("h").get("phase"), self.status("w").get("phase"))
            if self.env.get("pod", "h", self.ns) is None:
                break
            self.assertEqual(phases, ("Held", "Pending"))
            time.sleep(0.1)
        taken = self.wait_phase("w", "Held")
        self.assertEqual(taken["lastTakeover"]["reason"], "PodDeleted")
        self.assertGreater(int(taken["fencingToken"]), int(first["fencingToken"]))

    def test_election_fails_over_to_another_matching_pod(self):
        self.create_pods("r-0", "r-1", labels={"app": "reporter"})
        self.env.apply(lease("leader", self.ns, "election", selector={"app": "reporter"}))
        first = self.wait_phase("leader", "Held")
        holder = first["holder"]["podName"]
        self.env.kubectl("delete", "pod", holder, "-n", self.ns, "--grace-period=0", "--force")
        second = wait_for(lambda: self.status("leader") if self.status("leader").get("holder", {}).get("podName")
                          not in (None, holder) else None, TIMEOUT, "another pod to lead")
        self.assertEqual(second["phase"], "Held")
        self.assertEqual(second["lastTakeover"]["reason"], "PodDeleted")
        self.assertGreater(int(second["fencingToken"]), int(first["fencingToken"]))

    def test_capacity_alone_admits_that_many_holders(self):
        self.create_pods("s-0", "s-1", "s-2", "s-3")
        for i in range(4):
            self.env.apply(lease("slot-%d" % i, self.ns, "pool", "s-%d" % i, capacity=3))
            self.wait_phase("slot-%d" % i, "Held" if i < 3 else "Pending")
        self.assertEqual(self.env.get("esl", "slot-0", self.ns)["spec"]["access"], "Shared", "the CRD's default")
        self.assertEqual(sorted(self.status("slot-%d" % i)["slot"] for i in range(3)), [0, 1, 2])

    def test_a_writer_patched_to_a_reader_keeps_the_lock_and_shares_it_only_after_its_validity(self):
        # A writer holding both slots is patched to Shared: it is granted again at once, with a
        # larger token, and the reader that waited is not let in while the writer's old grant
        # may still be acted on (30 s of validity: it waits at least that long).
        self.create_pods("writer", "reader")
        self.env.apply(lease("writer", self.ns, "rw", "writer", capacity=2, access="Exclusive",
                             leaseDurationSeconds=30))
        first = self.wait_phase("writer", "Held")
        self.env.apply(lease("reader", self.ns, "rw", "reader", capacity=2))
        self.wait_phase("reader", "Pending")
        self.env.kubectl("patch", "esl", "writer", "-n", self.ns, "--type=merge", "-p",
                         json.dumps({"spec": {"access": "Shared"}}))
        again = wait_for(lambda: self.status("writer") if self.status("writer").get("fencingToken")
                         not in (None, first["fencingToken"]) else None, TIMEOUT, "the writer to be granted again")
        self.assertEqual(again["phase"], "Held")
        self.assertGreater(int(again["fencingToken"]), int(first["fencingToken"]))
        self.assertEqual(again["holder"]["podName"], "writer")
        self.assertEqual(self.status("reader")["phase"], "Pending")
        granted = parse_time(condition(self.env.get("esl", "writer", self.ns), "Held")["lastTransitionTime"])
        self.assertLessEqual(granted, parse_time(first["acquireTime"]) + 1,
                             "the writer never stopped holding (its Held condition did not change)")

    def test_election_fails_over_on_a_semaphore_and_a_set_before_a_waiting_claim(self):
        # Each election claim shares its locks with a claim that waits: when the leader's pod
        # dies, the election passes to another of its pods before the waiting claim is served.
        self.create_pods("r-0", "r-1", labels={"app": "reporter"})
        self.create_pods("q-0", "q-1", labels={"app": "sets"})
        self.create_pods("other", "waiting", "set-waiting")
        self.env.apply(lease("other", self.ns, "sem", "other", capacity=2))
        self.wait_phase("other", "Held")
        self.env.apply(lease("leader", self.ns, "sem", selector={"app": "reporter"}, capacity=2),
                       lease("set-leader", self.ns, ["a", "b"], selector={"app": "sets"}))
        leaders = {name: self.wait_phase(name, "Held") for name in ("leader", "set-leader")}
        self.env.apply(lease("waiting", self.ns, "sem", "waiting", capacity=2),
                       lease("set-waiting", self.ns, "b", "set-waiting"))
        for name in ("waiting", "set-waiting"):
            self.wait_phase(name, "Pending")
        for name, first in leaders.items():
            holder = first["holder"]["podName"]
            self.env.kubectl("delete", "pod", holder, "-n", self.ns, "--grace-period=0", "--force")
            second = wait_for(lambda: self.status(name) if self.status(name).get("holder", {}).get("podName")
                              not in (None, holder) else None, TIMEOUT, "another pod to lead %s" % name)
            self.assertEqual(second["phase"], "Held")
            self.assertEqual(second["lastTakeover"]["reason"], "PodDeleted")
            self.assertGreater(int(second["fencingToken"]), int(first["fencingToken"]))
        for name in ("waiting", "set-waiting", "other"):
            self.assertEqual(self.status(name)["phase"], "Held" if name == "other" else "Pending", name)

    def test_sets_of_3_of_6_locks_are_all_served_as_each_holder_dies(self):
        # Ten claims, each on 3 random locks of 6; the pod of each claim seen Held is deleted in
        # turn. Every claim is served, and no two claims whose pods both exist ever show Held
        # on one lock. (A dead holder's Lease may still show Held for the moment between its
        # successor's status write and its own.)
        rng = random.Random(33)
        for run in range(3):
            claims = {"set-%d-%d" % (run, i): rng.sample(["k%d" % k for k in range(6)], 3) for i in range(10)}
            pod_of = {name: "p-" + name[len("set-"):] for name in claims}
            self.create_pods(*pod_of.values())
            self.env.apply(*[lease(name, self.ns, ["%d-%s" % (run, k) for k in locks], pod_of[name])
                             for name, locks in claims.items()])
            leases = self.env.kube_url + "/apis/eslease.io/v1alpha1/namespaces/%s/leases" % self.ns
            pods = self.env.kube_url + "/api/v1/namespaces/%s/pods" % self.ns
            served = set()

            def serve():
                held = [i["metadata"]["name"] for i in self.env.http("GET", leases)["items"]
                        if i["metadata"]["name"] in claims and i.get("status", {}).get("phase") == "Held"]
                live = {p["metadata"]["name"] for p in self.env.http("GET", pods)["items"]}
                for a in held:
                    for b in held:
                        if a < b and set(claims[a]) & set(claims[b]) and {pod_of[a], pod_of[b]} <= live:
                            self.fail("%s and %s hold a lock of %s at once" % (a, b, claims[a]))
                for name in set(held) - served:
                    served.add(name)
                    self.env.kubectl("delete", "pod", pod_of[name], "-n", self.ns, "--grace-period=0", "--force")
                return len(served) == len(claims)
            wait_for(serve, TIMEOUT, "every set to be served in run %d" % run)

    def test_acquire_timeout(self):
        self.create_pods("h", "w")
        self.env.apply(lease("h", self.ns, "to", "h"))
        self.wait_phase("h", "Held")
        self.env.apply(lease("w", self.ns, "to", "w", acquireTimeoutSeconds=1))
        status = self.wait_phase("w", "TimedOut", timeout=10)
        self.assertEqual(condition({"status": status}, "Held")["reason"], "TimedOut")
        events = self.env.kubectl("get", "events", "-n", self.ns, "-o", "json").stdout
        self.assertIn("TimedOut", events)

    def test_a_lease_released_by_its_holder_is_handed_over_at_once(self):
        self.create_pods("h", "w")
        self.env.apply(lease("h", self.ns, "del", "h"))
        held = self.wait_phase("h", "Held")
        self.env.apply(lease("w", self.ns, "del", "w"))
        self.wait_phase("w", "Pending")
        # What `eslease release` and the end of `eslease run` do: say which grant is let go,
        # then delete. The default lease duration is 60 s; the hand-over does not wait for it.
        self.env.kubectl("annotate", "esl", "h", "-n", self.ns, "eslease.io/released=" + held["fencingToken"])
        self.env.kubectl("delete", "esl", "h", "-n", self.ns, "--wait=true", "--timeout=20s")
        self.wait_phase("w", "Held", timeout=10)
        self.assertIsNone(self.env.get("esl", "h", self.ns))
        wait_for(lambda: self.annotation("h") is None, TIMEOUT, "the annotation to go")

    def test_a_lease_deleted_by_someone_else_is_handed_over_after_its_validity(self):
        # kubectl delete may come from an operator while the holder still works: a revocation.
        self.create_pods("h", "w")
        recorder = ValidityRecorder(self.env.kube_url, self.ns)
        self.addCleanup(recorder.close)
        self.env.apply(lease("h", self.ns, "del", "h", leaseDurationSeconds=3))
        held = self.wait_phase("h", "Held")
        self.env.apply(lease("w", self.ns, "del", "w"))
        self.wait_phase("w", "Pending")
        self.env.kubectl("delete", "esl", "h", "-n", self.ns, "--wait=false")
        taken = self.wait_phase("w", "Held", timeout=15)
        shown = recorder.published_until("h", held["fencingToken"])
        self.assertIsNotNone(shown)
        self.assertGreaterEqual(parse_time(taken["acquireTime"]), shown)
        wait_for(lambda: self.env.get("esl", "h", self.ns) is None, TIMEOUT, "the deleted Lease to go")
        wait_for(lambda: self.annotation("h") is None, TIMEOUT, "the annotation to go")

    def test_a_lease_deleted_before_its_finalizer_still_frees_its_pod(self):
        # Every Lease patch fails, so the grant reaches Elasticsearch and the pod's annotation
        # but neither the finalizer nor the status: deleting the Lease removes it at once.
        self.create_pods("h", "w")
        with self.env.faults(self.env.kube_url,
                             {"verb": "patch", "resource": "leases.eslease.io", "status": 500, "count": -1}):
            self.env.apply(lease("h", self.ns, "early", "h", leaseDurationSeconds=3))
            wait_for(lambda: self.annotation("h"), TIMEOUT, "pod h to be annotated as the holder")
            self.env.kubectl("delete", "esl", "h", "-n", self.ns, "--wait=true", "--timeout=20s")
            wait_for(lambda: self.document("early") is None, TIMEOUT, "the lock to be released")
            wait_for(lambda: self.annotation("h") is None, TIMEOUT, "pod h's annotation to go")
        self.env.apply(lease("w", self.ns, "early", "w"))
        status = self.wait_phase("w", "Held")
        self.assertEqual(self.annotation("w"), "w=" + status["fencingToken"])

    def test_direct_mode_holder_is_respected_until_expiry(self):
        self.create_pods("w")
        direct = subprocess.run([os.path.join(BIN, "eslease"), "--es", self.env.es_url, "acquire", "direct",
                                 "--namespace", self.ns, "--holder", "cron-host", "--ttl", "3s"],
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(direct.returncode, 0, direct.stderr)
        started = time.monotonic()
        self.env.apply(lease("w", self.ns, "direct", "w"))
        self.wait_phase("w", "Pending")
        status = self.wait_phase("w", "Held", timeout=15)
        self.assertGreaterEqual(time.monotonic() - started, 2.5)
        self.assertEqual(status["lastTakeover"]["reason"], "Expired")
        self.assertEqual(status["lastTakeover"]["fromPod"], "cron-host")

    def test_invalid_claims_and_a_pod_that_never_appears(self):
        self.create_pods("p")
        self.env.apply(lease("first", self.ns, "inv", "p"))
        self.wait_phase("first", "Held")
        self.env.apply(lease("second", self.ns, "inv", "p"))
        status = self.wait_phase("second", "Invalid")
        self.assertIn("first", condition({"status": status}, "Held")["message"])
        self.env.apply(lease("bad-selector", self.ns, "inv2",
                             selector={"-bad": "x"}))
        status = self.wait_phase("bad-selector", "Invalid")
        self.assertEqual(condition({"status": status}, "Held")["reason"], "InvalidClaim")
        self.env.apply(lease("ghost", self.ns, "inv3", "never-created"))
        status = self.wait_phase("ghost", "Pending")
        self.assertIn("never-created", condition({"status": status}, "Held")["message"])

    def test_garbage_lock_document_blocks_grants_with_a_condition(self):
        doc_id = (self.ns + "/garbage").replace("/", "%2F")
        # The strict mapping refuses unknown fields, so the garbage is a document of the
        # right fields with nonsense in them.
        self.env.es("PUT", "/eslease-locks/_doc/" + doc_id, {"lock": "elsewhere", "holder": ""})
        self.create_pods("g")
        self.env.apply(lease("g", self.ns, "garbage", "g"))
        status = wait_for(lambda: self.status("g") if (condition({"status": self.status("g")}, "Held") or {}).get(
            "reason") == "MalformedLockDocument" else None, TIMEOUT, "a MalformedLockDocument condition")
        self.assertEqual(status["phase"], "Pending")
        self.assertEqual(self.controller.proc.poll(), None)

    def test_metrics_pass_promtool(self):
        if not os.path.exists("/usr/bin/promtool"):
            self.skipTest("promtool is not installed")
        text = self.env.metrics(self.controller)
        for name in ("eslease_grants_total", "eslease_takeovers_total", "eslease_claims", "eslease_leader",
                     "eslease_backend_request_duration_seconds", "eslease_kube_request_duration_seconds",
                     "eslease_reconcile_total", "eslease_workqueue_depth", "eslease_build_info"):
            self.assertIn(name, text)
        check = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


class ControllerResilience(ShowsLogsOnFailure, unittest.TestCase):
    """Faults that need their own emulators and controllers: an Elasticsearch outage, dropped
    and compacted watches, a controller restart, two controllers at once."""

    def setUp(self):
        self.env = Environment(BIN, SOURCE).start()
        self.ns = "resilience"
        self.env.apply(namespace(self.ns))

    def tearDown(self):
        self.env.stop()

    def status(self, name):
        return ((self.env.get("esl", name, self.ns) or {}).get("status", {}))

    def wait_phase(self, name, phase, timeout=TIMEOUT):
        return wait_for(lambda: self.status(name) if self.status(name).get("phase") == phase else None, timeout,
                        "Lease %s to be %s (now %s)" % (name, phase, self.status(name)))

    def grants(self, controller):
        for line in self.env.metrics(controller).splitlines():
            if line.startswith("eslease_grants_total "):
                return float(line.split()[1])
        return 0.0

    def test_elasticsearch_outage_and_recovery(self):
        controller = self.env.start_controller()
        self.env.create_ready_pods(self.ns, ["p"])
        self.env.apply(lease("p", self.ns, "outage", "p", leaseDurationSeconds=3))
        first = self.wait_phase("p", "Held")
        with self.env.faults(self.env.es_url, {"op": "*", "status": 503, "count": -1}):
            lost = wait_for(lambda: self.status("p") if (condition({"status": self.status("p")}, "Held") or {}).get(
                "reason") == "RenewalFailed" else None, 15, "RenewalFailed")
            self.assertEqual(lost["phase"], "Pending")
            self.assertEqual(condition({"status": lost}, "BackendAvailable")["status"], "False")
        again = wait_for(lambda: self.status("p") if self.status("p").get("phase") == "Held" and
                         condition({"status": self.status("p")}, "BackendAvailable")["status"] == "True" else None,
                         30, "the lock granted again after recovery")
        self.assertGreater(int(again["fencingToken"]), int(first["fencingToken"]))
        self.assertIsNone(controller.proc.poll())

    def test_claims_made_while_no_controller_runs_wait_in_the_order_they_were_made(self):
        # A single replica restarting: the claims made meanwhile are listed, not watched, and
        # the list comes in name order. Made in one request each within a second or so, they
        # share their creationTimestamp; their resourceVersions tell their order.
        readers_before, readers_after = ["r-0", "r-1"], ["r-2", "r-3", "r-4", "r-5"]
        self.env.create_ready_pods(self.ns, ["holder", "w-0"] + readers_before + readers_after)
        controller = self.env.start_controller()
        self.env.apply(lease("holder", self.ns, "rw", "holder", capacity=2, access="Exclusive"))
        self.wait_phase("holder", "Held")
        controller.stop()
        claims = [lease(n, self.ns, "rw", n, capacity=2) for n in readers_before]
        claims.append(lease("w-0", self.ns, "rw", "w-0", capacity=2, access="Exclusive"))
        claims += [lease(n, self.ns, "rw", n, capacity=2) for n in readers_after]
        self.env.apply(*claims)
        names = readers_before + ["w-0"] + readers_after

        def positions():
            shown = [self.status(n).get("queuePosition") for n in names]
            return shown if None not in shown else None

        for restart in ("the claims listed", "their recorded order read back"):
            controller = self.env.start_controller()
            shown = wait_for(positions, TIMEOUT, "a queue position on every claim")
            self.assertEqual(shown, list(range(len(names))), "%s: %s" % (restart, dict(zip(names, shown))))
            controller.stop()

    def test_without_the_holds_annotation_no_pod_is_patched(self):
        def pod_patches():
            return self.env.http("GET", self.env.kube_url + "/_emulator/stats")["requests"].get("patch pods", 0)

        self.env.start_controller("--holds-annotation=false")
        self.env.create_ready_pods(self.ns, ["a", "b"])
        before = pod_patches()
        self.env.apply(lease("a", self.ns, "quiet", "a"), lease("b", self.ns, "quiet", "b"))
        self.wait_phase("a", "Held")
        self.wait_phase("b", "Pending")
        self.env.kubectl("delete", "pod", "a", "-n", self.ns, "--grace-period=0", "--force")
        self.assertEqual(self.wait_phase("b", "Held")["lastTakeover"]["reason"], "PodDeleted")
        self.assertEqual(pod_patches(), before)
        pod_b = self.env.get("pod", "b", self.ns)
        self.assertNotIn("eslease.io/holds", pod_b["metadata"].get("annotations", {}))

    def test_watch_drops_and_compaction_lose_nothing(self):
        controller = self.env.start_controller()
        self.env.create_ready_pods(self.ns, ["a", "b"])
        self.env.apply(lease("a", self.ns, "w", "a"))
        self.wait_phase("a", "Held")
        self.env.apply(lease("b", self.ns, "w", "b"))
        self.wait_phase("b", "Pending")
        self.env.http("POST", self.env.kube_url + "/_emulator/compact")
        self.env.http("POST", self.env.kube_url + "/_emulator/watches/drop")
        # A change made while the watches are down is still seen.
        self.env.kubectl("delete", "pod", "a", "-n", self.ns, "--grace-period=0", "--force")
        taken = self.wait_phase("b", "Held")
        self.assertEqual(taken["lastTakeover"]["reason"], "PodDeleted")
        text = self.env.metrics(controller)
        self.assertIn("eslease_watch_restarts_total", text)

    def test_restart_keeps_tokens_and_makes_no_new_grants(self):
        controller = self.env.start_controller(name="first")
        pods = ["h-%d" % i for i in range(5)] + ["w-%d" % i for i in range(5)]
        self.env.create_ready_pods(self.ns, pods)
        self.env.apply(*[lease("h-%d" % i, self.ns, "r-%d" % i, "h-%d" % i) for i in range(5)])
        for i in range(5):
            self.wait_phase("h-%d" % i, "Held")
        self.env.apply(*[lease("w-%d" % i, self.ns, "r-%d" % i, "w-%d" % i) for i in range(5)])
        for i in range(5):
            self.wait_phase("w-%d" % i, "Pending")
        names = ["h-%d" % i for i in range(5)] + ["w-%d" % i for i in range(5)]
        before = {n: self.env.get("esl", n, self.ns) for n in names}
        session_before = wait_for(lambda: self.env.get("leases.coordination.k8s.io", "eslease-session", self.ns),
                                  TIMEOUT, "the namespace's session")
        self.assertEqual(controller.stop(), 0)  # SIGTERM: a clean exit
        second = self.env.start_controller(name="second")
        # The new controller adopts every grant and then renews the session: its renewTime
        # moves on, written by the new controller, while no Lease is written at all.
        renewed = wait_for(lambda: (lambda now: now if now and now["spec"]["renewTime"] >
                                    session_before["spec"]["renewTime"] and now["spec"]["holderIdentity"] !=
                                    session_before["spec"]["holderIdentity"] else None)(
            self.env.get("leases.coordination.k8s.io", "eslease-session", self.ns)), 20,
            "the session renewed by the new controller")
        self.assertNotIn("eslease.io/revoked", renewed["metadata"].get("annotations", {}))
        for name, old in before.items():
            now = self.env.get("esl", name, self.ns)
            self.assertEqual(now["metadata"]["resourceVersion"], old["metadata"]["resourceVersion"], name)
        self.assertEqual(self.grants(second), 0)

    def test_repeated_sigterm_while_busy_is_a_clean_exit(self):
        controller = self.env.start_controller(name="busy")
        pods = ["busy-%d" % i for i in range(30)]
        self.env.create_ready_pods(self.ns, pods)
        self.env.apply(*[lease(p, self.ns, "lock-" + p, p) for p in pods])
        # Signals land while the controller grants, writes and renews: stopping runs no code
        # in the handler, so however many come, it stops cleanly and in time.
        for _ in range(50):
            os.kill(controller.proc.pid, signal.SIGTERM)
            time.sleep(0.002)
        self.assertEqual(controller.proc.wait(timeout=30), 0, controller.text()[-3000:])

    def test_a_restart_against_the_existing_index_records_no_error(self):
        first = self.env.start_controller(name="first")
        self.assertEqual(first.stop(), 0)
        second = self.env.start_controller(name="second")
        text = self.env.metrics(second)
        # What the dashboard's error panel shows: Elasticsearch answers other than 2xx and 404.
        errors = re.findall(r'^eslease_backend_request_duration_seconds_count\{([^}]*code="(?!2\d\d|404)[^"]*"[^}]*)\} '
                            r'([0-9.e+]+)$', text, re.M)
        self.assertEqual([labels for labels, count in errors if float(count) > 0], [])
        self.assertNotIn('op="indices.create"', text, "the index exists: nothing to create")
        resident = re.search(r"^process_resident_memory_bytes ([0-9.e+]+)$", text, re.M)
        self.assertIsNotNone(resident, "the controller exports process_* metrics")
        self.assertGreater(float(resident.group(1)), 1 << 20)
        self.assertGreater(float(re.search(r"^process_open_fds ([0-9.e+]+)$", text, re.M).group(1)), 3)

    def test_two_controllers_elect_one_leader_and_never_double_grant(self):
        flags = ["--leader-elect", "--leader-election-namespace", "default",
                 "--leader-election-lease-duration", "2s", "--leader-election-renew-deadline", "1500ms",
                 "--leader-election-retry-period", "500ms"]
        one = self.env.start_controller(*flags, name="replica-one")
        two = self.env.start_controller(*flags, name="replica-two")
        self.env.create_ready_pods(self.ns, ["px", "py"])
        self.env.apply(lease("lx", self.ns, "ha", "px"), lease("ly", self.ns, "ha", "py"))
        # A claim shows no phase until a controller has seen it.
        wait_for(lambda: sorted([self.status("lx").get("phase") or "", self.status("ly").get("phase") or ""]) ==
                 ["Held", "Pending"], TIMEOUT, "one claim Held, one Pending")

        def leads(c):
            return "eslease_leader 1" in self.env.metrics(c).splitlines()

        def leaders():
            return [c for c in (one, two) if leads(c)]
        leader = wait_for(lambda: leaders() if len(leaders()) == 1 else None, TIMEOUT, "exactly one leader")[0]
        standby = two if leader is one else one
        leader.stop()
        wait_for(lambda: leads(standby), 20, "the standby to lead")
        holder, waiter = ("lx", "ly") if self.status("lx").get("phase") == "Held" else ("ly", "lx")
        self.env.kubectl("delete", "pod", "p" + holder[1], "-n", self.ns, "--grace-period=0", "--force")
        taken = self.wait_phase(waiter, "Held")
        self.assertEqual(taken["lastTakeover"]["reason"], "PodDeleted")
        self.assertNotEqual(self.status(holder).get("phase"), "Held")


class ControllerStartupErrors(unittest.TestCase):
    """What an operator sees when the controller cannot start: a clear message naming the
    culprit and the documented exit code (2: usage, 1: cannot start), never a crash."""

    @classmethod
    def setUpClass(cls):
        cls.env = Environment(BIN, SOURCE).start()

    @classmethod
    def tearDownClass(cls):
        cls.env.stop()

    def run_controller(self, *args):
        argv = [os.path.join(BIN, "eslease-controller"), "--kubeconfig", self.env.kubeconfig, "--es",
                self.env.es_url, "--metrics-bind-address", "0", "--health-probe-bind-address", "0"] + list(args)
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    def expect_failure(self, code, words, *args):
        result = self.run_controller(*args)
        self.assertEqual(result.returncode, code, result.stderr)
        for word in words:
            self.assertIn(word, result.stderr)
        self.assertNotIn("Sanitizer", result.stderr)

    def test_unreadable_credentials_files(self):
        self.expect_failure(1, ["cannot read credentials file /nonexistent/key"],
                            "--es-api-key-file", "/nonexistent/key")
        self.expect_failure(1, ["credentials file %s is not a regular file" % self.env.dir],
                            "--es-bearer-token-file", self.env.dir)
        empty = os.path.join(self.env.dir, "empty-password")
        open(empty, "w").close()
        self.expect_failure(1, ["credentials file %s is empty" % empty], "--es-username", "u",
                            "--es-password-file", empty)

    def test_bad_flags(self):
        self.expect_failure(2, ["--workers", "zero", "--help"], "--workers", "zero")
        self.expect_failure(2, ["--no-such-flag"], "--no-such-flag")
        self.expect_failure(2, ["--es-password"], "--es-password", "hunter2")

    def test_bad_config_files(self):
        typo = os.path.join(self.env.dir, "typo.yaml")
        with open(typo, "w") as f:
            f.write("workrs: 3\n")
        self.expect_failure(2, [typo, "workrs", "did you mean workers"], "--config", typo)
        broken = os.path.join(self.env.dir, "broken.yaml")
        with open(broken, "w") as f:
            f.write("es: [http://a:9200\n")
        self.expect_failure(2, [broken, "not valid YAML"], "--config", broken)
        self.expect_failure(2, ["/nonexistent/config.yaml"], "--config", "/nonexistent/config.yaml")


def main():
    global BIN, SOURCE
    if len(sys.argv) < 3:
        raise SystemExit("usage: controller_test.py <bin dir> <source dir> [unittest args]")
    BIN, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)


if __name__ == "__main__":
    main()
