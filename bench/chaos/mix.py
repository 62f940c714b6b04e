"""The chaos mix: one step at a time, a weighted choice among the faults a cluster meets, and
what the cluster does by itself afterwards (a kubelet restarting containers, a controller
re-creating pods, the garbage collector removing what a gone pod owned).

Faults: holder pods deleted (their containers stopped first, gracefully or not), failed,
completed, made NotReady; nodes made NotReady, and when Unknown their holders cut off from
the API server; nodes partitioned from the API server (their kubelets' heartbeats stop, and
their holders are cut off while they keep running) and powered off (heartbeats and holders
stop), which the emulated node lifecycle controller marks Unknown once its grace has run out
if they last that long; Elasticsearch answering errors, dropping connections, failing over its
primary, and applying writes whose answer is then lost or comes after the client gave up
(bulks included); the API server dropping watches, failing writes, and applying writes whose
answer is lost or late; Leases deleted by an operator while their holder runs; holders
paused (SIGSTOP) past their validity and cut off from the API server; direct-mode holders
stopped or killed (SIGKILL) in their critical section, a set's or a writer's too;
controllers killed, stopped, paused, the leader SIGKILLed just as a holder's death is to be
handed over, and now and then a third one acting without leader election.
"""

import heapq
import json
import os
import signal
import time

from recorder import call

TERMINAL = ("Failed", "Succeeded")
LEASES = "/apis/eslease.io/v1alpha1/namespaces/%s/leases"
LEADER_LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/eslease-controller"
NODES = ("node-1", "node-2", "node-3")
STOP_GRACE_SECONDS = 2.0  # a graceful stop's SIGTERM -> SIGKILL (a pod's termination grace)


def pod_state(obj):
    """One of: gone, terminal, terminating, unready, ready."""
    if obj is None:
        return "gone"
    status = obj.get("status", {})
    if status.get("phase") in TERMINAL:
        return "terminal"
    if obj["metadata"].get("deletionTimestamp"):
        return "terminating"
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
    return "ready" if ready else "unready"


class Chaos:
    def __init__(self, cast, rng):
        self.cast = cast  # the run's cast (chaos_bench.Cast): env, recorder, holders, proxy, pods, claims
        self.env = cast.env
        self.rec = cast.recorder
        self.holders = cast.holders
        self.rng = rng
        self.ns = cast.ns
        self.later = []  # (when, seq, action) heap
        self.seq = 0
        self.counts = {}  # injected faults by kind
        self.healing = {}  # what the cluster did by itself, by kind
        self.taken_out = set()  # election Leases deleted on purpose, to re-create
        self.cuts = {}  # holder name -> how many faults cut it off now
        # Holders paused or cut off now: no other fault picks them until that one ends, so a
        # pause or a partition lasts as long as it was meant to.
        self.busy = set()
        self.paused_controllers = set()
        self.down_nodes = {}  # node -> "partitioned" or "off", while a node fault lasts
        # With holders skewed beyond the margin, partitions are what let them overrun their
        # grant, and hand-overs on time are what makes the overrun an overlap: more of the
        # first, a quarter of the backend faults that delay renewals and hand-overs, and no
        # controller or node faults (each would delay every hand-over of the run or of a node's
        # pods, the successors among them).
        backend = 0.25 if cast.skew_beyond_margin else 1.0
        controllers = nodes = 0.0 if cast.skew_beyond_margin else 1.0
        self.steps = [(10, self.delete_pod), (5, self.force_delete_pod), (6, self.end_pod), (8, self.unready_pod),
                      (4 * nodes, self.unready_node), (8 * backend, self.es_error), (8 * backend, self.es_unknown_outcome),
                      (7 * backend, self.kube_error), (6 * backend, self.kube_unknown_outcome),
                      (5, self.delete_lease_as_operator), (3, self.delete_election_lease), (6, self.pause_holder),
                      (4 / backend, self.partition_holder), (4, self.stop_direct_holder),
                      (3 * controllers, self.pause_controller),
                      (3 * controllers, self.split_brain), (2 * controllers, self.restart_controller),
                      (3 * nodes, self.partition_node), (3 * nodes, self.power_off_node),
                      (2 * controllers, self.kill_leader_during_handover), (10, lambda: None)]

    # --- scheduling ----------------------------------------------------------------------
    def after(self, seconds, action):
        self.seq += 1
        heapq.heappush(self.later, (time.monotonic() + seconds, self.seq, action))

    def run_due(self):
        while self.later and self.later[0][0] <= time.monotonic():
            heapq.heappop(self.later)[2]()

    def end_everything(self):
        """Runs now what was scheduled to end a fault; waits out what that schedules anew
        (a container's stop, which waits for the tool to exit)."""
        pending, self.later = self.later, []
        for _, _, action in sorted(pending):
            action()
        while self.later:
            self.run_due()
            time.sleep(0.02)

    def count(self, fault, **details):
        """Counts a fault and notes it, with what it hit, in chaos.jsonl beside the logs."""
        self._note(self.counts, "fault", fault, details)

    def count_healing(self, action, **details):
        """Counts what the cluster did by itself (not a fault) and notes it likewise."""
        self._note(self.healing, "healing", action, details)

    def _note(self, table, kind, what, details):
        table[what] = table.get(what, 0) + 1
        with open(os.path.join(self.env.dir, "chaos.jsonl"), "a") as log:
            log.write(json.dumps(dict(details, t=round(time.time(), 3), **{kind: what})) + "\n")

    def step(self):
        # A run with holders skewed beyond the margin is there to show their overlaps found and
        # their stale writes refused: each such holder at work is cut off, not only by chance.
        if self.cast.skew_beyond_margin and self.skewed_holding():
            self.partition_holder()
        total = sum(w for w, _ in self.steps)
        roll = self.rng.uniform(0, total)
        for weight, action in self.steps:
            roll -= weight
            if roll <= 0:
                action()
                break
        if len(self.running_controllers()) < 2:
            self.cast.start_controller()
        self.heal()

    # --- who is who ----------------------------------------------------------------------
    def held_leases(self):
        return [l for l in self.rec.snapshot("lease").values()
                if (l.get("status") or {}).get("phase") == "Held" and l["status"].get("holder", {}).get("podName")]

    def victim(self):
        """A holder pod three times in four (takeovers are the point), else any claimant pod;
        never the pod of a holder paused or cut off now, nor one on a node that is down (its
        kubelet could not report what happens to it)."""
        busy = {h.pod for h in self.busy} | self.pods_on_down_nodes()
        holders = [l["status"]["holder"]["podName"] for l in self.held_leases()]
        holders = [p for p in holders if p not in busy]
        if holders and self.rng.random() < 0.75:
            return self.rng.choice(holders)
        return self.rng.choice(sorted(set(self.cast.pods) - busy) or [None])

    def holding(self, mode=None):
        """Holders whose command is in its critical section now, and that no fault holds."""
        down = self.pods_on_down_nodes()
        return [h for h in self.holders.holders.values() if (mode is None or h.mode == mode)
                and h not in self.busy and h.pod not in down and self.holders.in_critical_section(h)]

    def skewed_holding(self):
        """Holding pods' holders whose clock is behind by more than the safety margin."""
        return [h for h in self.holding("kubernetes") if h.skew < -self.cast.timings.margin]

    def pods_on(self, node):
        return {name for name, p in self.rec.snapshot("pod").items() if p.get("spec", {}).get("nodeName") == node}

    def pods_on_down_nodes(self):
        return set().union(*[self.pods_on(node) for node in self.down_nodes])

    def kubelet(self, pod, change):
        call("POST", "%s/_emulator/kubelet/pods/%s/%s" % (self.env.kube_url, self.ns, pod), change)

    def pod_url(self, name):
        return "%s/api/v1/namespaces/%s/pods/%s" % (self.env.kube_url, self.ns, name)

    def stop_containers(self, pod, graceful, then):
        """Stops the pod's holder as a kubelet stops a container, then does `then` (the pod's
        end): at once after SIGKILL, or after SIGTERM once the tool has exited or the grace
        has run out (the chaos goes on meanwhile)."""
        self.stop_holder(self.holders.by_pod(pod), graceful, then)

    def stop_holder(self, holder, graceful, then):
        """Stops a holder (SIGTERM, SIGKILL after the grace; or SIGKILL), then does `then`."""
        if holder is None or not holder.running():
            return then()
        self.restore_route(holder, all_cuts=True)
        if not graceful:
            self.holders.kill(holder)
            return then()
        self.busy.add(holder)
        self.holders.terminate(holder)
        deadline = time.monotonic() + STOP_GRACE_SECONDS

        def check():
            if holder.running() and time.monotonic() < deadline:
                return self.after(0.05, check)
            self.holders.kill(holder)
            self.busy.discard(holder)
            then()

        self.after(0.05, check)

    # --- pods and nodes ------------------------------------------------------------------
    def delete_pod(self):
        name = self.victim()
        if name is None:
            return
        self.count("pod_deleted", pod=name)
        self.stop_containers(name, True, lambda: call("DELETE", self.pod_url(name)))

    def force_delete_pod(self):
        name = self.victim()
        if name is None:
            return
        self.count("pod_force_deleted", pod=name)
        self.stop_containers(name, False, lambda: call("DELETE", self.pod_url(name) + "?gracePeriodSeconds=0"))

    def end_pod(self):
        phase = self.rng.choice(TERMINAL)
        name = self.victim()
        if name is None:
            return
        self.count("pod_" + phase.lower(), pod=name)
        self.stop_containers(name, phase == "Succeeded", lambda: self.kubelet(name, {"phase": phase}))

    def unready_pod(self):
        name = self.victim()
        if name is None:
            return
        self.count("pod_not_ready", pod=name)
        self.kubelet(name, {"ready": False})
        self.after(self.rng.uniform(0.3, 4.0), lambda: self.kubelet(name, {"ready": True}))

    def up_node(self, spare_busy=False):
        """A node no node fault holds now, or None; with `spare_busy`, none where a holder that
        another fault holds (paused, cut off) runs, so that fault lasts as it was meant to."""
        nodes = set(NODES) - set(self.down_nodes)
        if spare_busy:
            nodes -= self.nodes_of({h.pod for h in self.busy if h.pod})
        return self.rng.choice(sorted(nodes) or [None])

    def nodes_of(self, pods):
        return {p.get("spec", {}).get("nodeName") for name, p in self.rec.snapshot("pod").items() if name in pods}

    def unready_node(self):
        node = self.up_node()
        if node is None:
            return
        status = self.rng.choice(["False", "Unknown"])
        self.count("node_not_ready", node=node, status=status)
        call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"ready": status})
        cut = []
        if status == "Unknown":  # the node is partitioned: so are its pods
            self.count("node_partitioned", node=node)
            pods = self.rec.snapshot("pod")
            cut = [h for h in self.holders.holders.values()
                   if h.pod and (pods.get(h.pod) or {}).get("spec", {}).get("nodeName") == node]
            for holder in cut:
                self.cut_route(holder)

        def heal():
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"ready": "True"})
            for holder in cut:
                self.restore_route(holder)

        self.after(self.rng.uniform(0.5, self.cast.timings.ttl + 2.0), heal)

    def node_fault_seconds(self):
        """How long a node stays partitioned or off: often past the node lifecycle controller's
        grace, so that the holders there are presumed dead and their locks handed over."""
        return self.rng.uniform(0.5, self.cast.node_grace + self.cast.timings.ttl + 3.0)

    def take_node_down(self, fault, change, how, spare_busy=False):
        """Applies a node fault (the admin API's `change`) to a node that is up, counted as
        `fault`; returns the node, or None when every node is down already."""
        node = self.up_node(spare_busy)
        if node is None:
            return None
        self.count(fault, node=node)
        call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), change)
        self.down_nodes[node] = how
        return node

    def partition_node(self):
        """A node cut off from the API server: its kubelet's heartbeats stop, and the holders on
        it keep running cut off (their own routes through the proxy are cut)."""
        node = self.take_node_down("node_network_partitioned", {"network": "partitioned"}, "partitioned")
        if node is None:
            return
        on_node = self.pods_on(node)
        cut = [h for h in self.holders.holders.values() if h.pod in on_node]
        for holder in cut:
            self.cut_route(holder)

        def heal():
            self.note_node_marked(node)
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"network": "connected"})
            self.down_nodes.pop(node, None)
            for holder in cut:
                self.restore_route(holder)

        self.after(self.node_fault_seconds(), heal)

    def power_off_node(self):
        """A node loses power: its kubelet's heartbeats stop and its containers (the holders of
        its pods) with them; nothing of it reaches the API server until it is back, when its
        kubelet starts the containers again."""
        node = self.take_node_down("node_powered_off", {"power": "off"}, "off", spare_busy=True)
        if node is None:
            return
        on_node = self.pods_on(node)
        for holder in self.holders.holders.values():
            if holder.pod in on_node:
                self.restore_route(holder, all_cuts=True)
                self.holders.kill(holder)

        def power_on():
            self.note_node_marked(node)
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"power": "on"})
            self.down_nodes.pop(node, None)

        self.after(self.node_fault_seconds(), power_on)

    def note_node_marked(self, node):
        """Counts a node fault that lasted until the node lifecycle controller marked the node."""
        obj = call("GET", "%s/api/v1/nodes/%s" % (self.env.kube_url, node)) or {}
        ready = [c for c in obj.get("status", {}).get("conditions", []) if c.get("type") == "Ready"]
        if ready and ready[0].get("reason") == "NodeStatusUnknown":
            self.count_healing("node_marked_unknown", node=node)

    # --- Elasticsearch -------------------------------------------------------------------
    def es_error(self):
        rule = self.rng.choice([{"op": "*", "status": 503, "count": self.rng.randint(1, 20)},
                                {"op": "bulk", "status": 429, "count": self.rng.randint(1, 5)},
                                {"op": "*", "drop": True, "count": self.rng.randint(1, 5)},
                                {"op": "*", "latency_ms": self.rng.randint(50, 400), "count": 10}])
        self.count("es_fault", rule=rule)
        call("POST", self.env.es_url + "/_emulator/faults", rule)
        # A primary failover is the emulator's to stage (a single real node has no replica to
        # promote); against a real engine the rest of the mix runs as it is.
        if self.rng.random() < 0.2 and self.env.elasticsearch.backend == "emulator":
            self.count("es_primary_failover")
            call("POST", self.env.es_url + "/_emulator/bump_primary_term?index=" + self.cast.index)

    def es_unknown_outcome(self):
        """A write applied whose answer is lost: the connection drops, or the answer comes
        after the client's timeout (--es-timeout)."""
        rule = {"op": self.rng.choice(["bulk", "bulk", "index", "create", "delete", "*"]), "phase": "after_apply",
                "count": self.rng.randint(1, 3)}
        if self.rng.random() < 0.5:
            rule["drop"] = True
        else:
            rule["latency_ms"] = int(1000 * self.cast.timings.es_timeout + self.rng.randint(300, 2000))
        self.count("es_unknown_outcome_fault", rule=rule)
        call("POST", self.env.es_url + "/_emulator/faults", rule)

    # --- the API server ------------------------------------------------------------------
    def kube_error(self):
        choice = self.rng.random()
        if choice < 0.4:
            self.count("kube_fault", what="watches dropped")
            call("POST", self.env.kube_url + "/_emulator/watches/drop")
            return
        if choice < 0.7:
            rule = {"verb": "patch", "resource": "leases", "status": 500, "count": self.rng.randint(1, 10)}
        else:
            # Sessions and leader-election renewals (coordination Leases are updated with PUT).
            rule = {"verb": "update", "resource": "leases", "status": 500, "count": self.rng.randint(1, 8)}
        self.count("kube_fault", rule=rule)
        call("POST", self.env.kube_url + "/_emulator/faults", rule)

    def kube_unknown_outcome(self):
        """A write applied whose answer is lost (dropped) or late: past the leader election's
        renew deadline for coordination Lease updates; a late answer elsewhere."""
        verb, resource = self.rng.choice([("patch", "leases"), ("update", "leases"), ("update", "leases"),
                                          ("create", "leases"), ("delete", "leases"), ("patch", "pods")])
        rule = {"verb": verb, "resource": resource, "phase": "after_apply", "count": self.rng.randint(1, 3)}
        if self.rng.random() < 0.6:
            rule["drop"] = True
        else:
            rule["latency_ms"] = self.rng.randint(1600, 3000)
        self.count("kube_unknown_outcome_fault", rule=rule)
        call("POST", self.env.kube_url + "/_emulator/faults", rule)

    # --- Leases --------------------------------------------------------------------------
    def delete_lease_as_operator(self):
        """`kubectl delete` of a Lease whose holder runs: a revocation, not a release."""
        held = [l for l in self.held_leases() if l["spec"]["holder"].get("podName")]
        if not held:
            return
        name = self.rng.choice(held)["metadata"]["name"]
        self.count("lease_deleted_by_operator", lease=name)
        call("DELETE", "%s%s/%s" % (self.env.kube_url, LEASES % self.ns, name))

    def delete_election_lease(self):
        name = self.rng.choice(sorted(set(self.cast.election_claims) - self.taken_out) or [None])
        if name is None:
            return
        self.count("election_lease_deleted", lease=name)
        self.taken_out.add(name)
        call("DELETE", "%s%s/%s" % (self.env.kube_url, LEASES % self.ns, name))

    # --- holders -------------------------------------------------------------------------
    def pause_holder(self):
        """SIGSTOP of a holding tool and its command: briefly, or past its validity; a long
        pause of a pod's holder also fails its readiness, as a hung process does."""
        candidates = self.holding()
        if not candidates:
            return
        holder = self.rng.choice(candidates)
        t = self.cast.timings
        long_pause = self.rng.random() < 0.6
        seconds = t.ttl + self.rng.uniform(0.5, 2.5) if long_pause else self.rng.uniform(0.1, t.ttl / 4.0)
        if not self.holders.pause(holder):
            return
        self.busy.add(holder)
        self.count("holder_paused", holder=holder.name, seconds=round(seconds, 2), past_validity=long_pause)
        if long_pause and holder.pod:
            self.kubelet(holder.pod, {"ready": False})

        def resume():
            self.busy.discard(holder)
            self.holders.resume(holder)
            if long_pause and holder.pod:
                self.kubelet(holder.pod, {"ready": True})

        self.after(seconds, resume)

    def stop_direct_holder(self):
        """A direct-mode process stopped (SIGTERM) or killed (SIGKILL) while it works: a killed
        one leaves its documents, a set's or a writer's several, to expire."""
        candidates = self.holding("direct")
        if not candidates:
            return
        holder = self.rng.choice(candidates)
        graceful = self.rng.random() < 0.5
        self.count("direct_holder_stopped" if graceful else "direct_holder_killed", holder=holder.name)
        self.stop_holder(holder, graceful, lambda: None)

    def partition_holder(self):
        """A holding pod's holder cut off from the API server while its pod is NotReady (its
        node's network is down): it cannot hear of its revocation and must stop by its deadline."""
        candidates = self.skewed_holding() or self.holding("kubernetes")
        if not candidates:
            return
        holder = self.rng.choice(candidates)
        seconds = self.cast.timings.ttl + self.rng.uniform(2.0, 4.0)
        self.count("holder_partitioned", holder=holder.name, seconds=round(seconds, 2), skew=holder.skew)
        self.busy.add(holder)
        self.cut_route(holder)
        self.kubelet(holder.pod, {"ready": False})

        def heal():
            self.busy.discard(holder)
            self.restore_route(holder)
            self.kubelet(holder.pod, {"ready": True})

        self.after(seconds, heal)

    def cut_route(self, holder):
        """Cuts a pod's holder off from the API server (direct holders never reach it)."""
        self.cuts[holder.name] = self.cuts.get(holder.name, 0) + 1
        self.cast.proxy.cut(holder.name)

    def restore_route(self, holder, all_cuts=False):
        if holder.mode != "kubernetes":
            return
        left = 0 if all_cuts else max(0, self.cuts.get(holder.name, 0) - 1)
        self.cuts[holder.name] = left
        if left == 0:
            self.cast.proxy.restore(holder.name)

    # --- controllers ---------------------------------------------------------------------
    def running_controllers(self):
        return [c for c in self.env.controllers if c.proc.poll() is None and c not in self.cast.rogues]

    def pause_controller(self):
        candidates = [c for c in self.running_controllers() if c not in self.paused_controllers]
        if not candidates:
            return
        victim = self.rng.choice(candidates)
        seconds = self.rng.uniform(1.0, 5.0)
        self.count("controller_paused", controller=victim.name, seconds=round(seconds, 2))
        os.kill(victim.proc.pid, signal.SIGSTOP)
        self.paused_controllers.add(victim)
        self.after(seconds, lambda: self.resume_controller(victim))

    def resume_controller(self, controller):
        if controller in self.paused_controllers:
            self.paused_controllers.discard(controller)
            if controller.proc.poll() is None:
                os.kill(controller.proc.pid, signal.SIGCONT)

    def split_brain(self):
        """A second controller that acts without leader election for a long stretch (5 to 20 s,
        several hand-overs and session ticks), as a partitioned old leader would: only the
        conditional writes keep the two apart."""
        if any(r.proc.poll() is None for r in self.cast.rogues):
            return
        self.count("split_brain")
        rogue = self.cast.start_rogue()
        self.after(self.rng.uniform(5.0, 20.0), lambda: rogue.stop(sig_kill=self.rng.random() < 0.5))

    def kill_leader_during_handover(self):
        """A holder's death (container killed, pod force-deleted) and, a moment later while the
        leader hands its lock over, the leader SIGKILLed."""
        held = call("GET", self.env.kube_url + LEADER_LEASE) or {}
        identity = (held.get("spec") or {}).get("holderIdentity")
        leader = next((c for c in self.running_controllers() if c.name == identity
                       and c not in self.paused_controllers), None)
        name = self.victim()
        if leader is None or name is None:
            return
        self.count("controller_killed_during_handover", controller=leader.name, pod=name)

        def die():
            call("DELETE", self.pod_url(name) + "?gracePeriodSeconds=0")
            time.sleep(self.rng.uniform(0.0, 0.02))
            leader.stop(sig_kill=True)

        self.stop_containers(name, False, die)

    def restart_controller(self):
        running = [c for c in self.running_controllers() if c not in self.paused_controllers]
        if running:
            victim = self.rng.choice(running)
            kill = self.rng.random() < 0.5
            self.count("controller_killed" if kill else "controller_stopped", controller=victim.name)
            victim.stop(sig_kill=kill)
        self.cast.start_controller()

    # --- what the cluster does by itself -------------------------------------------------
    def heal(self):
        """A finished pod is deleted and its controller (a Job, a StatefulSet) makes a new one;
        the garbage collector deletes Leases whose owner pod is gone; an election Lease taken
        out is applied again; a kubelet (re)starts the containers of running pods."""
        pods = self.rec.snapshot("pod")
        for name, labels in self.cast.pods.items():
            state = pod_state(pods.get(name))
            if state == "terminal":
                call("DELETE", self.pod_url(name) + "?gracePeriodSeconds=0")
            elif state == "gone":
                call("POST", "%s/api/v1/namespaces/%s/pods" % (self.env.kube_url, self.ns),
                     self.cast.pod_object(name, labels))
        live_uids = {p["metadata"]["uid"] for p in pods.values()}
        leases = self.rec.snapshot("lease")
        for name, lease in leases.items():
            owners = [o.get("uid") for o in lease["metadata"].get("ownerReferences", []) if o.get("kind") == "Pod"]
            if owners and not any(uid in live_uids for uid in owners) and \
                    not lease["metadata"].get("deletionTimestamp"):
                self.count_healing("lease_garbage_collected", lease=name)
                call("DELETE", "%s%s/%s" % (self.env.kube_url, LEASES % self.ns, name))
        while self.holders.left_behind:
            # An operator cleans up the claim a run left behind (`kubectl delete`), once.
            holder = self.holders.left_behind.pop()
            name = holder.lease_name()
            if name in leases and not leases[name]["metadata"].get("deletionTimestamp"):
                self.count_healing("claim_left_behind_deleted", holder=holder.name)
                call("DELETE", "%s%s/%s" % (self.env.kube_url, LEASES % self.ns, name))
        for name in list(self.taken_out):
            if name not in leases:
                call("POST", "%s%s" % (self.env.kube_url, LEASES % self.ns), self.cast.election_claims[name])
                self.taken_out.discard(name)
        self.holders.tick(pods, {n for n, how in self.down_nodes.items() if how == "off"})

    def calm(self):
        """Ends every fault: what was scheduled to end one runs now, the emulators' faults are
        cleared, nodes and pods are well again, every holder and controller runs."""
        self.end_everything()
        self.holders.work_until_stopped = True
        call("DELETE", self.env.es_url + "/_emulator/faults")
        call("DELETE", self.env.kube_url + "/_emulator/faults")
        for node in NODES:
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"power": "on"})
            call("POST", "%s/_emulator/kubelet/nodes/%s" % (self.env.kube_url, node), {"ready": "True"})
        self.down_nodes.clear()
        for holder in self.holders.holders.values():
            self.restore_route(holder, all_cuts=True)
            self.holders.resume(holder)
        for controller in list(self.paused_controllers):
            self.resume_controller(controller)
        for rogue in self.cast.rogues:
            rogue.stop()
        while len(self.running_controllers()) < 2:
            self.cast.start_controller()

    def settled(self):
        """Heals once more; true once no pod is unwell and every claim taken out is back."""
        self.heal()
        pods = self.rec.snapshot("pod")
        for name in self.cast.pods:
            if pod_state(pods.get(name)) == "unready":
                self.kubelet(name, {"ready": True})
        return not self.taken_out and all(pod_state(pods.get(n)) == "ready" for n in self.cast.pods)
