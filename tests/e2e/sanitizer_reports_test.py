"""The check that fails a test whose child processes made a sanitizer report, tried on a
planted report: a child process writes one where the sanitizer runtime would, the file named
by the log_path option it inherited."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sanitizer_reports import OPTION_VARIABLES, ReportDirectory, with_option  # noqa: E402

# What a sanitizer runtime does with log_path: appends ".<pid>" and writes the report there.
PLANT = """
import os
options = os.environ["ASAN_OPTIONS"]
path = [o.split("=", 1)[1] for o in options.split(":") if o.startswith("log_path=")][0]
with open("%s.%d" % (path, os.getpid()), "w") as f:
    f.write("==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010\\n")
"""


class ReportDirectoryTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.reports = ReportDirectory(self.dir.name)
        self.environ = self.reports.route({"ASAN_OPTIONS": "detect_leaks=1", "PATH": os.environ["PATH"]})

    def tearDown(self):
        self.dir.cleanup()

    def run_child(self, code):
        subprocess.run([sys.executable, "-c", code], env=self.environ, check=True, timeout=60)

    def test_a_report_from_a_child_process_fails_the_check_once(self):
        self.run_child(PLANT)
        with self.assertRaises(AssertionError) as caught:
            self.reports.check()
        self.assertIn("ERROR: AddressSanitizer: heap-use-after-free", str(caught.exception))
        self.reports.check()  # reported once; a later test is not blamed for it

    def test_children_that_report_nothing_pass(self):
        self.run_child("pass")
        self.reports.check()

    def test_every_sanitizer_is_routed_and_other_options_are_kept(self):
        for variable in OPTION_VARIABLES:
            self.assertIn("log_path=" + os.path.join(self.dir.name, "report"), self.environ[variable])
        self.assertTrue(self.environ["ASAN_OPTIONS"].startswith("detect_leaks=1:"))
        self.assertEqual(with_option("log_path=/a:halt_on_error=1", "log_path=/b"), "halt_on_error=1:log_path=/b")


if __name__ == "__main__":
    unittest.main()
