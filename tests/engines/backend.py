"""The Elasticsearch the end-to-end tests and the benchmarks talk to, chosen by one setting:

    ESLEASE_TEST_BACKEND=emulator     the es-emulator (the default)
    ESLEASE_TEST_BACKEND=opensearch   a real OpenSearch node (tests/engines/opensearch/run.sh;
                                      ESLEASE_TEST_OPENSEARCH_VERSION=2|3, default 2)

A real engine is put behind the fault proxy (es-emulator --upstream), so the fault rules and
request counters a test drives through /_emulator/faults and /_emulator/stats work the same on
both backends; a benchmark that wants the engine's own timing asks for it without the proxy.
"""

import os
import re

BACKENDS = ("emulator", "opensearch")
RUN_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opensearch", "run.sh")
# A first start may build the engine (scripts/install-deps.sh does that ahead of time).
ENGINE_START_TIMEOUT = 600


def backend_name(override=None):
    """The backend asked for: `override` when given, else ESLEASE_TEST_BACKEND."""
    name = override or os.environ.get("ESLEASE_TEST_BACKEND") or "emulator"
    if name not in BACKENDS:
        raise SystemExit("ESLEASE_TEST_BACKEND is %r; it takes %s" % (name, " or ".join(BACKENDS)))
    return name


def engine_version():
    version = os.environ.get("ESLEASE_TEST_OPENSEARCH_VERSION", "2")
    if version not in ("2", "3"):
        raise SystemExit("ESLEASE_TEST_OPENSEARCH_VERSION is %r; it takes 2 or 3" % version)
    return version


class Elasticsearch:
    """What start() started: `url` is what eslease is pointed at, `engine_url` the real engine
    itself (None on the emulator), `backend` and `version` what answers."""

    def __init__(self, backend, url, engine_url=None, version=None):
        self.backend = backend
        self.url = url
        self.engine_url = engine_url
        self.version = version

    def describe(self):
        if self.backend == "emulator":
            return "es-emulator"
        return "OpenSearch %s%s" % (self.version, " behind the fault proxy" if self.url != self.engine_url else "")


def start(spawn, bin_dir, backend=None, fault_proxy=True):
    """Starts the backend through `spawn(name, argv)` (which returns a process with
    `announced(regex, timeout)` and is stopped by its owner) and returns an Elasticsearch."""
    name = backend_name(backend)
    emulator = os.path.join(bin_dir, "es-emulator")
    if name == "emulator":
        es = spawn("es-emulator", [emulator, "--listen", "127.0.0.1:0"])
        return Elasticsearch(name, es.announced(r"listening on (\S+)").group(1))
    engine = spawn("opensearch", [RUN_SH, "--version", engine_version(), "--listen", "127.0.0.1:0"])
    engine_url = engine.announced(r"opensearch listening on (\S+)", timeout=ENGINE_START_TIMEOUT).group(1)
    version = engine.announced(r"opensearch (\d+\.\d+\.\d+)").group(1)
    if not fault_proxy:
        return Elasticsearch(name, engine_url, engine_url, version)
    proxy = spawn("es-fault-proxy", [emulator, "--listen", "127.0.0.1:0", "--upstream", engine_url])
    return Elasticsearch(name, proxy.announced(r"listening on (\S+)").group(1), engine_url, version)


def announced_url(text):
    """The URL in an `opensearch listening on URL` line of `text`, or None."""
    match = re.search(r"opensearch listening on (\S+)", text)
    return match.group(1) if match else None
