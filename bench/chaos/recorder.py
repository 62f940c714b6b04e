"""The chaos run's record of the API: watches the namespace's Pods, eslease Leases and its
`eslease-session` coordination Lease from the start, resuming every dropped stream from the
last resourceVersion it saw, and keeps every event (for the checker) and the current objects
(for the chaos driver)."""

import json
import threading
import time
import urllib.parse
import urllib.request

from validity import SESSION_NAME


def call(method, url, body=None, timeout=10):
    """The decoded answer, or None when the server refused (4xx/5xx) or the answer was lost
    (an injected fault): chaos races are normal, and the driver heals what it meant to do."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except (OSError, ValueError):  # HTTPError is an OSError too
        return None


class Recorder:
    def __init__(self, kube_url, ns):
        self.kube_url = kube_url
        session = urllib.parse.quote("metadata.name=" + SESSION_NAME)
        self.paths = {"pod": ("/api/v1/namespaces/%s/pods" % ns, ""),
                      "lease": ("/apis/eslease.io/v1alpha1/namespaces/%s/leases" % ns, ""),
                      "session": ("/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns,
                                  "fieldSelector=" + session)}
        self.lock = threading.Lock()
        self.events = []  # (resourceVersion, kind, type, object, when it arrived)
        self.current = {kind: {} for kind in self.paths}
        self.gaps = 0  # watches that could not resume (410): the history has a hole
        self.stopping = False
        for kind in self.paths:
            rv = self._list(kind)["metadata"]["resourceVersion"]
            threading.Thread(target=self._follow, args=(kind, rv), daemon=True).start()

    def _url(self, kind, extra=""):
        path, query = self.paths[kind]
        params = "&".join(p for p in (query, extra) if p)
        return self.kube_url + path + ("?" + params if params else "")

    def _list(self, kind):
        while True:
            listed = call("GET", self._url(kind))
            if listed is not None:
                return listed
            time.sleep(0.05)  # an injected fault: try again

    def _follow(self, kind, rv):
        while not self.stopping:
            url = self._url(kind, "watch=1&allowWatchBookmarks=true&resourceVersion=%s" % rv)
            try:
                with urllib.request.urlopen(url, timeout=30) as stream:
                    for line in stream:
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            # Compacted: take the present state as one snapshot and go on.
                            with self.lock:
                                self.gaps += 1
                            rv = self._list(kind)["metadata"]["resourceVersion"]
                            break
                        rv = obj["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            self._keep(kind, event["type"], obj)
            except (OSError, ValueError):
                time.sleep(0.05)  # the emulator dropped the stream (or failed the watch); resume from rv

    def _keep(self, kind, event_type, obj):
        with self.lock:
            self.events.append((int(obj["metadata"]["resourceVersion"]), kind, event_type, obj, time.time()))
            name = obj["metadata"]["name"]
            if event_type == "DELETED":
                self.current[kind].pop(name, None)
            else:
                self.current[kind][name] = obj

    def snapshot(self, kind):
        with self.lock:
            return dict(self.current[kind])

    def history(self):
        with self.lock:
            return list(self.events)

    def stop(self):
        self.stopping = True
