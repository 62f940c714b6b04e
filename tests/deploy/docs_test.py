"""Keeps docs/ honest: every flag `eslease-controller --help` lists and every metric family
its /metrics exports (after a scenario that makes each family appear) is documented in
docs/reference.md, and nothing documented there is missing from the controller. The
numbers the guide states for defaults match the CRD, both programs' --help and the chart's
values (doc_numbers.py). The alerts documented in docs/alerts.md are exactly the chart's.

usage: docs_test.py BIN_DIR SOURCE_DIR WORK_DIR"""

import os
import re
import subprocess
import sys
import shutil
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_numbers  # noqa: E402
import scenario  # noqa: E402
from scenario import Environment  # noqa: E402


def help_flags(bin_dir):
    text = subprocess.run([os.path.join(bin_dir, "eslease-controller"), "--help"], capture_output=True, text=True,
                          timeout=30).stdout
    # Flags are the first word of an indented line of the usage text.
    return set(re.findall(r"^\s{2}(--[a-z][a-z0-9-]*)", text, re.M))


def exported_families(text):
    return set(re.findall(r"^# TYPE ((?:eslease|process)_[a-z_]+) ", text, re.M))


def documented(path, pattern):
    with open(path) as f:
        return set(re.findall(pattern, f.read(), re.M))


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    bin_dir, source = sys.argv[1], sys.argv[2]
    docs = os.path.join(source, "docs")
    problems = []

    flags = help_flags(bin_dir)
    if len(flags) < 20:
        problems.append("--help lists only %s" % sorted(flags))
    # A documented flag is a table row starting with it: | `--flag ...` |
    doc_flags = documented(os.path.join(docs, "reference.md"), r"^\| `(--[a-z][a-z0-9-]*)")
    problems += ["flag %s is in --help but not documented in docs/reference.md" % f for f in sorted(flags - doc_flags)]
    problems += ["docs/reference.md documents %s, which --help does not list" % f for f in sorted(doc_flags - flags)]

    # Numbers the guide states for defaults, against the CRD, --help and the chart's values.
    problems += doc_numbers.problems(bin_dir, source)

    with Environment(bin_dir, source) as env:
        replicas = scenario.start_controllers(env)
        scenario.run(env, bin_dir, log=lambda m: print("scenario:", m))
        exported = set()
        for c in replicas:
            exported |= exported_families(env.metrics(c))
    missing_from_run = set(scenario.EXPECTED_FAMILIES) - exported
    problems += ["the scenario did not make the controller export %s" % m for m in sorted(missing_from_run)]
    # A documented metric is a table row naming it (one row may name two: `a`, `b`).
    doc_metrics = documented(os.path.join(docs, "reference.md"), r"^\| `((?:eslease|process)_[a-z_]+)")
    doc_metrics |= documented(os.path.join(docs, "reference.md"), r"^\| `(?:eslease|process)_[a-z_]+`, `((?:eslease|process)_[a-z_]+)")
    problems += ["metric %s is exported but not documented in docs/reference.md" % m for m in sorted(exported - doc_metrics)]
    problems += ["docs/reference.md documents %s, which the controller does not export" % m
                 for m in sorted(doc_metrics - exported)]

    # Alerts: the chart's PrometheusRule against docs/alerts.md's headings.
    import chart
    os.makedirs(sys.argv[3], exist_ok=True)
    work = tempfile.mkdtemp(prefix="docs-test-", dir=sys.argv[3])
    chart.configure(sys.argv[1], work)
    try:
        _, _, out = chart.render(work, [os.path.join(HERE, "values", "all-on.yaml")])
        rule = chart.find(chart.manifests(out), "PrometheusRule")[0]
    except chart.HelmMissing as e:
        # Flags and metrics were checked; the alerts could not be: never a pass.
        for p in problems:
            print("FAIL:", p)
        print("SKIPPED: the alerts were not checked: %s" % e)
        return 1 if problems else chart.SKIPPED
    finally:
        shutil.rmtree(work, ignore_errors=True)
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    doc_alerts = documented(os.path.join(docs, "alerts.md"), r"^## (Eslease[A-Za-z]+)")
    problems += ["alert %s is not documented in docs/alerts.md" % a for a in sorted(alerts - doc_alerts)]
    problems += ["docs/alerts.md documents alert %s, which the chart does not have" % a
                 for a in sorted(doc_alerts - alerts)]

    print("%d flags, %d metric families, %d alerts checked" % (len(flags), len(exported), len(alerts)))
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
