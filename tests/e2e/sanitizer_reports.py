"""Sanitizer reports of every process a test starts. In a sanitizer build (ESLEASE_SANITIZE)
the emulators, the controller and the tool run as child processes of the test script (and
a command the tool runs as theirs), so a report they make would otherwise end in a log file
nobody reads. The script routes the reports of every process it starts, through the
sanitizers' log_path option in the environment they inherit, into one directory, and fails
when anything arrives there: at each Environment's stop (the test that ran the processes)
and when the script ends. Outside a sanitizer build the options are ignored."""

import atexit
import os
import shutil
import sys
import tempfile

OPTION_VARIABLES = ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS")
MARKERS = ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def with_option(options, option):
    """A sanitizer options string with `option` ("name=value") set, replacing its old value."""
    name = option.split("=", 1)[0] + "="
    kept = [o for o in options.split(":") if o and not o.startswith(name)]
    return ":".join(kept + [option])


class ReportDirectory:
    """A directory the sanitizers of child processes write their reports into (one file per
    reporting process, named report.<pid>)."""

    def __init__(self, path=None):
        self.path = path or tempfile.mkdtemp(prefix="eslease-sanitizer-")
        self._seen = set()

    def route(self, environ):
        """Sends the reports of processes started with `environ` (a dict, e.g. os.environ) here."""
        for variable in OPTION_VARIABLES:
            environ[variable] = with_option(environ.get(variable, ""), "log_path=" + os.path.join(self.path, "report"))
        return environ

    def new_reports(self):
        """(file name, text) of each report that arrived since the last call."""
        found = []
        for name in sorted(os.listdir(self.path)):
            if name in self._seen:
                continue
            with open(os.path.join(self.path, name), "rb") as f:
                text = f.read().decode("utf-8", "replace")
            if text.strip():
                self._seen.add(name)
                found.append((name, text))
        return found

    def check(self):
        """Fails with the text of every report that arrived since the last check."""
        reports = self.new_reports()
        if reports:
            raise AssertionError("sanitizer report from a child process:\n" +
                                 "\n".join("--- %s ---\n%s" % (name, text[:6000]) for name, text in reports))

    def finish(self):
        """At the script's end: a report nobody checked yet fails the script."""
        try:
            self.check()
        except AssertionError as e:
            sys.stderr.write("%s\n" % e)
            sys.stderr.flush()
            os._exit(1)
        shutil.rmtree(self.path, ignore_errors=True)


_installed = None


def install():
    """Routes the reports of every process this script starts from now on (once per script)
    and checks them at its end; returns the ReportDirectory."""
    global _installed
    if _installed is None:
        _installed = ReportDirectory()
        _installed.route(os.environ)
        atexit.register(_installed.finish)
    return _installed
