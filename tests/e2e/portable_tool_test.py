"""The eslease tool's portable bundle (build/eslease-portable: a static launcher, the tool,
its dynamic loader and libraries) run where the image has nothing the tool could link to:

- an Alpine-like root with no glibc: Debian's busybox-static as /bin/sh and its applets, and
  Debian's musl as the only C library (/lib/ld-musl-x86_64.so.1), /proc mounted;
- a scratch-like root: the bundle and one static command (busybox copied as /true), no
  shell, no libraries, not even /proc.

In each, entered with chroot (loopback is shared, so the emulators on the host answer):
`eslease --version`; Kubernetes mode with nothing but the service account files and
KUBERNETES_SERVICE_HOST/PORT, against the kube-emulator (TLS, a bearer token) with a running
controller, `eslease run LOCK -- CMD` holding the lock while CMD runs and deleting its Lease
after; direct mode against the es-emulator with TLS on, verifying it with the CA from the
usual place in the Alpine-like root (/etc/ssl/certs/ca-certificates.crt), also by a host name
from its /etc/hosts (no /etc/nsswitch.conf there), and with
--es-ca-file in the scratch root, and refusing the server where no CA vouches for it.

It needs root (chroot, mount), Debian's busybox-static, musl and openssl, and the bundle
(built unless ESLEASE_SANITIZE is set); without them it says so and exits 77 (skipped).

usage: portable_tool_test.py BIN_DIR SOURCE_DIR BUNDLE_DIR"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_env import Environment, ShowsLogsOnFailure, namespace, wait_for  # noqa: E402

SKIPPED = 77
BUSYBOX = "/bin/busybox"
MUSL = "/lib/x86_64-linux-musl/libc.so"
SA_DIR = "var/run/secrets/kubernetes.io/serviceaccount"
TOKEN = "portable-test-token"
ES_HOST = "es.example"  # named in the Alpine-like root's /etc/hosts
NS = "portable"
BIN = SOURCE = BUNDLE = None


def missing_requirements():
    if os.geteuid() != 0:
        return "entering a root file system needs root (chroot, mount)"
    for tool in ("chroot", "mount", "openssl"):
        if not shutil.which(tool):
            return "%s is not installed" % tool
    if not os.path.exists(BUSYBOX):
        return "Debian's busybox-static is not installed (%s): run scripts/install-deps.sh" % BUSYBOX
    file_type = subprocess.run(["file", "-b", BUSYBOX], capture_output=True, text=True).stdout \
        if shutil.which("file") else "statically linked"
    if "statically linked" not in file_type and "static-pie" not in file_type:
        return "%s is not the static busybox (busybox-static): run scripts/install-deps.sh" % BUSYBOX
    if not os.path.exists(MUSL):
        return "Debian's musl is not installed (%s): run scripts/install-deps.sh" % MUSL
    if not os.path.exists(os.path.join(BUNDLE, "eslease")):
        return "the portable bundle %s was not built (a sanitizer build has none)" % BUNDLE
    return None


def make_certificate(directory):
    """A self-signed certificate for 127.0.0.1, which both emulators serve and which is
    its own CA."""
    cert, key = os.path.join(directory, "server.crt"), os.path.join(directory, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:%s" % ES_HOST],
                   check=True, capture_output=True, timeout=60)
    return cert, key


class PortableEnvironment(Environment):
    """es-emulator and kube-emulator with TLS (and a bearer token), the CRD, and a controller."""

    def start(self):
        try:
            self.cert, self.key = make_certificate(self.dir)
            token_file = os.path.join(self.dir, "token")
            with open(token_file, "w") as f:
                f.write(TOKEN)
            es = self._spawn("es-emulator", [os.path.join(self.bin, "es-emulator"), "--listen", "127.0.0.1:0",
                                             "--tls-cert", self.cert, "--tls-key", self.key])
            self.es_url = es.announced(r"listening on (\S+)").group(1)
            assert self.es_url.startswith("https://"), self.es_url
            self.kubeconfig = os.path.join(self.dir, "kubeconfig")
            kube = self._spawn("kube-emulator", [
                os.path.join(self.bin, "kube-emulator"), "--listen", "127.0.0.1:0", "--kubeconfig-out",
                self.kubeconfig, "--token-file", token_file, "--tls-cert", self.cert, "--tls-key", self.key,
                "--simulate-kubelet", "--kubelet-grace-scale", "0.01"])
            self.kube_url = kube.announced(r"kube-emulator listening on (\S+)").group(1)
            self.kubectl("apply", "-f", os.path.join(self.source, "crds"))
            self.kubectl("wait", "--for=condition=Established", "crd/leases.eslease.io", "--timeout=30s")
            self.start_controller("--es-ca-file", self.cert)
        except Exception:
            self.stop()
            raise
        return self

    def http(self, method, url, body=None):
        raise AssertionError("the emulators speak TLS here: use kubectl")


def add_bundle(root):
    shutil.copytree(BUNDLE, os.path.join(root, "eslease"), symlinks=False)


def add_service_account(root, cert):
    sa = os.path.join(root, SA_DIR)
    os.makedirs(sa)
    shutil.copy(cert, os.path.join(sa, "ca.crt"))
    for name, text in (("token", TOKEN), ("namespace", NS)):
        with open(os.path.join(sa, name), "w") as f:
            f.write(text)


def alpine_like_root(parent, cert):
    """busybox as /bin/sh and its applets, musl as the only C library, the CA bundle where
    Alpine keeps it, the service account files."""
    root = os.path.join(parent, "alpine")
    for d in ("bin", "lib", "tmp", "proc", "etc/ssl/certs"):
        os.makedirs(os.path.join(root, d))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "true", "cat", "ls", "echo"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    shutil.copy(MUSL, os.path.join(root, "lib", "ld-musl-x86_64.so.1"))
    shutil.copy(cert, os.path.join(root, "etc", "ssl", "certs", "ca-certificates.crt"))
    # No /etc/nsswitch.conf, as in Alpine: the bundled glibc still finds names here.
    with open(os.path.join(root, "etc", "hosts"), "w") as f:
        f.write("127.0.0.1 localhost %s\n" % ES_HOST)
    add_service_account(root, cert)
    add_bundle(root)
    return root


def scratch_root(parent, cert):
    """The bundle, one static command and the files a pod is given; nothing else."""
    root = os.path.join(parent, "scratch")
    os.makedirs(root)
    shutil.copy(BUSYBOX, os.path.join(root, "true"))  # busybox runs the applet named by argv[0]
    shutil.copy(cert, os.path.join(root, "es-ca.crt"))
    add_service_account(root, cert)
    add_bundle(root)
    return root


class PortableToolTest(ShowsLogsOnFailure, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = PortableEnvironment(BIN, SOURCE).start()
        cls.work = tempfile.mkdtemp(prefix="portable-roots-")
        cls.alpine = alpine_like_root(cls.work, cls.env.cert)
        cls.scratch = scratch_root(cls.work, cls.env.cert)
        subprocess.run(["mount", "-t", "proc", "proc", os.path.join(cls.alpine, "proc")], check=True)
        cls.env.apply(namespace(NS))
        cls.ns = NS

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["umount", os.path.join(cls.alpine, "proc")], check=False)
        shutil.rmtree(cls.work, ignore_errors=True)
        cls.env.stop()

    def chroot(self, root, argv, env=None, timeout=60):
        base = {"PATH": "/bin:/usr/bin"}
        base.update(env or {})
        return subprocess.run([shutil.which("chroot"), root] + argv, capture_output=True, text=True,
                              timeout=timeout, env=base)

    def in_pod(self, pod):
        """What a pod's container is given: the API server's address and its own name."""
        port = self.env.kube_url.rsplit(":", 1)[1].rstrip("/")
        return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port, "POD_NAME": pod,
                "POD_NAMESPACE": NS}

    def assert_ok(self, result, what):
        self.assertEqual(result.returncode, 0, "%s failed (%d):\n%s%s" % (what, result.returncode, result.stdout,
                                                                         result.stderr))

    def leases(self):
        out = self.env.kubectl("get", "esl", "-n", NS, "-o", "name").stdout.split()
        return out

    def test_version_in_a_root_without_glibc(self):
        result = self.chroot(self.alpine, ["/bin/sh", "-c", "/eslease/eslease --version"])
        self.assert_ok(result, "eslease --version under busybox and musl")
        self.assertIn("eslease", result.stdout + result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.alpine, "lib", "libc.so.6")), "no glibc in the root")

    def test_version_in_a_scratch_root(self):
        result = self.chroot(self.scratch, ["/eslease/eslease", "--version"], env={})
        self.assert_ok(result, "eslease --version in a scratch root")

    def kubernetes_run(self, root, pod, command):
        self.env.create_ready_pods(NS, [pod])
        result = self.chroot(root, ["/eslease/eslease", "run", "portable-" + pod, "--"] + command,
                             env=self.in_pod(pod))
        self.assert_ok(result, "eslease run in Kubernetes mode")
        wait_for(lambda: not self.leases(), 20, "the run's Lease to be deleted")
        return result

    def test_kubernetes_mode_in_a_root_without_glibc(self):
        self.kubernetes_run(self.alpine, "musl-pod",
                            ["/bin/sh", "-c", 'test -n "$ESLEASE_FENCING_TOKEN" && echo "$ESLEASE_FENCING_TOKEN" '
                                              "> /tmp/token"])
        with open(os.path.join(self.alpine, "tmp", "token")) as f:
            self.assertRegex(f.read().strip(), r"^[0-9]+$", "the command ran holding the lock")

    def test_kubernetes_mode_in_a_scratch_root(self):
        self.kubernetes_run(self.scratch, "scratch-pod", ["/true"])

    def direct_run(self, root, lock, ca_args, es_url=None):
        return self.chroot(root, ["/eslease/eslease", "--es", es_url or self.env.es_url] + ca_args +
                           ["run", lock, "--namespace", NS, "--holder", "portable-host", "--ttl", "10s", "--",
                            "/true" if root == self.scratch else "/bin/true"])

    def test_direct_mode_with_tls_finds_the_ca_where_alpine_keeps_it(self):
        self.assert_ok(self.direct_run(self.alpine, "direct-musl", []), "direct mode with the CA in /etc/ssl/certs")

    def test_direct_mode_resolves_a_host_name_from_etc_hosts(self):
        url = self.env.es_url.replace("127.0.0.1", ES_HOST)
        self.assert_ok(self.direct_run(self.alpine, "direct-by-name", [], es_url=url),
                       "direct mode naming Elasticsearch by a host name of /etc/hosts")

    def test_direct_mode_with_tls_and_es_ca_file_in_a_scratch_root(self):
        refused = self.direct_run(self.scratch, "direct-scratch", [])
        self.assertNotEqual(refused.returncode, 0, "no CA vouches for the server: the tool must refuse it")
        self.assert_ok(self.direct_run(self.scratch, "direct-scratch", ["--es-ca-file", "/es-ca.crt"]),
                       "direct mode with --es-ca-file")


def main():
    global BIN, SOURCE, BUNDLE
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    BIN, SOURCE, BUNDLE = sys.argv[1], sys.argv[2], sys.argv[3]
    reason = missing_requirements()
    if reason:
        print("SKIPPED: " + reason)
        return SKIPPED
    print("bundle: %s (%s)" % (BUNDLE, subprocess.run(["du", "-sh", BUNDLE], capture_output=True,
                                                       text=True).stdout.split()[0]))
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
