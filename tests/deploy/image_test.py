"""The runtime image, without a Docker engine: builds the Dockerfile's runtime stage as a
root file system from Debian's packages (mmdebstrap, bookworm, exactly the packages the
Dockerfile's runtime stage installs), copies in the binaries where the Dockerfile puts them,
and runs inside it with chroot, as the Dockerfile's numeric user:

- `eslease-controller --help` and `eslease --help` (a missing shared library fails here);
- the eslease tool's portable bundle where the Dockerfile puts it (/opt/eslease), with a
  statically linked launcher, copied as an init container copies it into a shared volume
  and run from there;
- a short end-to-end scenario: the controller in the image against the two emulators on
  the host's loopback, a Lease granted, its holder pod deleted, the next claim granted;
  and the `eslease` tool in the image taking and releasing a lock in direct mode.

It needs Debian's package mirror. When the mirror cannot be reached (or the test does not
run as root, which chroot needs), it says so and exits 77, which CTest counts as skipped.

usage: image_test.py BIN_DIR SOURCE_DIR WORK_DIR"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenario  # noqa: E402
from scenario import Environment, lease, namespace, wait_for, wait_phase  # noqa: E402

SKIPPED = 77
SUITE = "bookworm"


def skip(reason):
    print("SKIPPED: " + reason)
    sys.exit(SKIPPED)


def read_dockerfile(source):
    """(runtime packages, 'uid:gid', directory the binaries are copied to)."""
    with open(os.path.join(source, "Dockerfile")) as f:
        text = f.read()
    block = re.search(r"# runtime-packages-begin.*?\n(.*?)# runtime-packages-end", text, re.S).group(1)
    install = block[block.index("--no-install-recommends"):]
    packages = re.findall(r"^\s+([a-z0-9][a-z0-9.+-]+)\s*\\?$", install, re.M)
    runtime = text[text.index("AS runtime"):]
    user = re.search(r"^USER (\d+:\d+)$", runtime, re.M).group(1)
    copy = re.search(r"^COPY --from=build (.+) (/\S+)/$", runtime, re.M)
    binaries = [os.path.basename(p) for p in copy.group(1).split()]
    return packages, user, copy.group(2), binaries


def read_bundle_copy(source):
    """(the build directory's bundle folder, where the image carries it) from the Dockerfile."""
    with open(os.path.join(source, "Dockerfile")) as f:
        runtime = f.read().split("AS runtime", 1)[1]
    found = re.search(r"^COPY --from=build /build/(\S+)/ (/\S+)/$", runtime, re.M)
    if not found:
        raise AssertionError("the Dockerfile's runtime stage copies no portable bundle of the eslease tool")
    return found.group(1), found.group(2)


def statically_linked(path):
    """True when the ELF file has no program interpreter (PT_INTERP): it needs no loader."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:
            raise AssertionError("%s is not a 64-bit ELF file" % path)
        phoff = int.from_bytes(header[32:40], "little")
        phentsize = int.from_bytes(header[54:56], "little")
        phnum = int.from_bytes(header[56:58], "little")
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return all(int.from_bytes(table[i * phentsize:i * phentsize + 4], "little") != 3 for i in range(phnum))


def check_bundle(root, user, bundle_target):
    """The bundle in the image: a static launcher, run in place and from an init container's
    copy in a shared volume."""
    launcher = os.path.join(root, bundle_target.lstrip("/"), "eslease")
    if not statically_linked(launcher):
        raise AssertionError("%s/eslease in the image is not statically linked" % bundle_target)
    tool = os.path.join(bundle_target, "eslease")
    result = chroot(root, user, tool, "--version")
    if result.returncode != 0:
        raise AssertionError("%s --version in the image failed (%d): %s" % (tool, result.returncode, result.stderr))
    shared = os.path.join(root, "tmp", "eslease")
    os.makedirs(shared)
    os.chown(shared, *[int(x) for x in user.split(":")])
    copied = chroot(root, user, "cp", "-r", bundle_target + "/.", "/tmp/eslease/")
    if copied.returncode != 0:
        raise AssertionError("copying the bundle as the init container does failed: " + copied.stderr)
    result = chroot(root, user, "/tmp/eslease/eslease", "--help")
    if result.returncode != 0 or "eslease" not in result.stdout:
        raise AssertionError("the copied bundle's eslease --help failed (%d): %s" % (result.returncode,
                                                                                    result.stderr))
    size = subprocess.run(["du", "-sh", shared], capture_output=True, text=True).stdout.split()[0]
    print("portable eslease in the image at %s: static launcher, runs in place and copied (%s)"
          % (bundle_target, size))


def mirror_sources():
    """The mirror lines for mmdebstrap: this machine's apt sources for bookworm, else
    Debian's default mirror."""
    path = "/etc/apt/sources.list.d/debian.sources"
    if os.path.exists(path):
        return path, re.findall(r"^URIs:\s*(\S+)", open(path).read(), re.M)[0]
    return "http://deb.debian.org/debian", "http://deb.debian.org/debian"


def reachable(url):
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/dists/%s/InRelease" % SUITE, timeout=15) as r:
            return r.status == 200
    except OSError:
        return False


def chroot(root, user, *argv, timeout=60):
    return subprocess.run(["chroot", "--userspec=" + user, root] + list(argv), capture_output=True, text=True,
                          timeout=timeout)


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    bin_dir, source, work_root = sys.argv[1], sys.argv[2], sys.argv[3]
    packages, user, bin_target, binaries = read_dockerfile(source)
    bundle_source, bundle_target = read_bundle_copy(source)
    print("runtime packages (from the Dockerfile): " + " ".join(packages))
    print("user %s, binaries %s in %s" % (user, ", ".join(binaries), bin_target))
    if os.geteuid() != 0:
        skip("building and entering the root file system needs root (mmdebstrap --mode=root, chroot)")
    if not shutil.which("mmdebstrap"):
        raise AssertionError("mmdebstrap is not installed: run scripts/install-deps.sh")
    sources, mirror = mirror_sources()
    if not reachable(mirror):
        skip("Debian's package mirror %s cannot be reached, so the image's root file system cannot be built"
             % mirror)

    os.makedirs(work_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="image-test-", dir=work_root)
    root = os.path.join(work, "rootfs")
    mounted = []
    try:
        started = time.monotonic()
        build = subprocess.run(["mmdebstrap", "--mode=root", "--variant=apt", "--format=directory", "--quiet",
                                "--include=" + ",".join(packages), SUITE, root, sources],
                               capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        if build.returncode != 0:
            if not reachable(mirror):
                skip("Debian's package mirror %s stopped answering while the root file system was built" % mirror)
            raise AssertionError("mmdebstrap failed:\n" + build.stderr[-4000:])
        print("root file system built in %.0fs" % (time.monotonic() - started))
        for name in binaries:
            dst = os.path.join(root, bin_target.lstrip("/"), name)
            shutil.copy2(os.path.join(bin_dir, name), dst)
            os.chmod(dst, 0o755)
        shutil.copytree(os.path.join(os.path.dirname(os.path.abspath(bin_dir)), bundle_source),
                        os.path.join(root, bundle_target.lstrip("/")))
        subprocess.run(["mount", "-t", "proc", "proc", os.path.join(root, "proc")], check=True)
        mounted.append(os.path.join(root, "proc"))
        os.chmod(os.path.join(root, "tmp"), 0o1777)

        for name in binaries:
            result = chroot(root, user, os.path.join(bin_target, name), "--help")
            if result.returncode != 0:
                raise AssertionError("%s --help in the image failed (%d): %s" % (name, result.returncode,
                                                                                result.stderr))
            print("%s --help in the image: ok (%d lines)" % (name, len(result.stdout.splitlines())))
        check_bundle(root, user, bundle_target)

        with Environment(bin_dir, source) as env:
            shutil.copy(env.kubeconfig, os.path.join(root, "tmp", "kubeconfig"))
            os.chmod(os.path.join(root, "tmp", "kubeconfig"), 0o644)
            controller = env._spawn("controller-in-image", [
                "chroot", "--userspec=" + user, root, os.path.join(bin_target, "eslease-controller"),
                "--kubeconfig", "/tmp/kubeconfig", "--es", env.es_url, "--metrics-bind-address", "127.0.0.1:0",
                "--health-probe-bind-address", "127.0.0.1:0", "--identity", "image-test"])
            health = "http://" + controller.announced(r"endpoint=health address=(\S+)").group(1)
            wait_for(lambda: env.http_status(health + "/readyz") == 200, 30, "the controller in the image to be ready")
            ns = scenario.NAMESPACE
            env.apply(namespace(ns))
            env.create_ready_pods(ns, ["img-a", "img-b"])
            env.apply(lease("img-a", ns, "image", "img-a"))
            wait_phase(env, "img-a", "Held")
            env.apply(lease("img-b", ns, "image", "img-b"))
            wait_phase(env, "img-b", "Pending")
            env.kubectl("delete", "pod", "img-a", "-n", ns, "--grace-period=0", "--force")
            wait_phase(env, "img-b", "Held")
            print("controller in the image: granted, took over after the holder's pod was deleted")

            tool = os.path.join(bin_target, "eslease")
            acquired = chroot(root, user, tool, "--es", env.es_url, "acquire", "cron", "--namespace", ns,
                              "--holder", "image-host", "--ttl", "30s")
            if acquired.returncode != 0 or not acquired.stdout.strip():
                raise AssertionError("eslease acquire in the image failed: " + acquired.stdout + acquired.stderr)
            released = chroot(root, user, tool, "--es", env.es_url, "release", "cron", "--namespace", ns,
                              "--holder", "image-host")
            if released.returncode != 0:
                raise AssertionError("eslease release in the image failed: " + released.stderr)
            print("eslease tool in the image: acquired (token %s) and released a lock" % acquired.stdout.strip())
            code = controller.stop()
            if code != 0:
                raise AssertionError("the controller in the image exited %s on SIGTERM: %s" % (code, controller.text()))
    finally:
        for path in reversed(mounted):
            subprocess.run(["umount", "-l", path], check=False)
        # Never follow anything out of the tree that might still be mounted.
        if not any(os.path.ismount(p) for p in mounted):
            shutil.rmtree(work, ignore_errors=True)
    print("the runtime image works")
    return 0


if __name__ == "__main__":
    sys.exit(main())
