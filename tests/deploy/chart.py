"""Shared helpers of the deployment checks: build the chart renderer (Go text/template +
sprig + Helm's functions, tests/deploy/render) and render the chart into manifests."""

import glob
import os
import shutil
import subprocess
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
CHART = os.path.join(SOURCE, "charts", "eslease")
NODE_MODULES = os.path.join(HERE, "node_modules")
RELEASE = "eslease"
NAMESPACE = "eslease-system"

_renderer = None


def go_environment(cache_dir):
    """GOPATH mode over Debian's packaged Go sources: offline, no module download."""
    env = dict(os.environ)
    env.update({"GO111MODULE": "off", "GOPATH": "%s:/usr/share/gocode" % os.path.join(os.path.abspath(cache_dir), "gopath"),
                "GOCACHE": os.path.join(cache_dir, "gocache"), "GOFLAGS": "", "GOPROXY": "off",
                "CGO_ENABLED": "0"})
    return env


# Where the Go build cache is kept between runs (the build tree); temporary files go elsewhere.
CACHE_DIR = None


def renderer(work_dir):
    """Builds tests/deploy/render once per process into work_dir; the Go build cache lives in
    CACHE_DIR (default: work_dir)."""
    global _renderer
    if _renderer and os.path.exists(_renderer):
        return _renderer
    if not shutil.which("go"):
        raise AssertionError("go is not installed: run scripts/install-deps.sh")
    out = os.path.join(tempfile.mkdtemp(prefix="chart-render-", dir=work_dir), "chart-render")
    result = subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(HERE, "render"),
                            env=go_environment(CACHE_DIR or work_dir), capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError("building the chart renderer failed:\n" + result.stderr)
    _renderer = out
    return out


def render(work_dir, values_files=(), chart=CHART, out_dir=None, check=True):
    """Renders `chart` with the values files; returns (returncode, stderr, out_dir)."""
    out_dir = out_dir or tempfile.mkdtemp(prefix="rendered-", dir=work_dir)
    argv = [renderer(work_dir), "-chart", chart, "-name", RELEASE, "-namespace", NAMESPACE, "-out", out_dir]
    for f in values_files:
        argv += ["-f", f]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError("rendering failed: " + result.stderr)
    return result.returncode, result.stderr, out_dir


def manifests(out_dir):
    """Every Kubernetes object rendered into out_dir (NOTES.txt excluded)."""
    objects = []
    for path in sorted(glob.glob(os.path.join(out_dir, "**", "*.yaml"), recursive=True)):
        with open(path) as f:
            objects += [d for d in yaml.safe_load_all(f) if d]
    return objects


def find(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return found


def node_tool(name):
    """A command installed by `npm ci` in tests/deploy (scripts/install-deps.sh does it)."""
    path = os.path.join(NODE_MODULES, ".bin", name)
    if not os.path.exists(path):
        raise AssertionError("%s is missing: run scripts/install-deps.sh (npm ci in tests/deploy)" % path)
    return path
