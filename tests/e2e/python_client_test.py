"""Debian's python3-kubernetes client against kube-emulator: core pods with label selectors and
paging, the Lease CRD through the apiextensions API, custom objects and watch events."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulator_process import KubeEmulator, parse_arguments  # noqa: E402

import kubernetes  # noqa: E402
import yaml  # noqa: E402
from kubernetes import client, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

EMULATOR = None
SOURCE_DIR = None
GROUP, VERSION, PLURAL = "eslease.io", "v1alpha1", "leases"
NAMESPACE = "python-client"
REQUEST_TIMEOUT = 30


def pod(name, labels):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36",
                                                             command=["sleep", "3600"])]))


def lease(name, lock_name, **spec):
    spec.update({"lockName": lock_name, "holder": {"podName": "web-0"}})
    return {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


class PythonClientAgainstEmulator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emulator = KubeEmulator(EMULATOR).start()
        try:
            cls.api_client = kubernetes.config.new_client_from_config(config_file=cls.emulator.kubeconfig)
            kubernetes.config.load_kube_config(config_file=cls.emulator.kubeconfig)
            cls.core = client.CoreV1Api(cls.api_client)
            cls.custom = client.CustomObjectsApi(cls.api_client)
            cls.extensions = client.ApiextensionsV1Api(cls.api_client)
            cls.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)),
                                      _request_timeout=REQUEST_TIMEOUT)
            cls.install_crd()
        except Exception:
            cls.emulator.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.api_client.close()
        cls.emulator.stop()

    @classmethod
    def install_crd(cls):
        with open(os.path.join(SOURCE_DIR, "crds", "leases.eslease.io.yaml")) as manifest:
            body = yaml.safe_load(manifest)
        cls.extensions.create_custom_resource_definition(body, _request_timeout=REQUEST_TIMEOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            crd = cls.extensions.read_custom_resource_definition("leases.eslease.io", _request_timeout=REQUEST_TIMEOUT)
            conditions = (crd.status.conditions or []) if crd.status else []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                return
            time.sleep(0.05)
        raise AssertionError("CRD leases.eslease.io never became Established")

    def test_pods_label_selector_and_paging(self):
        for name, labels in (("web-0", {"app": "web"}), ("web-1", {"app": "web"}), ("db-0", {"app": "db"})):
            created = self.core.create_namespaced_pod(NAMESPACE, pod(name, labels), _request_timeout=REQUEST_TIMEOUT)
            self.assertEqual(created.metadata.name, name)
            self.assertTrue(created.metadata.uid)
            self.assertTrue(created.metadata.resource_version)

        web = self.core.list_namespaced_pod(NAMESPACE, label_selector="app=web", _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(sorted(p.metadata.name for p in web.items), ["web-0", "web-1"])
        not_web = self.core.list_namespaced_pod(NAMESPACE, label_selector="app!=web", _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual([p.metadata.name for p in not_web.items], ["db-0"])

        names, token, pages = [], None, 0
        while True:
            kwargs = {"limit": 1, "_request_timeout": REQUEST_TIMEOUT}
            if token:
                kwargs["_continue"] = token
            page = self.core.list_namespaced_pod(NAMESPACE, **kwargs)
            pages += 1
            self.assertLessEqual(len(page.items), 1)
            names.extend(p.metadata.name for p in page.items)
            token = page.metadata._continue
            if not token:
                break
            self.assertLess(pages, 10, "paging does not terminate")
        self.assertEqual(sorted(names), ["db-0", "web-0", "web-1"])
        self.assertEqual(pages, 3)

    def test_custom_object_create_get_list_patch(self):
        created = self.custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                                              lease("orders-a", "orders"),
                                                              _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(created["spec"]["priority"], "Foreground", "schema default applied on create")
        self.assertEqual(created["spec"]["leaseDurationSeconds"], 16)
        self.assertEqual(created["metadata"]["generation"], 1)

        fetched = self.custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "orders-a",
                                                           _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(fetched["metadata"]["uid"], created["metadata"]["uid"])

        self.custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                                    lease("orders-b", "orders", priority="Background"),
                                                    _request_timeout=REQUEST_TIMEOUT)
        listed = self.custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL,
                                                           _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(listed["kind"], "LeaseList")
        self.assertTrue({"orders-a", "orders-b"} <= {item["metadata"]["name"] for item in listed["items"]})

        patched = self.custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "orders-a",
                                                             {"spec": {"leaseDurationSeconds": 90}},
                                                             _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(patched["spec"]["leaseDurationSeconds"], 90)
        self.assertEqual(patched["metadata"]["generation"], 2)

        status = self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, NAMESPACE, PLURAL, "orders-a", {"status": {"phase": "Held", "fencingToken": "7"}},
            _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(status["status"]["phase"], "Held")
        self.assertEqual(status["metadata"]["generation"], 2)

        with self.assertRaises(ApiException) as invalid:
            self.custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "orders-a",
                                                       {"spec": {"priority": "Urgent"}},
                                                       _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(invalid.exception.status, 422)
        self.assertIn('spec.priority: Unsupported value: \\"Urgent\\"', invalid.exception.body)

        with self.assertRaises(ApiException) as missing:
            self.custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "nope",
                                                     _request_timeout=REQUEST_TIMEOUT)
        self.assertEqual(missing.exception.status, 404)

    def test_watch_streams_added_then_modified(self):
        self.custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, lease("watched", "watched"),
                                                    _request_timeout=REQUEST_TIMEOUT)
        events = []
        stream = watch.Watch()
        for event in stream.stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, NAMESPACE, PLURAL,
                                   field_selector="metadata.name=watched", timeout_seconds=20):
            events.append((event["type"], event["object"]["metadata"]["name"],
                           event["object"]["spec"]["leaseDurationSeconds"]))
            if event["type"] == "ADDED":
                self.custom.patch_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "watched",
                                                           {"spec": {"leaseDurationSeconds": 45}},
                                                           _request_timeout=REQUEST_TIMEOUT)
            if event["type"] == "MODIFIED":
                stream.stop()
        self.assertEqual(events, [("ADDED", "watched", 16), ("MODIFIED", "watched", 45)])


if __name__ == "__main__":
    EMULATOR, SOURCE_DIR, unittest_argv = parse_arguments(sys.argv)
    unittest.main(argv=unittest_argv, verbosity=2)
