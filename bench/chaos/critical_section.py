"""The work a chaos holder does under its lock, run by `eslease run LOCK -- ... critical_section.py`.

It records in its journal (JSON lines, appended with one write each so a killed process
leaves whole lines) when its critical section starts, that it is alive (every
HEARTBEAT_SECONDS, from a thread that keeps beating while the main thread waits on a write),
and when it stops. While in it, it writes one document per lock to the protected index (for
a lock set, the documents of its locks in turn) with its fencing token as an external
version (`version_type=external_gte`), the recipe of docs/concepts.md, and records each
write's outcome: accepted (with the `_seq_no` it got), refused (409: a larger token was
stored), failed (an error answer, not applied) or unknown (no answer: it may have been
applied).

It finishes by itself after `work_seconds` (the tool then releases the lock), or stops on
SIGTERM (the tool stopping it). Times are the machine's clock: the command runs without the
holder's skewed clock, so every journal reads one clock.

usage: critical_section.py JOURNAL ES_URL INDEX HOLDER WORK_SECONDS
Environment (from eslease run): ESLEASE_FENCING_TOKEN, ESLEASE_LOCK (comma-separated for a
lock set), ESLEASE_LEASE (Kubernetes mode).
"""

import json
import os
import random
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HEARTBEAT_SECONDS = 0.1
WRITE_TIMEOUT_SECONDS = 1.0


class Journal:
    """One line per os.write on an O_APPEND file: lines from the heartbeat thread, the main
    thread and the signal handler never interleave, and no lock is taken (a handler that
    waited on a lock its own thread holds would never return)."""

    def __init__(self, path, **fields):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.fields = fields

    def record(self, event, **fields):
        line = dict(self.fields, event=event, t=time.time(), **fields)
        os.write(self.fd, (json.dumps(line) + "\n").encode())


def fenced_write(es_url, index, lock, token, body):
    """One write of the lock's document carrying the token as its external version:
    ("accepted", answer) | ("refused", answer) | ("failed", status) | ("unknown", reason)."""
    url = "%s/%s/_doc/%s?version=%d&version_type=external_gte" % (
        es_url, index, urllib.parse.quote(lock, safe=""), token)
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="PUT",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=WRITE_TIMEOUT_SECONDS) as response:
            return "accepted", json.loads(response.read())
    except urllib.error.HTTPError as e:
        if e.code == 409:
            return "refused", json.loads(e.read() or b"{}")
        if e.code in (502, 504):
            return "unknown", "HTTP %d" % e.code  # a gateway gave up: the write may have happened
        return "failed", e.code
    except (OSError, ValueError) as e:  # timeout, dropped connection: the outcome is unknown
        return "unknown", type(e).__name__


def main():
    journal_path, es_url, index, holder, work_seconds = sys.argv[1:6]
    token = int(os.environ["ESLEASE_FENCING_TOKEN"])
    lock = os.environ["ESLEASE_LOCK"]
    journal = Journal(journal_path, holder=holder, lock=lock, lease=os.environ.get("ESLEASE_LEASE"),
                      token=token, pid=os.getpid())

    def stop(signum, frame):
        journal.record("stop", reason="terminated")
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    journal.record("start")

    def beat():
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            journal.record("alive")

    threading.Thread(target=beat, daemon=True).start()

    finish_at = time.monotonic() + float(work_seconds)
    written = 0
    documents = lock.split(",")
    while time.monotonic() < finish_at:
        doc = documents[written % len(documents)]
        journal.record("sending", n=written)
        outcome, detail = fenced_write(es_url, index, doc, token,
                                       {"lock": doc, "holder": holder, "token": token, "n": written})
        fields = {"n": written, "outcome": outcome}
        if len(documents) > 1:
            fields["doc"] = doc
        if outcome == "accepted":
            fields.update(seq_no=detail["_seq_no"], version=detail["_version"])
        elif outcome == "refused":
            fields["reason"] = (detail.get("error") or {}).get("reason")
        else:
            fields["detail"] = detail
        journal.record("write", **fields)
        written += 1
        time.sleep(random.uniform(0.05, 0.25))
    journal.record("stop", reason="done")


if __name__ == "__main__":
    main()
