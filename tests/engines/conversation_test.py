"""The es-emulator held to a real engine: eslease's own conversation with Elasticsearch (every
request shape it sends, in the order a lock's life sends them) is played against the emulator
and against a real OpenSearch node, and the answers must agree in everything eslease reads:
status codes, `result`, `found`, sequence numbers and primary terms, bulk item outcomes,
error types, the index's mapping and `_meta`.

Where the two differ for a reason that does not matter to eslease, the difference is listed in
KNOWN_DIFFERENCES with that reason, and in tests/emulators/es/README.md ("Held to a real
engine"). Any other difference fails the test, naming the request and both answers.

usage: conversation_test.py BIN_DIR   (starts es-emulator and tests/engines/opensearch/run.sh)
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backend import ENGINE_START_TIMEOUT, RUN_SH, announced_url, engine_version  # noqa: E402

BIN = None
INDEX = "eslease-locks-conversation"

# (request name, path of the value in the projected answer) -> why the difference does not
# matter to eslease. A path of None: the whole answer's status differs.
KNOWN_DIFFERENCES = {
    ("bad json", "error.type"): "Elasticsearch 8 names a source it cannot parse document_parsing_exception, as "
                                "the emulator does; OpenSearch (and Elasticsearch 7) mapper_parsing_exception. "
                                "eslease sends only documents it built, and reads the 400 alone.",
    ("bad json", "error.root_cause.type"): "as above",
}

LOCK_FIELDS = {"lock": "keyword", "lease": "keyword", "leaseUID": "keyword", "holder": "keyword",
               "holderUID": "keyword", "node": "keyword", "priority": "keyword", "acquiredAt": "date",
               "renewedAt": "date", "expiresAt": "date", "ttlMillis": "long", "fencingToken": "long",
               "transitions": "long", "writer": "keyword"}
SHAPE_FIELDS = {"slot": "integer", "capacity": "integer", "access": "keyword", "grant": "keyword",
                "grantDocs": "keyword"}


def lock_doc(holder, token=0):
    return {"lock": "batch/nightly", "lease": "batch/" + holder, "leaseUID": "uid-" + holder, "holder": holder,
            "holderUID": "pod-" + holder, "node": "node-1", "priority": "Foreground",
            "acquiredAt": "2026-01-01T00:00:00.000Z", "renewedAt": "2026-01-01T00:00:00.000Z",
            "expiresAt": "2026-01-01T00:00:30.000Z", "ttlMillis": 30000, "fencingToken": token,
            "transitions": 0, "writer": "controller-a"}


def ndjson(*lines):
    return "".join(json.dumps(line) + "\n" for line in lines)


def conversation(seq):
    """eslease's requests in order: (name, method, path, body, content type). `seq(name)` gives
    the (_seq_no, _primary_term) an earlier answer returned, as eslease carries them."""
    i = "/" + INDEX
    doc = i + "/_doc/"
    nightly = "batch%2Fnightly"
    yield "info", "GET", "/", None, None
    yield "describe missing index", "GET", i, None, None
    yield "read from missing index", "GET", doc + nightly, None, None
    yield "create index", "PUT", i, {"settings": {"number_of_shards": 1},
                                     "mappings": {"dynamic": "strict", "_meta": {"eslease": {"tokenEpoch": 0}},
                                                  "properties": {k: {"type": v} for k, v in LOCK_FIELDS.items()}}}, None
    yield "create index again", "PUT", i, {"settings": {"number_of_shards": 1}}, None
    yield "describe index", "GET", i, None, None
    yield "mapping upgrade", "PUT", i + "/_mapping", {"dynamic": "strict", "properties": {
        k: {"type": v} for k, v in SHAPE_FIELDS.items()}}, None
    yield "mapping conflict", "PUT", i + "/_mapping", {"properties": {"ttlMillis": {"type": "keyword"}}}, None
    yield "meta replaced", "PUT", i + "/_mapping", {"_meta": {"eslease": {"tokenEpoch": 1}}}, None
    yield "describe upgraded index", "GET", i, None, None
    yield "acquire", "PUT", i + "/_create/" + nightly, lock_doc("a"), None
    yield "acquire taken", "PUT", i + "/_create/" + nightly, lock_doc("b"), None
    yield "read held", "GET", doc + nightly, None, None
    yield "strict mapping refuses a field", "PUT", i + "/_create/batch%2Fother", dict(lock_doc("a"), extra=1), None
    s, t = seq("acquire")
    yield "renew", "PUT", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), lock_doc("a", 1), None
    yield "renew stale", "PUT", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), lock_doc("a", 1), None
    s, t = seq("renew")
    yield "take over", "PUT", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), lock_doc("b", 2), None
    yield "release stale", "DELETE", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), None, None
    s, t = seq("take over")
    yield "release", "DELETE", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), None, None
    yield "release gone", "DELETE", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), None, None
    yield "read released", "GET", doc + nightly, None, None
    yield "renew released", "PUT", doc + nightly + "?if_seq_no=%d&if_primary_term=%d" % (s, t), lock_doc("b", 2), None
    yield "release missing unconditionally", "DELETE", doc + "batch%2Fnever", None, None
    yield "grant set", "POST", i + "/_bulk", ndjson(
        {"create": {"_id": "batch/set-a"}}, lock_doc("s"),
        {"create": {"_id": "batch/set-b"}}, lock_doc("s"),
        {"create": {"_id": "batch/set-c"}}, lock_doc("s")), "application/x-ndjson"
    yield "grant set partly taken", "POST", i + "/_bulk", ndjson(
        {"create": {"_id": "batch/set-c"}}, lock_doc("t"),
        {"create": {"_id": "batch/set-d"}}, lock_doc("t")), "application/x-ndjson"
    s, t = seq("grant set partly taken", item=1)
    yield "undo partial grant", "POST", i + "/_bulk", ndjson(
        {"delete": {"_id": "batch/set-d", "if_seq_no": s, "if_primary_term": t}}), "application/x-ndjson"
    yield "mget", "POST", i + "/_mget", {"ids": ["batch/set-a", "batch/set-d", "batch/set-c"]}, None
    sa, ta = seq("grant set", item=0)
    sb, tb = seq("grant set", item=1)
    yield "renew set", "POST", i + "/_bulk", ndjson(
        {"index": {"_id": "batch/set-a", "if_seq_no": sa, "if_primary_term": ta}}, lock_doc("s", 3),
        {"index": {"_id": "batch/set-b", "if_seq_no": sb + 100, "if_primary_term": tb}}, lock_doc("s", 3)),\
        "application/x-ndjson"
    yield "bulk on missing index", "POST", "/eslease-conversation-absent/_bulk", ndjson(
        {"delete": {"_id": "x", "if_seq_no": 0, "if_primary_term": 1}}), "application/x-ndjson"
    yield "mget on missing index", "POST", "/eslease-conversation-absent/_mget", {"ids": ["x"]}, None
    yield "mapping on missing index", "PUT", "/eslease-conversation-absent/_mapping", {"properties": {
        "lock": {"type": "keyword"}}}, None
    yield "list on missing index", "POST", "/eslease-conversation-absent/_search", {"query": {"match_all": {}}}, None
    yield "refresh missing index", "POST", "/eslease-conversation-absent/_refresh", None, None
    yield "refresh", "POST", i + "/_refresh", None, None
    yield "list", "POST", i + "/_search", {"query": {"match_all": {}}, "size": 100, "seq_no_primary_term": True,
                                          "sort": [{"lock": "asc"}]}, None
    yield "bad json", "PUT", i + "/_create/batch%2Fbad", "{not json", "application/json"
    yield "delete index", "DELETE", i, None, None
    yield "write recreates index", "PUT", i + "/_create/" + nightly, lock_doc("c"), None
    yield "describe recreated index", "GET", i, None, None


def project(name, status, body):
    """What eslease reads of an answer."""
    out = {"status": status}
    if not isinstance(body, dict):
        return out
    for key in ("result", "found", "_seq_no", "_primary_term", "_version", "_id", "acknowledged", "errors"):
        if key in body:
            out[key] = body[key]
    if "_source" in body:
        out["_source"] = body["_source"]
    if isinstance(body.get("error"), dict):
        out["error.type"] = body["error"].get("type")
        causes = body["error"].get("root_cause") or [{}]
        out["error.root_cause.type"] = causes[0].get("type")
    for n, item in enumerate(body.get("items", [])):
        (op, result), = item.items()
        out["items.%d" % n] = {"op": op, "status": result.get("status"), "result": result.get("result"),
                               "_seq_no": result.get("_seq_no"), "_primary_term": result.get("_primary_term"),
                               "error.type": (result.get("error") or {}).get("type")}
    for n, doc in enumerate(body.get("docs", [])):
        out["docs.%d" % n] = {"_id": doc.get("_id"), "found": doc.get("found"), "_seq_no": doc.get("_seq_no"),
                              "_primary_term": doc.get("_primary_term"), "_source": doc.get("_source"),
                              "error.type": (doc.get("error") or {}).get("type")}
    if isinstance(body.get("hits"), dict):
        # Sorted here: the hits tie on the sort field, and ties come in no promised order.
        out["hits"] = sorted([h.get("_id"), h.get("_seq_no"), h.get("_primary_term")] for h in body["hits"]["hits"])
    if INDEX in body and isinstance(body[INDEX], dict):
        described = body[INDEX]
        out["mappings"] = described.get("mappings")
        out["settings.number_of_shards"] = described.get("settings", {}).get("index", {}).get("number_of_shards")
        out["has uuid"] = bool(described.get("settings", {}).get("index", {}).get("uuid"))
    if name == "info":
        out = {"status": status, "has version.number": bool(body.get("version", {}).get("number"))}
    return out


def call(base, method, path, body, content_type):
    data = None
    if body is not None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = content_type or "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def play(base):
    """The conversation against `base`: [(name, projected answer)]."""
    answers = {}
    played = []

    def seq(name, item=None):
        body = answers[name]
        if item is not None:
            body = next(iter(body["items"][item].values()))
        return body["_seq_no"], body["_primary_term"]

    for name, method, path, body, content_type in conversation(seq):
        status, answer = call(base, method, path, body, content_type)
        answers[name] = answer
        played.append((name, project(name, status, answer)))
    return played


class Server:
    def __init__(self, argv, pattern_url):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + ENGINE_START_TIMEOUT
        while True:
            self.log.seek(0)
            text = self.log.read().decode("utf-8", "replace")
            self.url = pattern_url(text)
            if self.url:
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("%s did not start:\n%s" % (argv[0], text[-3000:]))
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


def emulator_url(text):
    for line in text.splitlines():
        if line.startswith("es-emulator listening on "):
            return line.split()[-1]
    return None


class HeldToTheEngine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.engine = Server([RUN_SH, "--version", engine_version()], announced_url)
        cls.emulator = Server([os.path.join(BIN, "es-emulator"), "--listen", "127.0.0.1:0"], emulator_url)

    @classmethod
    def tearDownClass(cls):
        cls.emulator.stop()
        cls.engine.stop()

    def test_the_emulator_answers_eslease_as_the_engine_does(self):
        engine = play(self.engine.url)
        emulator = play(self.emulator.url)
        differences = []
        for (name, real), (_, emulated) in zip(engine, emulator):
            for key in sorted(set(real) | set(emulated)):
                if real.get(key) == emulated.get(key) or (name, key) in KNOWN_DIFFERENCES:
                    continue
                differences.append("%s: %s is %s on the engine, %s on the emulator" % (
                    name, key, json.dumps(real.get(key)), json.dumps(emulated.get(key))))
        self.assertEqual(differences, [], "\n" + "\n".join(differences))
        # The conversation did what eslease needs on the engine itself.
        by_name = dict(engine)
        self.assertEqual(by_name["acquire taken"]["error.type"], "version_conflict_engine_exception")
        self.assertEqual(by_name["renew stale"]["status"], 409)
        self.assertEqual(by_name["grant set partly taken"]["items.0"]["status"], 409)
        self.assertEqual(by_name["grant set partly taken"]["items.1"]["status"], 201)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    BIN = sys.argv.pop(1)
    unittest.main()
