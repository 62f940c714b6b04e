#!/usr/bin/python3
"""es-emulator against the official Python client (Debian's python3-elasticsearch 7.17).

Usage: python_client_test.py /path/to/es-emulator
Starts the emulator on 127.0.0.1:0, reads the URL it prints, and exercises it through
elasticsearch.Elasticsearch the way an application would. Any mismatch fails the test.
"""
import json
import subprocess
import sys
import time
import unittest
import urllib.request
import warnings

import elasticsearch
from elasticsearch import Elasticsearch, helpers

EMULATOR = None


class PythonClientTest(unittest.TestCase):
    def setUp(self):
        self.proc = subprocess.Popen(
            [EMULATOR, "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = self.proc.stdout.readline().strip()
            prefix = "es-emulator listening on "
            self.assertTrue(line.startswith(prefix), "unexpected first line: %r" % line)
            self.url = line[len(prefix):]
            self.es = Elasticsearch(self.url)
        except BaseException:
            self.stop_emulator()
            raise

    def tearDown(self):
        self.stop_emulator()

    def stop_emulator(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()

    def test_document_lifecycle(self):
        es = self.es
        info = es.info()
        self.assertEqual(info["tagline"], "You Know, for Search")
        self.assertTrue(info["version"]["number"].startswith("8."))

        created = es.indices.create(
            index="locks",
            # No scheduled refresh, so that what search sees changes only with explicit refreshes.
            settings={"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
            mappings={"dynamic": "strict", "properties": {
                "holder": {"type": "keyword"},
                "ttlMillis": {"type": "long"},
                "expiresAt": {"type": "date"}}})
        self.assertTrue(created["acknowledged"])
        self.assertTrue(es.indices.exists(index="locks"))
        with self.assertRaises(elasticsearch.RequestError) as ctx:
            es.indices.create(index="locks")
        self.assertEqual(ctx.exception.error, "resource_already_exists_exception")
        with self.assertRaises(elasticsearch.RequestError) as ctx:
            es.index(index="locks", id="bad", document={"holder": "a", "unknown": 1})
        self.assertEqual(ctx.exception.error, "strict_dynamic_mapping_exception")

        doc_id = "batch/nightly-report"
        first = es.index(index="locks", id=doc_id, document={
            "holder": "pod-a", "ttlMillis": 30000, "expiresAt": "2026-01-01T00:00:00Z"})
        self.assertEqual(first["result"], "created")
        self.assertEqual(first["_id"], doc_id)
        self.assertEqual(first["_seq_no"], 0)
        self.assertEqual(first["_primary_term"], 1)
        self.assertEqual(first["_version"], 1)

        got = es.get(index="locks", id=doc_id)
        self.assertTrue(got["found"])
        self.assertEqual(got["_source"]["holder"], "pod-a")
        self.assertEqual(got["_seq_no"], 0)
        self.assertFalse(es.exists(index="locks", id="batch/other"))
        with self.assertRaises(elasticsearch.NotFoundError):
            es.get(index="locks", id="batch/other")

        with self.assertRaises(elasticsearch.ConflictError) as ctx:
            es.create(index="locks", id=doc_id, document={"holder": "pod-b"})
        self.assertEqual(ctx.exception.status_code, 409)
        self.assertEqual(ctx.exception.error, "version_conflict_engine_exception")

        renewed = es.index(index="locks", id=doc_id, document={"holder": "pod-a", "ttlMillis": 30000},
                           if_seq_no=0, if_primary_term=1)
        self.assertEqual(renewed["result"], "updated")
        self.assertEqual(renewed["_seq_no"], 1)
        with self.assertRaises(elasticsearch.ConflictError) as ctx:
            es.index(index="locks", id=doc_id, document={"holder": "pod-b"}, if_seq_no=0, if_primary_term=1)
        self.assertIn("required seqNo [0], primary term [1]. current document has seqNo [1]",
                      ctx.exception.info["error"]["reason"])

        updated = es.update(index="locks", id=doc_id, doc={"holder": "pod-c"})
        self.assertEqual(updated["result"], "updated")
        self.assertEqual(updated["_seq_no"], 2)
        noop = es.update(index="locks", id=doc_id, doc={"holder": "pod-c"})
        self.assertEqual(noop["result"], "noop")
        self.assertEqual(noop["_seq_no"], 2)

        self.assertEqual(es.search(index="locks", query={"match_all": {}})["hits"]["total"]["value"], 0,
                         "nothing is searchable before a refresh (refresh_interval -1)")
        es.indices.refresh(index="locks")
        found = es.search(index="locks", query={"term": {"holder": "pod-c"}},
                          seq_no_primary_term=True)
        self.assertEqual(found["hits"]["total"], {"value": 1, "relation": "eq"})
        self.assertEqual(found["hits"]["hits"][0]["_id"], doc_id)
        self.assertEqual(found["hits"]["hits"][0]["_seq_no"], 2)
        self.assertEqual(es.count(index="locks")["count"], 1)

        deleted = es.delete(index="locks", id=doc_id, if_seq_no=2, if_primary_term=1)
        self.assertEqual(deleted["result"], "deleted")
        self.assertEqual(deleted["_seq_no"], 3)
        with self.assertRaises(elasticsearch.NotFoundError):
            es.delete(index="locks", id=doc_id)

    def test_bulk(self):
        es = self.es
        es.index(index="locks", id="a", document={"v": 1})
        result = es.bulk(body=[
            {"index": {"_index": "locks", "_id": "a", "if_seq_no": 0, "if_primary_term": 1}}, {"v": 2},
            {"index": {"_index": "locks", "_id": "a", "if_seq_no": 0, "if_primary_term": 1}}, {"v": 3},
            {"create": {"_index": "locks", "_id": "b"}}, {"v": 1},
            {"delete": {"_index": "locks", "_id": "zzz"}},
        ], refresh=True)
        self.assertTrue(result["errors"])
        statuses = [list(item.values())[0]["status"] for item in result["items"]]
        self.assertEqual(statuses, [200, 409, 201, 404])
        self.assertEqual(result["items"][1]["index"]["error"]["type"], "version_conflict_engine_exception")
        self.assertEqual(es.count(index="locks")["count"], 2)
        ok, errors = helpers.bulk(es, [{"_index": "other", "_id": str(i), "n": i} for i in range(50)],
                                  refresh=True)
        self.assertEqual((ok, errors), (50, []))
        ranged = es.search(index="other", query={"range": {"n": {"gte": 40}}}, size=100)
        self.assertEqual(ranged["hits"]["total"]["value"], 10)

    def test_bad_input_answers_like_elasticsearch(self):
        # The cases of Elasticsearch's REST tests bulk/10_basic.yml, count/10_basic.yml,
        # indices.create/10_basic.yml and update/90_error.yml.
        es = self.es
        result = es.bulk(body=[
            {"index": {"_index": "test", "_id": ""}}, {"f": 1},
            {"index": {"_index": "test", "_id": "id"}}, {"f": 2},
            {"index": {"_index": "test"}}, {"f": 3},
            {"create": {"_index": "test"}}, {"f": 4},
            {"index": {"_index": "test", "op_type": "create"}}, {"f": 5},
        ], refresh=True)
        self.assertTrue(result["errors"])
        refused = result["items"][0]["index"]
        self.assertEqual(refused["status"], 400)
        self.assertEqual(refused["error"]["type"], "illegal_argument_exception")
        self.assertEqual(refused["error"]["reason"], "if _id is specified it must not be empty")
        self.assertEqual([list(item)[0] for item in result["items"]], ["index", "index", "index", "create", "create"])
        self.assertEqual([list(item.values())[0].get("result") for item in result["items"][1:]], ["created"] * 4)
        self.assertEqual(es.count(index="test")["count"], 4)

        with self.assertRaises(elasticsearch.RequestError) as ctx:
            es.bulk(body='{"index": {"_index": "test_index", "_id": "test_id"}}\n'
                         '{"f1": "v1", "f2": 42}\n'
                         '{}\n')
        self.assertEqual(ctx.exception.info["error"]["reason"],
                         "Malformed action/metadata line [3], expected FIELD_NAME but found [END_OBJECT]")

        with self.assertRaises(elasticsearch.RequestError) as ctx:
            es.count(index="index1", terminate_after=-1)
        self.assertEqual(ctx.exception.error, "illegal_argument_exception")
        self.assertEqual(ctx.exception.info["error"]["reason"], "terminateAfter must be > 0")

        with self.assertRaises(elasticsearch.RequestError) as ctx:
            es.indices.create(index="test_index", mappings={"properties": {"": {"type": "keyword"}}})
        self.assertEqual(ctx.exception.error, "mapper_parsing_exception")
        self.assertEqual(ctx.exception.info["error"]["caused_by"]["type"], "illegal_argument_exception")
        self.assertFalse(es.indices.exists(index="test_index"))

        # A misspelled field has no keyword argument: it can only go in a raw body.
        with warnings.catch_warnings(), self.assertRaises(elasticsearch.RequestError) as ctx:
            warnings.simplefilter("ignore", DeprecationWarning)
            es.update(index="test", id="1", body={"dac": {"foo": "baz"}, "upsert": {"foo": "bar"}})
        self.assertEqual(ctx.exception.error, "x_content_parse_exception")
        self.assertIn("[UpdateRequest] unknown field [dac] did you mean [doc]?", ctx.exception.info["error"]["reason"])

    def admin(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)

    def test_write_answered_after_the_client_timeout_was_applied(self):
        es = self.es
        self.admin("POST", "/_emulator/faults", {"op": "index", "phase": "after_apply", "latency_ms": 600000})
        with self.assertRaises(elasticsearch.ConnectionTimeout):
            es.index(index="locks", id="a", document={"holder": "pod-a"}, request_timeout=0.5)
        self.assertEqual(es.get(index="locks", id="a")["_source"], {"holder": "pod-a"},
                         "the write whose answer never came was applied")
        deadline = time.monotonic() + 10
        while self.admin("GET", "/_emulator/stats")["es_write_applied_unanswered"] != 1:
            self.assertLess(time.monotonic(), deadline, "the lost answer was not counted")
            time.sleep(0.01)


    def test_writes_become_searchable_within_the_refresh_interval(self):
        es = self.es
        es.indices.create(index="auto")  # refresh_interval: the default 1s
        es.indices.create(index="manual", settings={"refresh_interval": "-1"})
        for index in ("auto", "manual"):
            es.index(index=index, id="a", document={"holder": "pod-a"})
        written = time.monotonic()
        deadline = written + 10  # generous on a loaded machine; Elasticsearch takes at most 1 s
        while es.count(index="auto")["count"] == 0:
            self.assertLess(time.monotonic(), deadline, "a write never became searchable without a refresh")
            time.sleep(0.05)
        print("searchable after %.2f s" % (time.monotonic() - written))
        self.assertEqual(es.search(index="auto", query={"match_all": {}})["hits"]["hits"][0]["_id"], "a")
        time.sleep(1.5)  # longer than the default interval
        self.assertEqual(es.count(index="manual")["count"], 0, "refresh_interval -1: only an explicit refresh")
        es.indices.put_settings(index="manual", body={"index": {"refresh_interval": "1s"}})
        while es.count(index="manual")["count"] == 0:
            self.assertLess(time.monotonic(), deadline + 10, "the new interval was not honoured")
            time.sleep(0.05)
        es.indices.put_settings(index="manual", body={"index": {"refresh_interval": "-1"}})
        es.index(index="manual", id="b", document={"holder": "pod-b"})
        time.sleep(1.5)
        self.assertEqual(es.count(index="manual")["count"], 1)
        es.indices.refresh(index="manual")
        self.assertEqual(es.count(index="manual")["count"], 2)

    def test_help(self):
        result = subprocess.run([EMULATOR, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("usage: es-emulator --listen HOST:PORT", result.stdout)
        unknown = subprocess.run([EMULATOR, "--colour"], capture_output=True, text=True, timeout=30)
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("unknown flag --colour", unknown.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python_client_test.py /path/to/es-emulator")
    EMULATOR = sys.argv.pop(1)
    unittest.main()
