"""The chart rendered by `helm template` (default values, and every optional part on) applied
with real kubectl to an API server: the kube-emulator on loopback, or the cluster of
$ESLEASE_TEST_KUBECONFIG. The CRD, RBAC, ServiceAccount, Service and Deployment must be
accepted and read back as written, by client-side `kubectl apply` and by
`kubectl apply --server-side` (whose conflicts with another field manager are refused until
--force-conflicts); the chart's CRD must then serve a Lease.

Kinds the API server does not serve at all (the emulator serves a subset of the built-in
kinds) are named in the output, and make the test count as skipped (exit 77) after
everything else passed: it never passes without having applied them. Without Helm it exits
77 too.

usage: kubectl_apply_test.py BIN_DIR SOURCE_DIR WORK_DIR"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chart  # noqa: E402

SKIPPED = 77
REQUIRED_KINDS = ["CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                  "ServiceAccount", "Service", "Deployment"]


def kubectl(kubeconfig, *args, input_text=None, check=True):
    result = subprocess.run(["kubectl", "--kubeconfig", kubeconfig] + list(args), input=input_text,
                            capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError("kubectl %s failed: %s" % (" ".join(args), result.stderr))
    return result


def served_kinds(kubeconfig):
    """{(group, kind)} the API server serves, from discovery (kubectl api-resources)."""
    out = kubectl(kubeconfig, "api-resources", "-o", "wide", "--no-headers=false").stdout.splitlines()
    header, rows = out[0], out[1:]
    kind_at, version_at = header.index("KIND"), header.index("APIVERSION")
    served = set()
    for row in rows:
        api_version = row[version_at:].split()[0]
        kind = row[kind_at:].split()[0]
        group = api_version.split("/")[0] if "/" in api_version else ""
        served.add((group, kind))
    return served


def group_of(obj):
    return obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


def check(kubeconfig, work):
    unserved = set()
    for name, values in (("default values", []), ("every optional part on", [os.path.join(HERE, "values",
                                                                                         "all-on.yaml")])):
        _, _, out = chart.render(work, values)
        objects = [o for o in chart.manifests(out) if o["kind"] in REQUIRED_KINDS + ["ConfigMap"]]
        kinds = served_kinds(kubeconfig)
        namespaces = sorted({o["metadata"].get("namespace") for o in objects} - {None})
        for ns in namespaces:
            kubectl(kubeconfig, "create", "namespace", ns, check=False)
        applied = 0
        for obj in objects:
            ident = "%s %s" % (obj["kind"], obj["metadata"]["name"])
            if (group_of(obj), obj["kind"]) not in kinds:
                unserved.add("%s/%s" % (obj["apiVersion"], obj["kind"]))
                continue
            result = kubectl(kubeconfig, "apply", "-f", "-", input_text=yaml.safe_dump(obj), check=False)
            if result.returncode != 0:
                raise AssertionError("%s (%s) was refused: %s" % (ident, name, result.stderr))
            args = ["get", obj["kind"].lower() + ("." + group_of(obj) if group_of(obj) else ""),
                    obj["metadata"]["name"], "-o", "json"]
            if obj["metadata"].get("namespace"):
                args += ["-n", obj["metadata"]["namespace"]]
            stored = json.loads(kubectl(kubeconfig, *args).stdout)
            if stored["metadata"].get("labels", {}) != obj["metadata"].get("labels", {}):
                raise AssertionError("%s was stored with other labels: %s" % (ident, stored["metadata"]))
            applied += 1
            print("accepted  %-28s %s (%s)" % (obj["kind"], obj["metadata"]["name"], name))
        if applied == 0:
            raise AssertionError("nothing could be applied")
    # The chart's CRD serves Leases, and its schema still refuses a bad one.
    kubectl(kubeconfig, "wait", "--for=condition=Established", "crd/leases.eslease.io", "--timeout=30s")
    lease = {"apiVersion": "eslease.io/v1alpha1", "kind": "Lease", "metadata": {"name": "probe", "namespace": "default"},
             "spec": {"lockName": "probe", "holder": {"podName": "worker-0"}}}
    kubectl(kubeconfig, "apply", "-f", "-", input_text=yaml.safe_dump(lease))
    wait_for(lambda: kubectl(kubeconfig, "get", "esl", "probe", "-n", "default", check=False).returncode == 0, 10,
             "the Lease to be readable")
    lease["metadata"]["name"] = "bad"
    lease["spec"]["priority"] = "Urgent"
    bad = kubectl(kubeconfig, "apply", "-f", "-", input_text=yaml.safe_dump(lease), check=False)
    if bad.returncode == 0 or "Unsupported value" not in bad.stderr:
        raise AssertionError("the chart's CRD accepted priority Urgent: " + bad.stdout + bad.stderr)
    print("accepted  Lease probe; refused a Lease with priority Urgent")
    server_side(kubeconfig, work)
    return unserved


def server_side(kubeconfig, work):
    """kubectl apply --server-side of the whole rendered chart, then a second field manager."""
    _, _, out = chart.render(work, [])
    objects = [o for o in chart.manifests(out) if o["kind"] in REQUIRED_KINDS]
    namespace = "server-side"
    kubectl(kubeconfig, "create", "namespace", namespace, check=False)
    for obj in objects:
        if obj["metadata"].get("namespace"):
            obj["metadata"]["namespace"] = namespace
        obj["metadata"]["name"] = obj["metadata"]["name"] if obj["kind"] == "CustomResourceDefinition" \
            else "ssa-" + obj["metadata"]["name"]
    stream = yaml.safe_dump_all(objects)
    result = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", input_text=stream, check=False)
    if result.returncode != 0:
        raise AssertionError("kubectl apply --server-side was refused: " + result.stderr)
    deployment = [o for o in objects if o["kind"] == "Deployment"][0]
    name = deployment["metadata"]["name"]
    stored = json.loads(kubectl(kubeconfig, "get", "deployment", name, "-n", namespace, "-o", "json",
                                "--show-managed-fields").stdout)
    managers = {(m["manager"], m["operation"]) for m in stored["metadata"].get("managedFields", [])}
    if ("kubectl", "Apply") not in managers:
        raise AssertionError("the Deployment's managedFields do not name kubectl's apply: %s" % managers)
    # Another manager's value for a field kubectl applied is a conflict until it is forced.
    deployment["spec"]["replicas"] = 5
    other = yaml.safe_dump(deployment)
    refused = kubectl(kubeconfig, "apply", "--server-side", "--field-manager=ops", "-f", "-", input_text=other,
                      check=False)
    if refused.returncode == 0 or "conflict" not in refused.stderr or ".spec.replicas" not in refused.stderr:
        raise AssertionError("a conflicting apply was not refused: " + refused.stdout + refused.stderr)
    kubectl(kubeconfig, "apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", "-",
            input_text=other)
    replicas = kubectl(kubeconfig, "get", "deployment", name, "-n", namespace, "-o", "jsonpath={.spec.replicas}").stdout
    if replicas != "5":
        raise AssertionError("--force-conflicts did not set replicas: " + replicas)
    print("accepted  kubectl apply --server-side of the chart; a conflicting manager refused, then forced")


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    bin_dir, work_root = sys.argv[1], sys.argv[3]
    os.makedirs(work_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kubectl-apply-", dir=work_root)
    chart.configure(bin_dir, work)
    chart.skip_without_helm()
    sys.path.insert(0, os.path.join(chart.SOURCE, "tests", "e2e"))
    from emulator_process import KubeEmulator
    emulator = None
    try:
        kubeconfig = os.environ.get("ESLEASE_TEST_KUBECONFIG")
        if not kubeconfig:
            emulator = KubeEmulator(os.path.join(bin_dir, "kube-emulator")).start()
            kubeconfig = emulator.kubeconfig
        unserved = check(kubeconfig, work)
    finally:
        if emulator:
            emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    if unserved:
        print("SKIPPED: the API server does not serve %s, so those objects could not be applied"
              % ", ".join(sorted(unserved)))
        return SKIPPED
    print("every rendered CRD, RBAC, ServiceAccount, Service and Deployment object was accepted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
